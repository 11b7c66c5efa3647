//! Fresh instances kept ready ahead of their calls: each serves one call;
//! one made for other limits, or for a plugin since changed on disk, is
//! dropped unused; what is kept stays within its bounds; and on one thread
//! the answer is handed on before the next instance is made.

use crate::built::{CALC, HOSTILE};
use crate::support::policy_in;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost::executor::RunOptions;
use toolhost::sandbox::{InstancesAhead, SandboxSize};
use toolhost::{Executor, Registry, Sandbox, Status, ToolCall};

/// `calc` and `hostile` over `sandbox`; the directory, which must outlive
/// the registry.
async fn host(sandbox: Arc<Sandbox>) -> (tempfile::TempDir, Arc<Registry>, Executor) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    std::fs::copy(CALC.path(), dir.path().join("plugins/calc.wasm")).unwrap();
    std::fs::copy(HOSTILE.path(), dir.path().join("plugins/hostile.wasm")).unwrap();
    let registry = Arc::new(Registry::load_in(sandbox, policy_in(dir.path(), "")).await.expect("a registry"));
    let executor = Executor::new(registry.clone());
    (dir, registry, executor)
}

fn sandbox(ahead: u32) -> Arc<Sandbox> {
    Arc::new(Sandbox::with_size(SandboxSize::pooled(8, 1).with_instances_ahead(ahead)).unwrap())
}

/// Wait until what the sandbox keeps satisfies `done`; what it keeps then.
async fn until(sandbox: &Sandbox, what: &str, done: impl Fn(&InstancesAhead) -> bool) -> InstancesAhead {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = sandbox.instances_ahead();
        if done(&now) {
            return now;
        }
        assert!(Instant::now() < deadline, "never {what}: {now:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn count_calls(id: usize) -> ToolCall {
    ToolCall::new(format!("count-{id}"), "count_calls", json!({}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_runs_in_an_instance_no_call_used_though_it_was_made_ahead() {
    let sandbox = sandbox(2);
    let (_dir, _registry, executor) = host(sandbox.clone()).await;
    for id in 0..20 {
        let outcome = executor.call(&count_calls(id)).await;
        assert_eq!(outcome.status, Status::Success, "{}", outcome.output);
        // The plugin counts its calls in a static: an instance used twice
        // would say 2.
        assert_eq!(outcome.output, r#"{"calls":1}"#, "call {id} ran in a used instance");
        until(&sandbox, "made an instance ready for the next call", |kept| kept.made == id as u64 + 1).await;
    }
    let kept = sandbox.instances_ahead();
    assert_eq!(kept.taken, 19, "every call after the first took one made ahead: {kept:?}");
    assert_eq!((kept.made, kept.discarded, kept.failed), (20, 0, 0), "{kept:?}");

    // Calls at once each take their own.
    let calls: Vec<ToolCall> = (100..108).map(count_calls).collect();
    let mut options = RunOptions::default();
    options.parallel = true;
    for outcome in executor.run_all(&calls, &options).await {
        assert_eq!(outcome.output, r#"{"calls":1}"#, "{}", outcome.id);
    }
    // A batch goes on to its next call at once: its calls make none ahead
    // (that would be work on a busy host, for an instance its next call
    // could not wait for).
    let kept = sandbox.instances_ahead();
    assert_eq!(kept.made, 20, "a batch's calls made instances ahead: {kept:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_hosts_calls_keep_to_one_engine_and_each_finds_its_instance_there() {
    // Two engines: calls taking turns between them found the one made
    // after the last call in the other engine, and each engine kept one.
    let sandbox = Arc::new(Sandbox::with_size(SandboxSize::pooled(8, 2).with_instances_ahead(4)).unwrap());
    let (_dir, _registry, executor) = host(sandbox.clone()).await;
    for id in 0..10 {
        let outcome = executor.call(&count_calls(id)).await;
        assert_eq!(outcome.output, r#"{"calls":1}"#, "call {id} ran in a used instance");
        until(&sandbox, "made an instance ready for the next call", |kept| kept.made == id as u64 + 1).await;
    }
    let kept = sandbox.instances_ahead();
    assert_eq!(kept.taken, 9, "every call after the first took the one its last call made: {kept:?}");
    assert_eq!(kept.held, 1, "one engine's instance kept, not one in each: {kept:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_made_for_other_limits_or_a_plugin_changed_since_is_dropped_unused() {
    let sandbox = sandbox(2);
    let (dir, registry, executor) = host(sandbox.clone()).await;
    let calculate = ToolCall::new("c", "calculate", json!({ "expression": "6 * 7" }));
    assert_eq!(executor.call(&calculate).await.status, Status::Success);
    until(&sandbox, "made an instance ready", |kept| kept.made == 1).await;

    // An agent's shorter deadline makes other limits: the instance made
    // under the plugin's own is not used.
    let mut shorter = RunOptions::default();
    shorter.timeout = Some(Duration::from_millis(900));
    let outcome = executor.run(&calculate, &shorter).await;
    assert_eq!(outcome.status, Status::Success, "{}", outcome.output);
    let kept = until(&sandbox, "made one for the shorter deadline", |kept| kept.made == 2).await;
    assert_eq!((kept.taken, kept.discarded), (0, 1), "{kept:?}");
    assert_eq!(executor.run(&calculate, &shorter).await.status, Status::Success);
    assert_eq!(sandbox.instances_ahead().taken, 1, "the one made for those limits is used");
    until(&sandbox, "made another", |kept| kept.made == 3 && kept.held == 1).await;

    // The component changes on disk: the instance of the old one goes with
    // it, and the next call runs the new one.
    let mut changed = std::fs::read(CALC.path()).unwrap();
    changed.extend_from_slice(&[0, 6, 5, b'n', b'o', b't', b'e', b'!']); // a custom section
    std::fs::write(dir.path().join("plugins/calc.wasm"), changed).unwrap();
    let event = registry.reload().await.unwrap();
    assert_eq!(event.changed, ["calc.wasm"], "{event:?}");
    until(&sandbox, "dropped the old plugin's instance", |kept| kept.held == 0).await;
    let before = sandbox.instances_ahead();
    assert_eq!(executor.call(&calculate).await.status, Status::Success);
    let after = until(&sandbox, "made one of the new plugin", |kept| kept.made == before.made + 1).await;
    assert_eq!(after.taken, before.taken, "no instance of the old plugin served the new one's call: {after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_kept_stays_within_its_bounds_and_none_when_turned_off() {
    let sandbox = sandbox(1);
    let (_dir, _registry, executor) = host(sandbox.clone()).await;
    for round in 0..5 {
        assert_eq!(executor.call(&count_calls(round)).await.status, Status::Success);
        let calculate = ToolCall::new(format!("c{round}"), "calculate", json!({ "expression": "1 + 1" }));
        assert_eq!(executor.call(&calculate).await.status, Status::Success);
        let kept = sandbox.instances_ahead();
        assert!(kept.held <= 1 && kept.limit == 1, "two plugins, one place: {kept:?}");
    }

    let off = self::sandbox(0);
    let (_dir, _registry, executor) = host(off.clone()).await;
    for id in 0..3 {
        assert_eq!(executor.call(&count_calls(id)).await.output, r#"{"calls":1}"#);
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let kept = off.instances_ahead();
    assert_eq!((kept.held, kept.made, kept.taken), (0, 0, 0), "{kept:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_kept_ready_never_takes_what_a_running_call_needs() {
    // Two call slots, one instance kept: calc's, made after its call. Two
    // calls of another plugin then fill both slots, each needing a pool
    // slot and a fiber stack of its own beside the kept instance's.
    let sandbox = Arc::new(Sandbox::with_size(SandboxSize::pooled(2, 1).with_instances_ahead(1)).unwrap());
    let (_dir, registry, executor) = host(sandbox.clone()).await;
    let calculate = ToolCall::new("c", "calculate", json!({ "expression": "1 + 1" }));
    assert_eq!(executor.call(&calculate).await.status, Status::Success);
    until(&sandbox, "made calc's next instance", |kept| kept.made == 1 && kept.held == 1).await;
    let both = Executor::with_concurrency(registry, 2);
    let waits: Vec<ToolCall> = (0..2).map(|i| ToolCall::new(format!("w{i}"), "wait_ms", json!({ "ms": 300 }))).collect();
    let mut options = RunOptions::default();
    options.parallel = true;
    for outcome in both.run_all(&waits, &options).await {
        assert_eq!(outcome.status, Status::Success, "{}: {}", outcome.id, outcome.output);
    }
    assert_eq!(executor.call(&calculate).await.status, Status::Success, "and calc's call takes the kept instance");
    assert_eq!(sandbox.instances_ahead().taken, 1);
}

/// On one thread, the tasks a call's answer wakes (a door writing it out)
/// run before the instance for the next call is made, not after.
#[tokio::test(flavor = "current_thread")]
async fn on_one_thread_the_answer_is_handed_on_before_the_next_instance_is_made() {
    let sandbox = sandbox(2);
    let (_dir, _registry, executor) = host(sandbox.clone()).await;
    assert_eq!(executor.call(&count_calls(0)).await.status, Status::Success);
    until(&sandbox, "made an instance ready for the second call", |kept| kept.made == 1).await;

    let (answer, answered) = tokio::sync::oneshot::channel::<()>();
    let writer = tokio::spawn({
        let sandbox = sandbox.clone();
        async move {
            answered.await.expect("an answer");
            sandbox.instances_ahead().made
        }
    });
    tokio::task::yield_now().await; // the writer waits for the answer
    let outcome = executor.call(&count_calls(1)).await;
    assert_eq!(outcome.status, Status::Success, "{}", outcome.output);
    answer.send(()).expect("the writer waits");
    let made_when_written = writer.await.expect("the writer ran");
    assert_eq!(made_when_written, 1, "the next instance was made before the answer was handed on");
    until(&sandbox, "made the instance for the third call", |kept| kept.made == 2).await;
}
