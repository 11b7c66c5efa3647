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

mod common;

use common::{median, show};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost::{
    AllowAll, ApprovalConfig, Approvals, CancellationToken, Chain, ChainEvent, Executor, LlmProfile, OpenAiClient, Pipeline,
    Policy, ProtocolId, Registry, Stop, ToolCallConfig, Transcript,
};
use toolhost_standin::{Response, StandIn};

const ITERATIONS: usize = 10;
const TURNS: usize = 40;

/// The model's script: `ITERATIONS` replies with a call each (different
/// arguments, so no repeat stops the loop), then an answer.
fn script() -> Vec<Response> {
    let call = |n: usize| {
        format!(
            "Next step.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」calculate「末」,\nexpression:「始」{n} * 7「末」\n<<<[END_TOOL_REQUEST]>>>"
        )
    };
    (0..ITERATIONS).map(|n| Response::text(call(n))).chain([Response::text("All done.")]).collect()
}

fn main() -> anyhow::Result<()> {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/plugins/examples");
    anyhow::ensure!(examples.exists(), "{} is missing; run `cargo xtask bench`", examples.display());
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let dir = tempfile::tempdir()?;
    let policy = Policy {
        plugin_dirs: vec![examples],
        cache_dir: Some(dir.path().join("cache")),
        lock_file: dir.path().join("none.lock"),
        ..Policy::default()
    };
    let registry = Arc::new(runtime.block_on(Registry::load(policy))?);
    let config = ToolCallConfig { enabled: true, protocol: ProtocolId::Vcp, max_iterations: 100, ..ToolCallConfig::default() };

    let (mut looped, mut bare) = (Vec::with_capacity(TURNS), Vec::with_capacity(TURNS));
    for turn in 0..TURNS {
        runtime.block_on(async {
            // The loop: one user message to the final answer.
            let model = StandIn::start(script()).await?;
            let approvals = ApprovalConfig { memory_file: dir.path().join("approvals.json"), ..Default::default() };
            let pipeline = Pipeline::new(Executor::new(registry.clone()), Arc::new(Approvals::new(&approvals)), Arc::new(AllowAll));
            let llm = Arc::new(OpenAiClient::new(LlmProfile::new(model.base_url(), "bench"))?);
            let chain = Chain::new(llm, pipeline, "bench", config.clone())?;
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
            anyhow::Ok(())
        })?;
    }
    let (looped, bare) = (median(looped), median(bare));
    let rounds = ITERATIONS as u32 + 1;
    let own = looped.saturating_sub(bare) / ITERATIONS as u32;
    let round_trip = bare / rounds;
    let share = own.as_secs_f64() / round_trip.as_secs_f64();
    println!("toolhost conversation-loop benchmark (medians of {TURNS} turns of {ITERATIONS} rounds and an answer)");
    println!("(h) a turn through the loop               {:>12}", show(looped));
    println!("    the same {rounds} exchanges, bare HTTP     {:>12}", show(bare));
    println!("    bare HTTP round trip                  {:>12}", show(round_trip));
    println!("    the loop's own cost per round         {:>12}", show(own));
    let check = if share <= 0.10 { "meets target" } else { "MISSES target" };
    println!("(h) loop/round trip {:>9.1}%  target <= 10%: {check}", share * 100.0);
    Ok(())
}
