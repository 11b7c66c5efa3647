//! One behaviour for panics, cancellation and denials on every path: a
//! host-side panic while running a call is that call's error outcome,
//! serially as in parallel; calls cancelled before they start are
//! `cancelled`; a rule's denial decided before a cancel stays `denied`.

use crate::built::{CALC, FILES};
use crate::support::TestHost;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use toolhost::{
    Approvals, Approver, CallDecision, CancellationToken, PendingCall, Pipeline, ProtocolId, ResultDecision, Status, ToolCall,
    ToolOutcome, ToolSpec, Turn, executor::RunOptions,
};

/// A tracing layer, as an embedder might install, that panics on the first
/// event saying a call starts: a panic in host code while a call runs.
struct PanicsOnFirstCall(AtomicUsize);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for PanicsOnFirstCall {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        if message.0.starts_with("calling `") && self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("the embedder's log layer failed");
        }
    }
}

#[tokio::test]
async fn a_host_panic_serially_as_in_parallel_is_that_calls_error_and_the_next_call_runs() {
    use tracing_subscriber::layer::SubscriberExt;
    let host = TestHost::new(&[CALC], "").await;
    let calls: Vec<ToolCall> = ["1+1", "2+2"]
        .iter()
        .enumerate()
        .map(|(i, e)| ToolCall::new(format!("c{i}"), "calculate", json!({ "expression": e })))
        .collect();
    for parallel in [false, true] {
        // On this thread only: calls under `#[tokio::test]`, and the
        // workers they spawn, run on it.
        let layer = PanicsOnFirstCall(AtomicUsize::new(0));
        let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
        let mut options = RunOptions::default();
        options.parallel = parallel;
        let outcomes = host.executor.run_all(&calls, &options).await;
        let (panicked, other): (Vec<_>, Vec<_>) = outcomes.iter().partition(|o| o.status == Status::Error);
        assert_eq!((panicked.len(), other.len()), (1, 1), "parallel {parallel}: {outcomes:?}");
        assert!(panicked[0].output.contains("panicked"), "{}", panicked[0].output);
        assert_eq!(other[0].status, Status::Success, "parallel {parallel}: {}", other[0].output);
    }
}

#[tokio::test]
async fn parallel_calls_cancelled_before_they_start_are_cancelled() {
    let host = TestHost::new(&[CALC], "").await;
    let calls: Vec<ToolCall> =
        (0..5).map(|i| ToolCall::new(format!("c{i}"), "calculate", json!({ "expression": "1" }))).collect();
    let mut options = RunOptions::default();
    options.parallel = true;
    options.cancel.cancel();
    let outcomes = host.executor.run_all(&calls, &options).await;
    for outcome in &outcomes {
        assert_eq!(
            (outcome.status, outcome.output.as_str()),
            (Status::Cancelled, "cancelled before it started"),
            "{}",
            outcome.id
        );
    }
}

/// Cancels the turn while asked, and never answers.
struct CancelsWhileAsked(CancellationToken);

#[async_trait::async_trait]
impl Approver for CancelsWhileAsked {
    async fn approve_calls(&self, _calls: &[PendingCall]) -> Vec<CallDecision> {
        self.0.cancel();
        std::future::pending().await
    }

    async fn approve_result(&self, _outcome: &ToolOutcome, _tool: &ToolSpec) -> ResultDecision {
        ResultDecision::Pass
    }
}

#[tokio::test]
async fn a_rule_denial_stays_denied_when_the_turn_is_cancelled_while_a_person_decides() {
    let workspace = tempfile::tempdir().unwrap();
    let policy = format!(
        "[plugins.files]\nfile = \"files.wasm\"\ndirs = {{ \"/workspace\" = {{ host = {:?}, access = \"read-write\" }} }}\n\
         [[approval.rules]]\naction = \"deny\"\ntool = \"write_file\"\nreason = \"writes are off today\"\n",
        workspace.path().display().to_string()
    );
    let host = TestHost::new(&[FILES], &policy).await;
    let turn = Turn::direct(ProtocolId::JsonBlock);
    let approver = Arc::new(CancelsWhileAsked(turn.cancel.clone()));
    let pipeline = Pipeline::new(host.executor.clone(), Arc::new(Approvals::new(&host.config.approval)), approver);
    let calls = vec![
        ToolCall::new("w", "write_file", json!({ "path": "a.txt", "content": "x" })),
        ToolCall::new("l", "list_files", json!({})),
    ];
    let result = pipeline.run(&turn, calls).await;
    let [write, list] = &result.outcomes[..] else { panic!("two outcomes") };
    assert_eq!((write.status, write.output.as_str()), (Status::Denied, "writes are off today"));
    assert_eq!((list.status, list.output.as_str()), (Status::Cancelled, "cancelled while waiting for approval"));
    assert!(!workspace.path().join("a.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_dropped_by_its_caller_stops_its_parallel_calls() {
    let host = TestHost::new(&[crate::built::HOSTILE], "").await;
    // Two slots: while the dropped turn's calls held them, nothing else could run.
    let executor = toolhost::Executor::with_concurrency(host.registry.clone(), 2);
    let pipeline = Pipeline::new(executor.clone(), Arc::new(Approvals::new(&host.config.approval)), Arc::new(toolhost::DenyAll));
    let mut config = toolhost::ToolCallConfig::on();
    config.parallel_execution = true;
    let waits: Vec<ToolCall> = (0..2).map(|i| ToolCall::new(format!("w{i}"), "wait_ms", json!({ "ms": 5000 }))).collect();
    let turn = Turn::for_agent("embedder", config);
    // An embedder's timeout around the turn drops it.
    let dropped = tokio::time::timeout(std::time::Duration::from_millis(300), pipeline.run(&turn, waits)).await;
    assert!(dropped.is_err(), "the turn was still running at its caller's timeout");
    let started = std::time::Instant::now();
    let quick = executor.call(&ToolCall::new("q", "wait_ms", json!({ "ms": 10 }))).await;
    assert_eq!(quick.status, Status::Success, "{}", quick.output);
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "the slots were free at once: {:?}", started.elapsed());
}
