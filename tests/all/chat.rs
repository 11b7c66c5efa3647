//! The conversation loop against a scripted stand-in model (a real HTTP
//! server speaking the OpenAI SSE protocol) and real plugins: every
//! protocol end to end, approval through the loop, the loop's limits,
//! cancelling, the model failing, transcripts, manual mode.

use crate::built::{CALC, CLOCK, FILES, HOSTILE};
use crate::support::{Plugin, TestHost};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost::{
    AllowAll, Approvals, Approver, CallDecision, CancellationToken, Chain, ChainEvent, DenyAll, OpenAiClient, PendingCall,
    Pipeline, ProtocolId, ResultDecision, Status, Stop, ToolCallConfig, ToolOutcome, ToolSpec, Transcript,
    agent::CallMode,
    chain::ManualDecision,
    llm::LlmProfile,
    transcript::{CallStatus, Entry},
};
use toolhost_standin::{CallStyle, Reply, Response, StandIn};

/// A conversation under test: the host, the stand-in model, the chain and
/// what it reported.
struct Chat {
    host: TestHost,
    model: StandIn,
    chain: Chain,
    events: Arc<Mutex<Vec<ChainEvent>>>,
}

fn agent(protocol: ProtocolId) -> ToolCallConfig {
    let mut config = ToolCallConfig::on();
    config.protocol = protocol;
    config
}

/// Quick retries, so the fault tests do not wait long.
fn profile(model: &StandIn) -> LlmProfile {
    let mut profile = LlmProfile::new(model.base_url(), "scripted");
    profile.retry.retries = 2;
    profile.retry.base = Duration::from_millis(20);
    profile.retry.cap = Duration::from_millis(50);
    profile.idle_timeout = Duration::from_secs(2);
    profile
}

impl Chat {
    async fn new(
        plugins: &[Plugin],
        policy: &str,
        config: ToolCallConfig,
        approver: Arc<dyn Approver>,
        script: impl IntoIterator<Item = Response>,
    ) -> Chat {
        Chat::tuned(plugins, policy, config, approver, script, |_| {}).await
    }

    /// As `new`, with the model's profile changed by `tune`.
    async fn tuned(
        plugins: &[Plugin],
        policy: &str,
        config: ToolCallConfig,
        approver: Arc<dyn Approver>,
        script: impl IntoIterator<Item = Response>,
        tune: impl FnOnce(&mut LlmProfile),
    ) -> Chat {
        let host = TestHost::new(plugins, policy).await;
        let model = StandIn::start(script).await.unwrap();
        let approvals = Arc::new(Approvals::new(&host.config.approval));
        let pipeline = Pipeline::new(host.executor.clone(), approvals, approver);
        let mut profile = profile(&model);
        tune(&mut profile);
        let llm = Arc::new(OpenAiClient::new(profile).unwrap());
        let chain = Chain::new(llm, pipeline, "tester", config).unwrap();
        Chat { host, model, chain, events: Arc::default() }
    }

    /// Send `message` in `transcript` and wait for the loop to stop.
    async fn send_in(&self, transcript: &mut Transcript, message: &str, cancel: &CancellationToken) -> Stop {
        let events = self.events.clone();
        let sink = move |event: ChainEvent| events.lock().unwrap().push(event);
        self.chain.send(transcript, message, &sink, cancel).await.unwrap()
    }

    /// Send `message` in a fresh in-memory transcript.
    async fn send(&self, message: &str) -> (Stop, Transcript) {
        let mut transcript = Transcript::in_memory();
        let stop = self.send_in(&mut transcript, message, &CancellationToken::new()).await;
        (stop, transcript)
    }

    fn events(&self) -> Vec<ChainEvent> {
        self.events.lock().unwrap().clone()
    }
}

/// The tool entries of `transcript`: (tool, status, output).
fn results(transcript: &Transcript) -> Vec<(String, Status, String)> {
    transcript
        .entries()
        .iter()
        .filter_map(|e| match e {
            Entry::Tool { tool, status, output, .. } => Some((tool.clone(), *status, output.clone())),
            _ => None,
        })
        .collect()
}

/// Every call some reply asked for is answered by a tool entry after it.
fn assert_no_dangling_request(transcript: &Transcript) {
    assert!(transcript.unanswered().is_empty(), "unanswered: {:?}", transcript.unanswered());
    for (index, entry) in transcript.entries().iter().enumerate() {
        if let Entry::Assistant { calls, .. } = entry {
            for call in calls {
                let answered =
                    transcript.entries()[index..].iter().any(|e| matches!(e, Entry::Tool { call_id, .. } if *call_id == call.id));
                assert!(answered, "call {} ({}) is never answered", call.id, call.tool);
                assert_ne!(call.status, CallStatus::Pending, "call {} keeps status pending", call.id);
            }
        }
    }
}

fn last_note(transcript: &Transcript) -> String {
    match transcript.entries().last() {
        Some(Entry::Note { content }) => content.clone(),
        other => panic!("the transcript should end with a note, not {other:?}"),
    }
}

fn vcp_call(tool: &str, args: &[(&str, &str)]) -> String {
    let mut block = format!("<<<[TOOL_REQUEST]>>>\ntool_name:「始」{tool}「末」");
    for (key, value) in args {
        block.push_str(&format!(",\n{key}:「始」{value}「末」"));
    }
    block + "\n<<<[END_TOOL_REQUEST]>>>"
}

/// The model's first reply in each text protocol: a call to `calculate`.
fn calculate_in(protocol: ProtocolId) -> String {
    let args = json!({ "expression": "6 * 7" });
    match protocol {
        ProtocolId::Vcp => format!("Let me compute that.\n{}", vcp_call("calculate", &[("expression", "6 * 7")])),
        ProtocolId::JsonBlock => format!(
            "Let me compute that.\n```json\n{}\n```",
            json!({ "action": "tool_call", "name": "calculate", "arguments": args })
        ),
        ProtocolId::XmlTag => {
            format!("Let me compute that.\n<tool_code>{}</tool_code>", json!({ "name": "calculate", "arguments": args }))
        }
        other => panic!("{other:?} is not a text protocol here"),
    }
}

#[tokio::test]
async fn each_text_protocol_runs_a_call_and_the_model_answers_from_its_result() {
    for protocol in [ProtocolId::Vcp, ProtocolId::JsonBlock, ProtocolId::XmlTag] {
        let script = [
            Response::Reply(Reply::text(calculate_in(protocol)).reasoning("The user wants 6 * 7; `calculate` can do it.")),
            Response::text("6 × 7 = {{last_message:\"value\\\\\\\\?\"?:\\s*([0-9]+)}}."),
        ];
        let chat = Chat::new(&[CALC], "", agent(protocol), Arc::new(DenyAll), script).await;
        let (stop, transcript) = chat.send("What is 6 × 7?").await;
        assert_eq!(stop, Stop::Answered, "{protocol:?}");

        let requests = chat.model.requests();
        assert_eq!(requests.len(), 2, "{protocol:?}: one request per reply");
        let system = requests[0].messages()[0]["content"].as_str().unwrap();
        assert!(system.contains("calculate"), "{protocol:?}: the tools are in the system prompt:\n{system}");
        assert!(requests[0].body.get("tools").is_none(), "{protocol:?}: no native schema for a text protocol");
        assert_eq!(requests[0].body["stream"], json!(true));
        // The second request carries the reply as the model wrote it, then
        // the result in the protocol's format.
        let second = requests[1].messages();
        assert_eq!(second[2]["role"], "assistant");
        assert!(second[2]["content"].as_str().unwrap().contains("6 * 7"), "{protocol:?}");
        let result = second[3]["content"].as_str().unwrap();
        let marker = if protocol == ProtocolId::Vcp { "VCP_TOOL_PAYLOAD" } else { "tool_call_result" };
        assert!(result.contains(marker) && result.contains("42"), "{protocol:?}: result message:\n{result}");
        assert!(!result.contains("The user wants"), "reasoning is never sent back as the reply");

        let Some(Entry::Assistant { content, reasoning, calls }) = transcript.entries().last() else { panic!() };
        assert_eq!(content, "6 × 7 = 42.", "{protocol:?}: the answer quotes the result the model was sent");
        assert!(reasoning.is_empty() && calls.is_empty());
        let Entry::Assistant { reasoning, calls, .. } = &transcript.entries()[2] else { panic!() };
        assert!(reasoning.contains("calculate"), "reasoning is kept apart: {reasoning:?}");
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].status, CallStatus::Completed);
        assert_eq!(results(&transcript)[0].1, Status::Success);
        assert_no_dangling_request(&transcript);
        let streamed: String = chat
            .events()
            .iter()
            .filter_map(|e| match e {
                ChainEvent::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert!(streamed.starts_with("Let me compute that.") && streamed.ends_with("= 42."), "{streamed}");
    }
}

#[tokio::test]
async fn native_calls_split_and_interleaved_across_chunks_are_assembled_and_answered_by_id() {
    for style in [
        CallStyle::default(),
        CallStyle { interleave: true, ..CallStyle::default() },
        CallStyle { interleave: true, id_on_every_piece: true, ..CallStyle::default() },
        CallStyle { interleave: true, no_index: true, ..CallStyle::default() },
    ] {
        let first = Reply::text("")
            .call("call_a", "calculate", json!({ "expression": "6 * 7" }))
            .call("call_b", "calculate", json!({ "expression": "2 + 2" }))
            .style(style);
        let script = [Response::Reply(first), Response::text("42 and 4.")];
        let chat = Chat::new(&[CALC], "", agent(ProtocolId::Native), Arc::new(DenyAll), script).await;
        let (stop, transcript) = chat.send("Two sums, please").await;
        assert_eq!(stop, Stop::Answered, "{style:?}");
        let requests = chat.model.requests();
        let tools = requests[0].body["tools"].as_array().expect("the native schema is sent");
        assert!(tools.iter().any(|t| t["function"]["name"] == "calculate"));
        let system = requests[0].messages()[0]["content"].as_str().unwrap();
        assert!(!system.contains("\"function\""), "the schema is not repeated in the prompt:\n{system}");
        let second = requests[1].messages();
        let asked = &second[2];
        assert_eq!(asked["role"], "assistant");
        let ids: Vec<&str> = asked["tool_calls"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["call_a", "call_b"], "{style:?}");
        assert_eq!(asked["tool_calls"][0]["function"]["arguments"], r#"{"expression":"6 * 7"}"#);
        assert_eq!(second[3]["role"], "tool");
        assert_eq!(second[3]["tool_call_id"], "call_a");
        assert!(second[3]["content"].as_str().unwrap().contains("42"), "{}", second[3]);
        assert_eq!(second[4]["tool_call_id"], "call_b");
        assert!(second[4]["content"].as_str().unwrap().contains("\"value\":4"), "{}", second[4]);
        assert_no_dangling_request(&transcript);
    }
}

/// Denies sensitive calls with a reason, allows the rest; withholds every
/// result it is shown.
struct Strict;

#[async_trait::async_trait]
impl Approver for Strict {
    async fn approve_calls(&self, calls: &[PendingCall]) -> Vec<CallDecision> {
        calls
            .iter()
            .map(|call| match call.permission {
                toolhost::Permission::Sensitive => CallDecision::Deny { reason: Some("no writing today".into()) },
                _ => CallDecision::AllowOnce,
            })
            .collect()
    }

    async fn approve_result(&self, _outcome: &ToolOutcome, _tool: &ToolSpec) -> ResultDecision {
        ResultDecision::Reject { reason: Some("the file is private".into()) }
    }
}

async fn files_chat(approver: Arc<dyn Approver>, script: Vec<Response>) -> (Chat, tempfile::TempDir) {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("secret.txt"), "the launch code is 0000").unwrap();
    let policy = format!(
        "[plugins.files]\nfile = \"files.wasm\"\ndirs = {{ \"/workspace\" = {{ host = {:?}, access = \"read-write\" }} }}\n",
        workspace.path().display().to_string()
    );
    (Chat::new(&[CALC, FILES], &policy, agent(ProtocolId::Vcp), approver, script).await, workspace)
}

#[tokio::test]
async fn through_the_loop_a_denial_reason_reaches_the_model_and_a_rejected_result_never_does() {
    let reply = [
        vcp_call("write_file", &[("path", "out.txt"), ("content", "hello")]),
        vcp_call("read_file", &[("path", "secret.txt")]),
        vcp_call("calculate", &[("expression", "1 + 1")]),
    ]
    .join("\n");
    let (chat, workspace) = files_chat(Arc::new(Strict), vec![Response::text(reply), Response::text("Done.")]).await;
    let (stop, transcript) = chat.send("Save, read, add").await;
    assert_eq!(stop, Stop::Answered);
    let sent = chat.model.requests()[1].last_message().to_owned();
    assert!(sent.contains("no writing today"), "the denial's reason reaches the model:\n{sent}");
    assert!(!sent.contains("launch code"), "a rejected result never reaches the model:\n{sent}");
    assert!(sent.contains("the file is private"), "the model hears why:\n{sent}");
    assert!(!workspace.path().join("out.txt").exists(), "the denied write did not happen");
    let statuses: Vec<Status> = results(&transcript).into_iter().map(|(_, status, _)| status).collect();
    assert_eq!(statuses, [Status::Denied, Status::ResultRejected, Status::Success]);
    assert!(results(&transcript).iter().all(|(_, _, output)| !output.contains("launch code")), "nor the transcript");
    let Entry::Assistant { calls, .. } = &transcript.entries()[2] else { panic!() };
    let call_statuses: Vec<CallStatus> = calls.iter().map(|c| c.status).collect();
    assert_eq!(call_statuses, [CallStatus::Denied, CallStatus::Denied, CallStatus::Completed]);
    let waited = chat.events().iter().any(|e| matches!(e, ChainEvent::AwaitingApproval { calls } if calls.len() == 2));
    assert!(waited, "the sensitive and moderate calls were shown as waiting: {:?}", chat.events());

    // Nobody to ask: the sensitive call is denied for lack of approval.
    let (chat, _workspace) = files_chat(
        Arc::new(DenyAll),
        vec![Response::text(vcp_call("write_file", &[("path", "out.txt"), ("content", "x")])), Response::text("ok")],
    )
    .await;
    chat.send("Save").await;
    let sent = chat.model.requests()[1].last_message().to_owned();
    assert!(sent.contains("denied"), "{sent}");

    // Everyone allowed: the write happens.
    let (chat, workspace) = files_chat(
        Arc::new(AllowAll),
        vec![Response::text(vcp_call("write_file", &[("path", "out.txt"), ("content", "x")])), Response::text("ok")],
    )
    .await;
    chat.send("Save").await;
    assert_eq!(std::fs::read_to_string(workspace.path().join("out.txt")).unwrap(), "x");
}

#[tokio::test]
async fn calls_past_the_per_reply_limit_are_not_run_and_the_model_reads_why() {
    let sums: Vec<String> = (0..40).map(|i| format!("{i} + 1")).collect();
    let native = sums
        .iter()
        .enumerate()
        .fold(Reply::text(""), |reply, (i, sum)| reply.call(&format!("c{i}"), "calculate", json!({ "expression": sum })));
    let vcp = sums.iter().map(|sum| vcp_call("calculate", &[("expression", sum)])).collect::<Vec<_>>().join("\n");
    for (protocol, first) in [(ProtocolId::Native, Response::Reply(native)), (ProtocolId::Vcp, Response::text(vcp))] {
        let script = [first, Response::text("done")];
        let chat = Chat::tuned(&[CALC], "", agent(protocol), Arc::new(DenyAll), script, |p| p.max_calls_per_reply = 3).await;
        let (stop, transcript) = chat.send("Many sums").await;
        assert_eq!(stop, Stop::Answered, "{protocol:?}");
        let statuses: Vec<Status> = results(&transcript).into_iter().map(|(_, s, _)| s).collect();
        assert_eq!(statuses, [Status::Success, Status::Success, Status::Success, Status::Cancelled], "{protocol:?}");
        let told = chat.model.requests()[1].last_message().to_owned();
        assert!(told.contains("this reply made 40 calls and one reply may make 3 (max_calls_per_reply)"), "{protocol:?}: {told}");
        assert_no_dangling_request(&transcript);
    }
}

#[tokio::test]
async fn the_iteration_limit_stops_the_loop_without_a_further_model_turn() {
    let script: Vec<Response> =
        (1..=5).map(|n| Response::text(vcp_call("calculate", &[("expression", &format!("{n} + {n}"))]))).collect();
    let mut config = agent(ProtocolId::Vcp);
    config.max_iterations = 2;
    let chat = Chat::new(&[CALC], "", config, Arc::new(DenyAll), script).await;
    let (stop, transcript) = chat.send("Keep adding").await;
    assert_eq!(stop, Stop::IterationLimit { limit: 2 });
    assert_eq!(chat.model.requests().len(), 2, "no request after the limit");
    assert_eq!(results(&transcript).len(), 2, "both rounds ran");
    let note = last_note(&transcript);
    assert!(note.contains("iteration limit") && note.contains("2 rounds"), "{note}");
    assert_no_dangling_request(&transcript);
    assert!(matches!(chat.events().last(), Some(ChainEvent::Finished { stop: Stop::IterationLimit { .. } })));
}

#[tokio::test]
async fn the_same_call_a_third_round_in_a_row_is_not_run_and_a_fourth_stops_the_loop() {
    let same = vcp_call("calculate", &[("expression", "1 + 1")]);
    let script: Vec<Response> = (0..6).map(|_| Response::text(same.clone())).collect();
    let mut config = agent(ProtocolId::Vcp);
    config.max_iterations = 10;
    let chat = Chat::new(&[CALC], "", config, Arc::new(DenyAll), script).await;
    let (stop, transcript) = chat.send("Add").await;
    assert_eq!(stop, Stop::Repeated { tool: "calculate".into() });
    assert_eq!(chat.model.requests().len(), 4);
    let statuses: Vec<Status> = results(&transcript).into_iter().map(|(_, s, _)| s).collect();
    assert_eq!(statuses, [Status::Success, Status::Success, Status::Cancelled, Status::Cancelled]);
    let told = chat.model.requests()[3].last_message().to_owned();
    assert!(told.contains("three rounds in a row"), "the model is told once: {told}");
    assert!(last_note(&transcript).contains("same arguments"));
    assert_no_dangling_request(&transcript);

    // A different call in between starts the count again.
    let other = vcp_call("calculate", &[("expression", "2 + 2")]);
    let script = [same.clone(), same.clone(), other, same.clone(), same.clone(), "Done.".into()].map(Response::text);
    let mut config = agent(ProtocolId::Vcp);
    config.max_iterations = 10;
    drop(chat);
    let chat = Chat::new(&[CALC], "", config, Arc::new(DenyAll), script).await;
    let (stop, transcript) = chat.send("Add").await;
    assert_eq!(stop, Stop::Answered);
    assert!(results(&transcript).iter().all(|(_, s, _)| *s == Status::Success));
}

#[tokio::test]
async fn parallel_agents_run_a_rounds_calls_at_once_and_serial_ones_one_by_one() {
    let reply = [vcp_call("wait_ms", &[("ms", "300")]), vcp_call("wait_ms", &[("ms", "300")])].join("\n");
    for parallel in [false, true] {
        let mut config = agent(ProtocolId::Vcp);
        config.parallel_execution = parallel;
        let script = [Response::text(reply.clone()), Response::text("waited")];
        let chat = Chat::new(&[HOSTILE], "", config, Arc::new(DenyAll), script).await;
        let (stop, transcript) = chat.send("Wait twice").await;
        assert_eq!(stop, Stop::Answered);
        assert_eq!(
            results(&transcript).iter().filter(|(_, s, _)| *s == Status::Success).count(),
            2,
            "{:?}",
            results(&transcript)
        );
        let peak = chat.host.executor.peak_concurrency();
        assert_eq!(peak, if parallel { 2 } else { 1 }, "parallel_execution = {parallel}");
    }
}

#[tokio::test]
async fn cancelling_mid_stream_stops_the_reply_and_keeps_what_arrived() {
    let long = "This reply streams slowly, word by word, and is cancelled before it ends. ".repeat(4);
    let script = [Response::Reply(Reply::text(long).slowly(20))];
    let chat = Chat::new(&[CALC], "", agent(ProtocolId::Vcp), Arc::new(DenyAll), script).await;
    let cancel = CancellationToken::new();
    let events = chat.events.clone();
    let trigger = cancel.clone();
    let sink = move |event: ChainEvent| {
        let streamed = events.lock().unwrap().iter().filter(|e| matches!(e, ChainEvent::TextDelta { .. })).count();
        if streamed >= 3 {
            trigger.cancel();
        }
        events.lock().unwrap().push(event);
    };
    let mut transcript = Transcript::in_memory();
    let started = Instant::now();
    let stop = chat.chain.send(&mut transcript, "Tell me a story", &sink, &cancel).await.unwrap();
    assert_eq!(stop, Stop::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(2), "stopped promptly: {:?}", started.elapsed());
    let Some(Entry::Assistant { content, calls, .. }) = transcript.entries().iter().rev().nth(1) else { panic!() };
    assert!(content.starts_with("This reply") && content.len() < 100, "what arrived is kept: {content:?}");
    assert!(calls.is_empty());
    assert!(last_note(&transcript).contains("cancelled"));
}

#[tokio::test]
async fn cancelling_mid_tool_stops_the_spinning_plugin_and_answers_every_call() {
    let policy = "[plugins.hostile]\nfile = \"hostile.wasm\"\nlimits = { fuel = 1_000_000_000_000, timeout_ms = 60_000 }\n";
    let reply =
        [vcp_call("calculate", &[("expression", "1 + 2")]), vcp_call("spin", &[]), vcp_call("calculate", &[("expression", "3")])]
            .join("\n");
    let mut config = agent(ProtocolId::Vcp);
    config.timeout_ms = 60_000;
    let chat = Chat::new(&[CALC, HOSTILE], policy, config, Arc::new(DenyAll), [Response::text(reply)]).await;
    let cancel = CancellationToken::new();
    let events = chat.events.clone();
    let trigger = cancel.clone();
    let sink = move |event: ChainEvent| {
        if matches!(&event, ChainEvent::Outcome { tool, .. } if tool == "calculate") {
            // The first call is done and the spinner has started.
            let trigger = trigger.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(200)).await;
                trigger.cancel();
            });
        }
        events.lock().unwrap().push(event);
    };
    let mut transcript = Transcript::in_memory();
    let started = Instant::now();
    let stop = chat.chain.send(&mut transcript, "Spin", &sink, &cancel).await.unwrap();
    assert_eq!(stop, Stop::Cancelled, "{:?}", results(&transcript));
    assert!(started.elapsed() < Duration::from_secs(5), "the spinner was stopped: {:?}", started.elapsed());
    let statuses: Vec<Status> = results(&transcript).into_iter().map(|(_, s, _)| s).collect();
    assert_eq!(statuses, [Status::Success, Status::Cancelled, Status::Cancelled], "finished results are kept");
    assert_no_dangling_request(&transcript);
    assert_eq!(chat.model.requests().len(), 1, "the model gets no turn after a cancel");
    assert!(last_note(&transcript).contains("cancelled"));
    // The host serves the next call.
    assert_eq!(chat.host.call("calculate", json!({ "expression": "2" })).await.status, Status::Success);
}

#[tokio::test]
async fn model_faults_are_retried_where_safe_and_otherwise_clear_errors_that_lose_nothing() {
    // 500, then a reply: retried.
    let chat =
        Chat::new(&[CALC], "", agent(ProtocolId::Vcp), Arc::new(DenyAll), [Response::status(500, "busy"), Response::text("hi")])
            .await;
    let (stop, _) = chat.send("hello").await;
    assert_eq!(stop, Stop::Answered);
    assert_eq!(chat.model.requests().len(), 2);

    // 429 with Retry-After: 1 s, honoured.
    drop(chat);
    let chat =
        Chat::new(&[CALC], "", agent(ProtocolId::Vcp), Arc::new(DenyAll), [Response::rate_limited(1), Response::text("hi")])
            .await;
    let started = Instant::now();
    let (stop, _) = chat.send("hello").await;
    assert_eq!(stop, Stop::Answered);
    assert!(started.elapsed() >= Duration::from_millis(950), "waited as asked: {:?}", started.elapsed());

    // 500 every time: the retries run out and the status is reported.
    drop(chat);
    let chat =
        Chat::new(&[CALC], "", agent(ProtocolId::Vcp), Arc::new(DenyAll), (0..3).map(|_| Response::status(503, "down"))).await;
    let (stop, transcript) = chat.send("hello").await;
    assert!(matches!(&stop, Stop::ModelFailed { message } if message.contains("503")), "{stop:?}");
    assert_eq!(chat.model.requests().len(), 3, "the first attempt and two retries");
    assert!(matches!(&transcript.entries()[1], Entry::User { content } if content == "hello"), "the message is kept");

    // Failures after part of a reply streamed are never retried; what
    // arrived is kept and the error says what happened.
    let faults = [
        (Response::malformed_after("Half a rep"), "unreadable"),
        (Response::dropped_after("Half a rep"), "cut off"),
        (Response::error_after("Half a rep", "the GPU caught fire"), "the GPU caught fire"),
        (Response::hangs_after("Half a rep"), "sent nothing"),
    ];
    // Each host reserves terabytes of address space: one alive at a time.
    drop(chat);
    for (fault, says) in faults {
        let chat = Chat::new(&[CALC], "", agent(ProtocolId::Vcp), Arc::new(DenyAll), [fault, Response::text("never")]).await;
        let (stop, transcript) = chat.send("hello").await;
        let Stop::ModelFailed { message } = &stop else { panic!("{says}: {stop:?}") };
        assert!(message.contains(says), "{message}");
        assert_eq!(chat.model.requests().len(), 1, "{says}: not retried once a reply streamed");
        let kept = transcript
            .entries()
            .iter()
            .any(|e| matches!(e, Entry::Assistant { content, calls, .. } if content == "Half a rep" && calls.is_empty()));
        assert!(kept, "{says}: the partial reply is kept: {:?}", transcript.entries());
        assert!(last_note(&transcript).contains(says));
        assert!(chat.events().iter().any(|e| matches!(e, ChainEvent::Error { message } if message.contains(says))));
    }
}

#[tokio::test]
async fn a_saved_conversation_with_a_torn_last_line_resumes_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chat.jsonl");
    let script =
        [Response::text(vcp_call("calculate", &[("expression", "6 * 7")])), Response::text("42."), Response::text("Still 42.")];
    let chat = Chat::new(&[CALC], "", agent(ProtocolId::Vcp), Arc::new(DenyAll), script).await;
    let mut transcript = Transcript::create(&path).unwrap();
    chat.send_in(&mut transcript, "What is 6 × 7?", &CancellationToken::new()).await;
    let written = transcript.entries().len();
    drop(transcript);
    let lines = std::fs::read_to_string(&path).unwrap().lines().count();
    assert_eq!(lines, written, "one line per entry");
    // A crash while a line was written.
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    std::io::Write::write_all(&mut file, br#"{"role":"user","content":"and then"#).unwrap();
    drop(file);

    let (mut transcript, warnings) = Transcript::resume(&path).unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(transcript.entries().len(), written, "nothing before the torn line is lost");
    let stop = chat.send_in(&mut transcript, "Are you sure?", &CancellationToken::new()).await;
    assert_eq!(stop, Stop::Answered);
    let sent = chat.model.requests()[2].messages().to_vec();
    let roles: Vec<&str> = sent.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user", "assistant", "user"], "the whole conversation is sent");
    assert_eq!(sent[5]["content"], "Are you sure?");
    let (again, warnings) = Transcript::resume(&path).unwrap();
    assert!(warnings.is_empty(), "the file is whole again: {warnings:?}");
    assert_eq!(again.entries().len(), written + 2);
}

#[tokio::test]
async fn manual_mode_hands_back_the_calls_and_resumes_with_an_edited_one() {
    let reply = [
        vcp_call("calculate", &[("expression", "1 + 1")]),
        vcp_call("calculate", &[("expression", "2 + 2")]),
        vcp_call("calculate", &[("expression", "3 + 3")]),
    ]
    .join("\n");
    let mut config = agent(ProtocolId::Vcp);
    config.mode = CallMode::Manual;
    let chat = Chat::new(&[CALC], "", config, Arc::new(DenyAll), [Response::text(reply), Response::text("ok")]).await;
    let (stop, mut transcript) = chat.send("Add three times").await;
    let Stop::AwaitingDecisions { calls } = stop else { panic!("{stop:?}") };
    assert_eq!(calls.len(), 3);
    assert!(results(&transcript).is_empty(), "nothing ran");
    assert_eq!(chat.model.requests().len(), 1);

    let unknown = vec![ManualDecision::Skip { id: "nope".into(), reason: None }];
    let events = |_: ChainEvent| {};
    let error = chat.chain.resume(&mut transcript, unknown, &events, &CancellationToken::new()).await.unwrap_err();
    assert!(error.to_string().contains("nope"), "{error}");

    let edited = json!({ "expression": "10 * 10" }).as_object().unwrap().clone();
    let decisions = vec![
        ManualDecision::Run { id: calls[0].id.clone(), arguments: Some(edited) },
        ManualDecision::Answer { id: calls[1].id.clone(), output: "four, by hand".into() },
        ManualDecision::Skip { id: calls[2].id.clone(), reason: Some("enough".into()) },
    ];
    let stop = chat.chain.resume(&mut transcript, decisions, &events, &CancellationToken::new()).await.unwrap();
    assert_eq!(stop, Stop::Answered);
    let sent = chat.model.requests()[1].last_message().to_owned();
    assert!(sent.contains("100"), "the edited call ran: {sent}");
    assert!(sent.contains("four, by hand") && sent.contains("enough"), "{sent}");
    let Some(Entry::Tool { arguments, .. }) = transcript.entries().iter().find(|e| matches!(e, Entry::Tool { .. })) else {
        panic!()
    };
    assert_eq!(serde_json::from_str::<Value>(arguments).unwrap(), json!({ "expression": "10 * 10" }), "the edit is recorded");
    assert_no_dangling_request(&transcript);
}

#[tokio::test]
async fn a_native_call_given_one_text_is_recorded_decided_on_and_run_with_the_parameter_it_is_for() {
    // A weak model's native call: `"arguments": "\"6*7\""`, a JSON string.
    let reply = Reply::text("").call("call_t", "calculate", json!("6*7"));
    let mut config = agent(ProtocolId::Native);
    config.mode = CallMode::Manual;
    let chat = Chat::new(&[CALC], "", config, Arc::new(DenyAll), [Response::Reply(reply), Response::text("42.")]).await;
    let (stop, mut transcript) = chat.send("Multiply").await;
    let Stop::AwaitingDecisions { calls } = stop else { panic!("{stop:?}") };
    assert_eq!(Value::Object(calls[0].arguments.clone()), json!({ "expression": "6*7" }), "what the person decides on");
    let decisions = vec![ManualDecision::Run { id: calls[0].id.clone(), arguments: None }];
    let stop = chat.chain.resume(&mut transcript, decisions, &|_: ChainEvent| {}, &CancellationToken::new()).await.unwrap();
    assert_eq!(stop, Stop::Answered);
    let requests = chat.model.requests();
    let second = requests[1].messages();
    assert_eq!(second[2]["tool_calls"][0]["function"]["arguments"], r#"{"expression":"6*7"}"#, "the model's call, as it runs");
    assert!(second[3]["content"].as_str().unwrap().contains("42"), "{}", second[3]);
}

#[test]
fn the_readme_chat_configuration_loads() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let section = readme.split("## Chat with tools").nth(1).unwrap().split("\n## ").next().unwrap();
    let toml = section.split("```toml\n").nth(1).unwrap().split("```").next().unwrap();
    let policy = toolhost::Policy::parse(toml, std::path::Path::new("/readme/toolhost.toml")).unwrap();
    let local = &policy.llm["local"];
    assert_eq!((local.model.as_str(), local.idle_timeout), ("qwen3-coder", Duration::from_secs(120)));
    assert_eq!(policy.agents["helper"].llm.as_deref(), Some("local"));
}

/// The tool entries of `transcript`: (call id, arguments as recorded).
fn recorded_arguments(transcript: &Transcript) -> Vec<(String, String)> {
    transcript
        .entries()
        .iter()
        .filter_map(|e| match e {
            Entry::Tool { call_id, arguments, .. } => Some((call_id.clone(), arguments.clone())),
            _ => None,
        })
        .collect()
}

/// The `Outcome` events: (call id, arguments).
fn outcome_arguments(events: &[ChainEvent]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            ChainEvent::Outcome { id, arguments, .. } => Some((id.clone(), arguments.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_model_is_sent_the_pipelines_result_messages_fresh_and_after_a_resume() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chat.jsonl");
    let asked = Reply::text("").call("call_a", "calculate", json!({ "expression": "6 * 7" }));
    let script = [Response::Reply(asked), Response::text("42."), Response::text("Still 42.")];
    let chat = Chat::new(&[CALC], "", agent(ProtocolId::Native), Arc::new(DenyAll), script).await;
    let mut transcript = Transcript::create(&path).unwrap();
    chat.send_in(&mut transcript, "What is 6 × 7?", &CancellationToken::new()).await;
    let fresh = chat.model.requests()[1].messages().to_vec();

    // The same call through the pipeline alone: its messages are what the
    // model must be sent.
    let approvals = Arc::new(Approvals::new(&chat.host.config.approval));
    let pipeline = Pipeline::new(chat.host.executor.clone(), approvals, Arc::new(DenyAll));
    let call = toolhost::ToolCall::new("call_a", "calculate", json!({ "expression": "6 * 7" }));
    let turn = toolhost::Turn::for_agent("tester", agent(ProtocolId::Native));
    let result = pipeline.run(&turn, vec![call]).await;
    let from_pipeline = serde_json::to_value(result.messages()).unwrap();
    assert_eq!(fresh[3..], from_pipeline.as_array().unwrap()[..], "the result messages are the pipeline's");

    // Everything the model is shown of an outcome is recorded, fuel included.
    let recorded: Vec<ToolOutcome> = transcript.entries().iter().filter_map(Entry::outcome).collect();
    // (Not equal to the second run's: host bytes are charged as fuel, and
    // a call may grow a structure the host shares, a log's span table say,
    // which tests running beside this one fill.)
    assert!(recorded[0].fuel_used > 0 && result.outcomes[0].fuel_used > 0, "{recorded:?}");
    drop(transcript);

    let (mut resumed, warnings) = Transcript::resume(&path).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let reread: Vec<ToolOutcome> = resumed.entries().iter().filter_map(Entry::outcome).collect();
    assert_eq!(reread, recorded, "a resumed transcript gives back the outcomes as they were");
    chat.send_in(&mut resumed, "Are you sure?", &CancellationToken::new()).await;
    let after_resume = chat.model.requests()[2].messages().to_vec();
    assert_eq!(after_resume[..fresh.len()], fresh[..], "a resumed conversation sends what a fresh one sent");
}

#[tokio::test]
async fn calls_answered_without_running_are_recorded_with_the_arguments_they_were_asked_with() {
    // Unreadable native arguments.
    let asked = Reply::text("").call("bad", "calculate", json!([1, 2]));
    let chat =
        Chat::new(&[CALC], "", agent(ProtocolId::Native), Arc::new(DenyAll), [Response::Reply(asked), Response::text("ok")])
            .await;
    let (_, transcript) = chat.send("Compute").await;
    assert_eq!(recorded_arguments(&transcript), [("bad".to_owned(), "[1,2]".to_owned())]);
    assert_eq!(outcome_arguments(&chat.events()), [("bad".to_owned(), "[1,2]".to_owned())]);

    // A call repeated too often.
    let same = vcp_call("calculate", &[("expression", "1 + 1")]);
    let script: Vec<Response> = (0..4).map(|_| Response::text(same.clone())).collect();
    let mut config = agent(ProtocolId::Vcp);
    config.max_iterations = 10;
    let chat = Chat::new(&[CALC], "", config, Arc::new(DenyAll), script).await;
    let (stop, transcript) = chat.send("Add").await;
    assert_eq!(stop, Stop::Repeated { tool: "calculate".into() });
    let recorded = recorded_arguments(&transcript);
    assert_eq!(recorded.len(), 4);
    assert!(recorded.iter().all(|(_, arguments)| *arguments == same), "{recorded:?}");
    assert_eq!(outcome_arguments(&chat.events()), recorded, "events carry them too");

    // Manual mode: answered and skipped by a person.
    let reply = [vcp_call("calculate", &[("expression", "2 + 2")]), vcp_call("calculate", &[("expression", "3 + 3")])];
    let mut config = agent(ProtocolId::Vcp);
    config.mode = CallMode::Manual;
    let chat = Chat::new(&[CALC], "", config, Arc::new(DenyAll), [Response::text(reply.join("\n")), Response::text("ok")]).await;
    let (stop, mut transcript) = chat.send("Add twice").await;
    let Stop::AwaitingDecisions { calls } = stop else { panic!("{stop:?}") };
    let decisions = vec![
        ManualDecision::Answer { id: calls[0].id.clone(), output: "four".into() },
        ManualDecision::Skip { id: calls[1].id.clone(), reason: None },
    ];
    let events = chat.events.clone();
    let sink = move |event: ChainEvent| events.lock().unwrap().push(event);
    chat.chain.resume(&mut transcript, decisions, &sink, &CancellationToken::new()).await.unwrap();
    let expected: Vec<(String, String)> = calls.iter().zip(&reply).map(|(c, raw)| (c.id.clone(), raw.clone())).collect();
    assert_eq!(recorded_arguments(&transcript), expected);
    assert_eq!(outcome_arguments(&chat.events()), expected);
}

#[tokio::test]
async fn native_call_ids_are_unique_across_the_conversation_and_results_answer_the_right_calls() {
    let expression = |n: u32| json!({ "expression": format!("{n} + {n}") });
    let script = [
        // Round one: one call with an id, two without. (Two calls with one
        // id in one reply cannot be told apart: the stream joins them.)
        Response::Reply(Reply::text("").call("dup", "calculate", expression(1)).call("", "calculate", expression(2)).call(
            "",
            "calculate",
            expression(3),
        )),
        // Round two: the same id again, none again, and the id the host gave a call before.
        Response::Reply(Reply::text("").call("dup", "calculate", expression(4)).call("", "calculate", expression(5)).call(
            "call-1",
            "calculate",
            expression(6),
        )),
        Response::text("Done."),
    ];
    let mut config = agent(ProtocolId::Native);
    config.max_iterations = 5;
    let chat = Chat::new(&[CALC], "", config, Arc::new(DenyAll), script).await;
    let (stop, transcript) = chat.send("Sums").await;
    assert_eq!(stop, Stop::Answered);
    let asked: Vec<(String, String)> = transcript
        .entries()
        .iter()
        .flat_map(|e| match e {
            Entry::Assistant { calls, .. } => {
                calls.iter().map(|c| (c.id.clone(), c.arguments["expression"].as_str().unwrap().to_owned())).collect()
            }
            _ => Vec::new(),
        })
        .collect();
    assert_eq!(asked.len(), 6);
    let mut ids: Vec<&str> = asked.iter().map(|(id, _)| id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 6, "every call has its own id: {asked:?}");
    // Each result answers its own call: n + n is 2n.
    for (id, expression) in &asked {
        let n: u32 = expression.split(' ').next().unwrap().parse().unwrap();
        let output = transcript
            .entries()
            .iter()
            .find_map(|e| match e {
                Entry::Tool { call_id, output, .. } if call_id == id => Some(output.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no result for {id}"));
        assert!(output.contains(&format!("\"value\":{}", 2 * n)), "{id} ({expression}): {output}");
    }
    // And the model is told so: each tool message answers a call of the reply before it, once.
    let sent = chat.model.requests()[2].messages().to_vec();
    let answered: Vec<&str> = sent.iter().filter(|m| m["role"] == "tool").map(|m| m["tool_call_id"].as_str().unwrap()).collect();
    let called: Vec<&str> =
        sent.iter().flat_map(|m| m["tool_calls"].as_array().into_iter().flatten()).map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(answered, called);
    assert_no_dangling_request(&transcript);
}

#[tokio::test]
async fn when_a_turn_returns_every_audit_record_and_transcript_entry_is_written() {
    let expression = |n: usize| json!({ "expression": format!("{n} + {n}") });
    let asked = (0..8).fold(Reply::text(""), |reply, n| reply.call(&format!("c{n}"), "calculate", expression(n)));
    let policy = "[approval]\naudit_log = \"audit.jsonl\"\n";
    let chat = Chat::new(
        &[CALC],
        policy,
        agent(ProtocolId::Native),
        Arc::new(DenyAll),
        [Response::Reply(asked), Response::text("Done.")],
    )
    .await;
    let (path, audit) = (chat.host.dir.path().join("chat.jsonl"), chat.host.dir.path().join("audit.jsonl"));
    let lines = |path: &std::path::Path| std::fs::read_to_string(path).unwrap_or_default().lines().count();
    // A call that runs is on record twice: decided, before it starts, and ended.
    let ended = |path: &std::path::Path| {
        std::fs::read_to_string(path).unwrap_or_default().lines().filter(|l| !l.contains(r#""event":"decided""#)).count()
    };
    let mut transcript = Transcript::create(&path).unwrap();
    assert_eq!(chat.send_in(&mut transcript, "Sums", &CancellationToken::new()).await, Stop::Answered);
    assert_eq!(lines(&path), transcript.entries().len(), "every entry is in the file when send returns");
    assert_eq!(ended(&audit), 8, "every call is in the audit log when send returns");
    assert_eq!(lines(&audit), 16, "each decided before it ran");

    let approvals = Arc::new(Approvals::new(&chat.host.config.approval));
    let pipeline = Pipeline::new(chat.host.executor.clone(), approvals, Arc::new(DenyAll));
    let calls = (0..20).map(|n| toolhost::ToolCall::new(format!("d{n}"), "calculate", expression(n))).collect();
    pipeline.run(&toolhost::Turn::for_agent("tester", agent(ProtocolId::Native)), calls).await;
    assert_eq!(ended(&audit), 28, "every record is in the audit log when the pipeline returns");
}

#[tokio::test]
async fn tools_loaded_between_turns_are_offered_in_the_next_request() {
    let script = [Response::text("Hello."), Response::text("Hello again.")];
    let chat = Chat::new(&[CALC], "", agent(ProtocolId::Native), Arc::new(DenyAll), script).await;
    let mut transcript = Transcript::in_memory();
    assert_eq!(chat.send_in(&mut transcript, "hi", &CancellationToken::new()).await, Stop::Answered);
    std::fs::copy(CLOCK.path(), chat.host.dir.path().join("plugins").join("clock.wasm")).unwrap();
    chat.host.registry.reload().await.unwrap();
    assert_eq!(chat.send_in(&mut transcript, "and now?", &CancellationToken::new()).await, Stop::Answered);
    let offered = |request: usize| -> Vec<String> {
        let tools = chat.model.requests()[request].body["tools"].as_array().expect("the native schema is sent").clone();
        tools.iter().map(|tool| tool["function"]["name"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(offered(0), ["calculate"]);
    let mut loaded: Vec<String> =
        chat.host.registry.catalog().plugins.iter().flat_map(|p| p.manifest.tools.iter().map(|t| t.name.clone())).collect();
    let mut after = offered(1);
    loaded.sort();
    after.sort();
    assert!(loaded.len() > 1, "{loaded:?}");
    assert_eq!(after, loaded, "the reload's tools are offered from the next request on");
}

#[tokio::test]
async fn settings_changed_between_turns_change_what_the_next_request_offers() {
    let script = [Response::text("Hello."), Response::text("Hello again.")];
    let mut chat = Chat::new(&[CALC, CLOCK], "", agent(ProtocolId::Native), Arc::new(DenyAll), script).await;
    let mut transcript = Transcript::in_memory();
    assert_eq!(chat.send_in(&mut transcript, "hi", &CancellationToken::new()).await, Stop::Answered);
    let mut toggled = agent(ProtocolId::Native);
    toggled.tool_toggles = [("calculate".to_owned(), false)].into();
    chat.chain.set_config(toggled).unwrap();
    assert_eq!(chat.send_in(&mut transcript, "and now?", &CancellationToken::new()).await, Stop::Answered);
    let offered = |request: usize| -> Vec<String> {
        let tools = chat.model.requests()[request].body["tools"].as_array().expect("the native schema is sent").clone();
        tools.iter().map(|tool| tool["function"]["name"].as_str().unwrap().to_owned()).collect()
    };
    assert!(offered(0).contains(&"calculate".to_owned()), "{:?}", offered(0));
    let after = offered(1);
    assert!(!after.is_empty() && !after.contains(&"calculate".to_owned()), "a tool switched off is not offered: {after:?}");
}
