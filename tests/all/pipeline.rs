//! The turn pipeline over real plugins: ids, checks, approval, results,
//! messages; and the executor's cap and cancellation.

use crate::built::{CALC, DIRTREE, FILES, HOSTILE};
use crate::support::TestHost;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use toolhost::{
    AllowAll, Approvals, Approver, CallDecision, Declared, Executor, Message, PendingCall, Pipeline, ProtocolId, ResultDecision,
    Role, Status, ToolCall, ToolOutcome, ToolSpec, Turn, executor::RunOptions,
};

fn call(id: &str, tool: &str, args: serde_json::Value) -> ToolCall {
    ToolCall::new(id, tool, args.as_object().unwrap().clone())
}

fn pipeline(host: &TestHost, approver: Arc<dyn Approver>) -> Pipeline {
    Pipeline::new(host.executor.clone(), Arc::new(Approvals::new(&host.config.approval)), approver)
}

/// Passes calls, rejects every result, and counts what it was asked.
#[derive(Default)]
struct RejectResults {
    results_seen: AtomicUsize,
}

#[async_trait::async_trait]
impl Approver for RejectResults {
    async fn approve_calls(&self, calls: &[PendingCall]) -> Vec<CallDecision> {
        calls.iter().map(|_| CallDecision::AllowOnce).collect()
    }

    async fn approve_result(&self, _outcome: &ToolOutcome, _tool: &ToolSpec) -> ResultDecision {
        self.results_seen.fetch_add(1, Ordering::SeqCst);
        ResultDecision::Reject { reason: Some("it holds a secret".into()) }
    }
}

#[tokio::test]
async fn native_call_ids_come_back_unchanged_in_the_tool_messages() {
    let host = TestHost::new(&[CALC], "").await;
    let reply = r#"{"tool_calls": [
        {"id": "call_Xk2p9", "type": "function", "function": {"name": "calculate", "arguments": "{\"expression\": \"2+2\"}"}},
        {"id": "toolu_01A", "type": "function", "function": {"name": "calculate", "arguments": "{\"expression\": \"3*3\"}"}}
    ]}"#;
    let parsed = ProtocolId::Native.protocol().parse(reply, &Declared::new(["calculate"]));
    let calls = ToolCall::from_reply(reply, &parsed.calls);
    let result = pipeline(&host, Arc::new(AllowAll)).run(&Turn::direct(ProtocolId::Native), calls).await;
    assert_eq!(result.outcomes.iter().map(|o| o.status).collect::<Vec<_>>(), [Status::Success, Status::Success]);
    let ids: Vec<_> = result.messages().iter().map(|m| (m.role, m.tool_call_id.clone().unwrap())).collect();
    assert_eq!(ids, [(Role::Tool, "call_Xk2p9".to_string()), (Role::Tool, "toolu_01A".to_string())]);
    assert!(result.messages()[1].content.contains("\"value\":9.0"), "{}", result.messages()[1].content);
}

#[tokio::test]
async fn inputs_given_as_text_run_as_the_one_parameter_they_can_be_for() {
    // LangChain's ReAct agent and its JSON agent, with tools of one input.
    let host = TestHost::new(&[CALC, DIRTREE], "").await;
    let reply = "Thought: I will work it out.\nAction: calculate\nAction Input: \"6*7\"\n\
                 Action: dir_tree\nAction Input: /tree\nObservation:";
    let declared = Declared::new(["calculate", "dir_tree"]);
    let parsed = ProtocolId::Auto.protocol().parse(reply, &declared);
    assert_eq!(parsed.content, "Thought: I will work it out.");
    let fenced = "Action:\n```json\n{\"action\": \"calculate\", \"action_input\": \"2+3\"}\n```";
    let mut ids = toolhost::types::CallIds::new();
    let mut calls = ToolCall::from_reply_in(reply, &parsed.calls, &mut ids);
    let more = ProtocolId::Auto.protocol().parse(fenced, &declared);
    calls.extend(ToolCall::from_reply_in(fenced, &more.calls, &mut ids));
    let result = pipeline(&host, Arc::new(AllowAll)).run(&Turn::direct(ProtocolId::Auto), calls).await;
    let statuses: Vec<_> = result.outcomes.iter().map(|o| o.status).collect();
    // `dir_tree` has three optional parameters: the text could be any.
    assert_eq!(statuses, [Status::Success, Status::InvalidArgs, Status::Success], "{:?}", result.outcomes);
    assert!(result.outcomes[0].output.contains("\"value\":42"), "{}", result.outcomes[0].output);
    assert!(result.outcomes[2].output.contains("\"value\":5"), "{}", result.outcomes[2].output);
    assert!(
        result.outcomes[1].output.starts_with("`dir_tree` takes its arguments as a JSON object of `path` (string), "),
        "{}",
        result.outcomes[1].output
    );
}

#[tokio::test]
async fn calls_are_checked_coerced_and_refused_in_order_with_their_reasons() {
    let host = TestHost::new(&[CALC, DIRTREE], "").await;
    let calls = vec![
        call("a", "calculate", json!({ "expression": "1+1" })),
        call("b", "calculat", json!({ "expression": "1+1" })),
        call("c", "calculate", json!({})),
        call("d", "dir_tree", json!({ "max_depth": "two" })),
    ];
    let result = pipeline(&host, Arc::new(AllowAll)).run(&Turn::direct(ProtocolId::JsonBlock), calls).await;
    let statuses: Vec<_> = result.outcomes.iter().map(|o| (o.id.as_str(), o.status)).collect();
    assert_eq!(
        statuses,
        [("a", Status::Success), ("b", Status::NotFound), ("c", Status::InvalidArgs), ("d", Status::InvalidArgs)]
    );
    assert_eq!(result.outcomes[1].output, "no tool named `calculat` is loaded; did you mean `calculate`?");
    assert!(
        result.outcomes[2].output.starts_with("`calculate` needs the parameter `expression` (string)"),
        "{}",
        result.outcomes[2].output
    );
    assert_eq!(result.messages().len(), 1, "json-block results are one user message");
    let content = &result.messages()[0].content;
    assert!(content.contains(r#""toolCallId":"b""#) && content.contains("not-found: no tool named"), "{content}");
}

#[tokio::test]
async fn an_agent_only_calls_the_tools_it_is_offered() {
    let host = TestHost::new(&[CALC, FILES], "").await;
    let mut config = toolhost::ToolCallConfig::on();
    config.tool_toggles.insert("calculate".into(), false);
    let turn = Turn::for_agent("coder", config.clone());
    let result = pipeline(&host, Arc::new(AllowAll)).run(&turn, vec![call("1", "calculate", json!({ "expression": "1" }))]).await;
    assert_eq!(result.outcomes[0].status, Status::NotFound, "{}", result.outcomes[0].output);
    config.enabled = false;
    let off = Turn::for_agent("coder", config);
    let result = pipeline(&host, Arc::new(AllowAll)).run(&off, vec![call("1", "list_files", json!({}))]).await;
    assert_eq!(result.outcomes[0].status, Status::Denied);
    assert_eq!(result.outcomes[0].output, "tool calling is off for agent `coder`");
}

#[tokio::test]
async fn a_rejected_result_never_appears_in_any_message() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("secret.txt"), "the launch code is 0000").unwrap();
    let policy = format!(
        "[plugins.files]\nfile = \"files.wasm\"\ndirs = {{ \"/workspace\" = {{ host = {:?} }} }}\n",
        workspace.path().display().to_string()
    );
    let host = TestHost::new(&[FILES], &policy).await;
    let approver = Arc::new(RejectResults::default());
    for protocol in [ProtocolId::Vcp, ProtocolId::JsonBlock, ProtocolId::XmlTag, ProtocolId::Native] {
        let calls = vec![call("r1", "read_file", json!({ "path": "secret.txt" }))];
        let result = pipeline(&host, approver.clone()).run(&Turn::direct(protocol), calls).await;
        assert_eq!(result.outcomes[0].status, Status::ResultRejected, "{protocol}");
        assert_eq!(result.outcomes[0].output, "a person withheld the result: it holds a secret");
        let everything: Vec<Message> = result.messages();
        assert!(!everything.is_empty());
        for message in &everything {
            assert!(!message.content.contains("launch code"), "{protocol}: {}", message.content);
        }
        assert!(!result.summary().contains("launch code"));
    }
    assert_eq!(approver.results_seen.load(Ordering::SeqCst), 4, "read_file declares result approval");
}

#[tokio::test]
async fn the_error_and_invalid_args_text_of_a_tool_with_result_approval_are_held_for_approval_too() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("launch-code-0000.txt"), vec![b'x'; 300 << 10]).unwrap();
    let policy = format!(
        "[plugins.files]\nfile = \"files.wasm\"\ndirs = {{ \"/workspace\" = {{ host = {:?} }} }}\n",
        workspace.path().display().to_string()
    );
    let host = TestHost::new(&[FILES], &policy).await;
    // Too large to read, and outside the workspace: the plugin's error and
    // invalid-arguments texts both carry what it was given.
    let calls = || {
        vec![
            call("r1", "read_file", json!({ "path": "launch-code-0000.txt" })),
            call("r2", "read_file", json!({ "path": "../launch-code-0000.txt" })),
        ]
    };
    let passing = pipeline(&host, Arc::new(AllowAll)).run(&Turn::direct(ProtocolId::Native), calls()).await;
    let statuses: Vec<Status> = passing.outcomes.iter().map(|o| o.status).collect();
    assert_eq!(statuses, [Status::Error, Status::InvalidArgs], "{:?}", passing.outcomes);
    assert!(passing.outcomes.iter().all(|o| o.output.contains("launch-code")), "{:?}", passing.outcomes);

    let approver = Arc::new(RejectResults::default());
    let result = pipeline(&host, approver.clone()).run(&Turn::direct(ProtocolId::Native), calls()).await;
    assert_eq!(approver.results_seen.load(Ordering::SeqCst), 2, "both were shown for approval");
    for outcome in &result.outcomes {
        assert_eq!(outcome.status, Status::ResultRejected);
        assert_eq!(outcome.output, "a person withheld the result: it holds a secret");
    }
    assert!(result.messages().iter().all(|m| !m.content.contains("launch-code")), "{:?}", result.messages());

    // Nobody to approve (a node nobody watches, moderate calls allowed):
    // nothing of them reaches the model, and it says why.
    let mut unattended = toolhost::vcp::Unattended::default();
    unattended.moderate = toolhost::vcp::UnattendedAction::Allow;
    let nobody = Arc::new(toolhost::vcp::UnattendedApprover::new(unattended));
    let result = pipeline(&host, nobody).run(&Turn::direct(ProtocolId::Native), calls()).await;
    for outcome in &result.outcomes {
        assert_eq!(outcome.status, Status::ResultRejected);
        assert!(outcome.output.contains("nobody could give it"), "{}", outcome.output);
    }
    assert!(result.messages().iter().all(|m| !m.content.contains("launch-code")), "{:?}", result.messages());
}

/// More worker threads than the cap, so that a broken cap would show.
#[tokio::test(flavor = "multi_thread", worker_threads = 16)]
async fn a_thousand_parallel_calls_under_a_cap_of_eight_each_return_their_own_result() {
    let host = TestHost::new(&[CALC], "").await;
    let executor = Executor::with_concurrency(host.registry.clone(), 8);
    let calls: Vec<ToolCall> =
        (0..1_000).map(|i| call(&format!("c{i}"), "calculate", json!({ "expression": format!("{i} * 3") }))).collect();
    let mut options = RunOptions::default();
    options.parallel = true;
    let outcomes = executor.run_all(&calls, &options).await;
    assert_eq!(outcomes.len(), 1_000);
    for (i, outcome) in outcomes.iter().enumerate() {
        assert_eq!(outcome.id, format!("c{i}"));
        assert_eq!(outcome.output, json!({ "expression": format!("{i} * 3"), "value": (i * 3) as f64 }).to_string());
    }
    assert!(executor.peak_concurrency() <= 8, "peak {}", executor.peak_concurrency());
    assert!(executor.peak_concurrency() >= 2, "the calls did run in parallel: peak {}", executor.peak_concurrency());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_batch_stops_a_spinning_plugin_and_keeps_finished_results() {
    let host = TestHost::new(
        &[HOSTILE, CALC],
        "[plugins.hostile]\nfile = \"hostile.wasm\"\nlimits = { fuel = 1_000_000_000_000, timeout_ms = 60_000 }\n",
    )
    .await;
    let calls = vec![
        call("done", "calculate", json!({ "expression": "1+1" })),
        call("spin", "spin", json!({})),
        call("later", "calculate", json!({ "expression": "2+2" })),
    ];
    let (report, mut finished) = tokio::sync::mpsc::unbounded_channel();
    let mut options = RunOptions::default();
    options.report = Some(report);
    let cancel = options.cancel.clone();
    let executor = host.executor.clone();
    let batch = tokio::spawn(async move { executor.run_all(&calls, &options).await });
    let (first, _) = tokio::time::timeout(Duration::from_secs(30), finished.recv()).await.unwrap().unwrap();
    assert_eq!(first, 0, "the first call finishes first");
    // The spinner starts as the first call ends; no state says when it is
    // inside its loop, so it is given a moment.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let cancelled_at = Instant::now();
    cancel.cancel();
    let outcomes = batch.await.unwrap();
    let stopped_after = cancelled_at.elapsed();
    assert_eq!(outcomes[0].status, Status::Success, "a finished result is kept");
    assert_eq!(outcomes[1].status, Status::Cancelled, "{}", outcomes[1].output);
    assert_ne!(outcomes[1].output, "cancelled before it started", "the spinner was running");
    assert_eq!(outcomes[2].status, Status::Cancelled, "{}", outcomes[2].output);
    assert_eq!(outcomes[2].output, "cancelled before it started");
    assert!(stopped_after < Duration::from_millis(50), "stopped {stopped_after:?} after the cancel");
}
