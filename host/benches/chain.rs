//! The conversation loop's own cost (`cargo xtask bench`): a turn of
//! `ITERATIONS` rounds, each a reply with one `calculate` call, then an
//! answer, against the stand-in model answering at once — parse, pipeline
//! (check, approve, a fresh sandboxed call), result formatting and a
//! transcript appended to a file per entry — against the bare HTTP round
//! trips of the same exchanges: the very request bodies the loop sent,
//! posted again with a plain HTTP client to a stand-in replaying the same
//! script, each stream read to its end.
//!
//! Both sides stream from a real local HTTP server; the difference per
//! round is what the loop adds. Each figure is a median over `TURNS` turns,
//! the two measured alternately in one run.
//!
//! Then a long chat: `LONG_ROUNDS` rounds in one turn, replies from
//! memory, the transcript in a file. A round's cost must not grow with the
//! conversation before it: the late rounds' median against the early
//! ones'.

mod common;
mod summary;

use common::{median, show};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
use summary::summarize;
use toolhost::{
    AllowAll, Approvals, CancellationToken, Chain, ChainEvent, Executor, LlmClient, Message, OpenAiClient, Pipeline, Policy,
    PromptCache, ProtocolId, Registry, Stop, ToolCallConfig, Transcript,
    approval::ApprovalConfig,
    llm::{ChatRequest, LlmError, LlmProfile, Reply, StreamEvent},
};
use toolhost_standin::{Response, StandIn};

// Host memory is counted, as in the toolhost command.
toolhost::count_host_memory!();

const ITERATIONS: usize = 10;
const TURNS: usize = 40;
/// Rounds of the long chat, and how many long chats are timed.
const LONG_ROUNDS: usize = 200;
const LONG_CHATS: usize = 5;
/// Rounds at each end of the long chat whose medians are compared.
const LONG_WINDOW: usize = 20;

/// The model's replies: `rounds` with a call each (different arguments,
/// so no repeat stops the loop), then an answer.
fn replies(rounds: usize) -> Vec<String> {
    let call = |n: usize| {
        format!(
            "Next step.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」calculate「末」,\nexpression:「始」{n} * 7「末」\n<<<[END_TOOL_REQUEST]>>>"
        )
    };
    (0..rounds).map(call).chain(["All done.".to_owned()]).collect()
}

fn script() -> Vec<Response> {
    replies(ITERATIONS).into_iter().map(Response::text).collect()
}

/// Approvals remembered in `dir`, with no rules.
fn remembering_in(dir: &std::path::Path) -> Arc<Approvals> {
    let mut config = ApprovalConfig::default();
    config.memory_file = dir.join("approvals.json");
    Arc::new(Approvals::new(&config))
}

/// The same replies from memory, at once: the loop with no network at all.
struct InProcess {
    replies: Vec<String>,
    next: AtomicUsize,
}

#[async_trait::async_trait]
impl LlmClient for InProcess {
    async fn complete(
        &self,
        _request: &ChatRequest,
        on_delta: &mut (dyn FnMut(StreamEvent) + Send),
        _cancel: &CancellationToken,
    ) -> Result<Reply, LlmError> {
        let content = self.replies[self.next.fetch_add(1, Ordering::Relaxed)].clone();
        on_delta(StreamEvent::Text(content.clone()));
        Ok(Reply { content, finish_reason: Some("stop".into()), ..Reply::default() })
    }
}

fn main() -> anyhow::Result<()> {
    // The bare client below is reqwest's own, which takes the process's
    // TLS provider (the library's clients bring theirs).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/plugins/examples");
    anyhow::ensure!(examples.exists(), "{} is missing; run `cargo xtask bench`", examples.display());
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let dir = tempfile::tempdir()?;
    let mut policy = Policy::default();
    policy.plugin_dirs = vec![examples];
    policy.cache_dir = Some(dir.path().join("cache"));
    policy.lock_file = dir.path().join("none.lock");
    let registry = Arc::new(runtime.block_on(Registry::load(policy))?);
    let mut config = ToolCallConfig::on();
    config.protocol = ProtocolId::Vcp;
    config.max_iterations = 100;

    let prompts = Arc::new(PromptCache::new());
    let [mut looped, mut bare, mut client, mut alone] = [(); 4].map(|()| Vec::with_capacity(TURNS));
    for turn in 0..TURNS {
        runtime.block_on(async {
            // The loop: one user message to the final answer.
            let model = StandIn::start(script()).await?;
            let pipeline = Pipeline::new(Executor::new(registry.clone()), remembering_in(dir.path()), Arc::new(AllowAll));
            let llm = Arc::new(OpenAiClient::new(LlmProfile::new(model.base_url(), "bench"))?);
            // A host keeps one prompt cache: the prompt is rendered (and
            // its tokens counted) once, not once per turn.
            let chain = Chain::new(llm, pipeline, "bench", config.clone())?.with_prompt_cache(prompts.clone());
            let mut transcript = Transcript::create(&dir.path().join(format!("turn-{turn}.jsonl")))?;

            let events = |event: ChainEvent| {
                std::hint::black_box(event);
            };
            let start = Instant::now();
            let stop = chain.send(&mut transcript, "Go", &events, &CancellationToken::new()).await?;
            looped.push(start.elapsed());
            anyhow::ensure!(stop == Stop::Answered, "the turn ended with {stop:?}");
            let bodies: Vec<Value> = model.requests().into_iter().map(|r| r.body).collect();
            anyhow::ensure!(bodies.len() == ITERATIONS + 1, "{} requests", bodies.len());

            // The same exchanges, bare.
            let replay = StandIn::start(script()).await?;
            let url = format!("{}/chat/completions", replay.base_url());
            let http = reqwest::Client::new();
            let start = Instant::now();
            for body in &bodies {
                let response = http.post(&url).json(body).send().await?.error_for_status()?;
                std::hint::black_box(response.bytes().await?);
            }
            bare.push(start.elapsed());

            // The same exchanges through the streaming client alone.
            let replay = StandIn::start(script()).await?;
            let llm = OpenAiClient::new(LlmProfile::new(replay.base_url(), "bench"))?;
            let conversations: Vec<Vec<Message>> =
                bodies.iter().map(|body| serde_json::from_value(body["messages"].clone()).expect("messages")).collect();
            let requests: Vec<ChatRequest> = conversations.iter().map(|messages| ChatRequest { messages, tools: None }).collect();
            let start = Instant::now();
            for request in &requests {
                std::hint::black_box(llm.complete(request, &mut |_| {}, &CancellationToken::new()).await?);
            }
            client.push(start.elapsed());

            // The loop alone: the replies from memory.
            let pipeline = Pipeline::new(Executor::new(registry.clone()), remembering_in(dir.path()), Arc::new(AllowAll));
            let llm = Arc::new(InProcess { replies: replies(ITERATIONS), next: AtomicUsize::new(0) });
            let chain = Chain::new(llm, pipeline, "bench", config.clone())?.with_prompt_cache(prompts.clone());
            let mut transcript = Transcript::create(&dir.path().join(format!("alone-{turn}.jsonl")))?;
            let start = Instant::now();
            let stop = chain.send(&mut transcript, "Go", &events, &CancellationToken::new()).await?;
            alone.push(start.elapsed());
            anyhow::ensure!(stop == Stop::Answered, "the turn ended with {stop:?}");
            anyhow::Ok(())
        })?;
    }
    let [looped, bare, client, alone] = [looped, bare, client, alone].map(median);
    let rounds = ITERATIONS as u32 + 1;
    let round_trip = bare / rounds;
    let own = alone / rounds;
    let share = own.as_secs_f64() / round_trip.as_secs_f64();
    println!("toolhost conversation-loop benchmark (medians of {TURNS} turns of {ITERATIONS} rounds and an answer)");
    println!("(h) a turn through the loop               {:>12}", show(looped));
    println!("    the same {rounds} exchanges, bare HTTP     {:>12}", show(bare));
    println!("    the same {rounds} through the streaming client {:>10}", show(client));
    println!("    bare HTTP round trip                  {:>12}", show(round_trip));
    println!("    the turn with replies from memory     {:>12}", show(alone));
    println!("    over HTTP, the loop's cost per round  {:>12}", show(looped.saturating_sub(client) / rounds));
    println!("    from memory, the loop's cost per round {:>11}", show(own));
    let check = if share <= 0.10 { "meets target" } else { "MISSES target" };
    println!("(h) loop/round trip {:>9.1}%  target <= 10%: {check}", share * 100.0);

    let mut long_config = config.clone();
    long_config.max_iterations = LONG_ROUNDS as u32 + 1;
    let (mut early, mut late, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for chat in 0..LONG_CHATS {
        let rounds = runtime.block_on(async {
            let pipeline = Pipeline::new(Executor::new(registry.clone()), remembering_in(dir.path()), Arc::new(AllowAll));
            let llm = Arc::new(InProcess { replies: replies(LONG_ROUNDS), next: AtomicUsize::new(0) });
            let chain = Chain::new(llm, pipeline, "bench", long_config.clone())?.with_prompt_cache(prompts.clone());
            let mut transcript = Transcript::create(&dir.path().join(format!("long-{chat}.jsonl")))?;
            let asked = std::sync::Mutex::new(Vec::with_capacity(LONG_ROUNDS + 1));
            let events = |event: ChainEvent| {
                if matches!(event, ChainEvent::Requesting { .. }) {
                    asked.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(Instant::now());
                }
            };
            let stop = chain.send(&mut transcript, "Go", &events, &CancellationToken::new()).await?;
            anyhow::ensure!(stop == Stop::Answered, "the long chat ended with {stop:?}");
            let asked = asked.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
            anyhow::ensure!(asked.len() == LONG_ROUNDS + 1, "{} requests", asked.len());
            anyhow::Ok(asked.windows(2).map(|pair| pair[1] - pair[0]).collect::<Vec<_>>())
        })?;
        // The first round of a chat pays for the first call into the plugin.
        let first = median(rounds[1..=LONG_WINDOW].to_vec());
        let last = median(rounds[rounds.len() - LONG_WINDOW..].to_vec());
        ratios.push(last.as_secs_f64() / first.as_secs_f64());
        early.push(first);
        late.push(last);
    }
    let (early, late) = (median(early), median(late));
    ratios.sort_by(f64::total_cmp);
    let growth = ratios[ratios.len() / 2];
    println!("toolhost long-chat benchmark (medians of {LONG_CHATS} chats of {LONG_ROUNDS} rounds, replies from memory)");
    println!("    a round among rounds 2-{}            {:>12}", LONG_WINDOW + 1, show(early));
    println!("    a round among the last {LONG_WINDOW}             {:>12}", show(late));
    let check = if growth <= 1.25 { "meets target" } else { "MISSES target" };
    println!("(h) last rounds/early rounds {growth:>6.2}x  target <= 1.25x (flat): {check}");
    summarize("chat_late_round_over_early", growth);
    Ok(())
}
