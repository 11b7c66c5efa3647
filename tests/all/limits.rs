//! Every limit, hit by a hostile plugin; the outcome names the limit and its
//! value, and the host answers the next call normally.

use crate::support::TestHost;
use serde_json::json;
use toolhost::{Status, ToolOutcome, types::FailureKind};

/// The failure's kind, and the limit it names with its value.
fn limit_hit(outcome: &ToolOutcome) -> (FailureKind, String, u64) {
    let failure = outcome.failure.as_ref().unwrap_or_else(|| panic!("no failure: {}", outcome.output));
    let limit = failure.limit.as_ref().unwrap_or_else(|| panic!("no limit: {failure:?}"));
    (failure.kind, limit.name.clone(), limit.value)
}

/// After a hostile call, an ordinary call on the same host still works.
async fn next_call_works(host: &TestHost) {
    let outcome = host.call("calculate", json!({ "expression": "6 * 7" })).await;
    assert_eq!(outcome.status, Status::Success, "{}", outcome.output);
    assert!(outcome.output.contains("42"), "{}", outcome.output);
}

async fn hostile(policy: &str) -> TestHost {
    TestHost::new(&["hostile", "calc"], policy).await
}

#[tokio::test]
async fn an_infinite_loop_runs_out_of_fuel() {
    let host = hostile("[plugins.hostile]\nlimits = { fuel = 50_000_000 }\n").await;
    let outcome = host.call("spin", json!({})).await;
    assert_eq!(outcome.status, Status::OutOfFuel);
    assert_eq!(outcome.output, "out of fuel after 50 000 000 units");
    assert_eq!(outcome.fuel_used, 50_000_000);
    assert_eq!(limit_hit(&outcome), (FailureKind::OutOfFuel, "fuel".into(), 50_000_000));
    let failure = outcome.failure.as_ref().unwrap();
    assert_eq!((failure.plugin.as_deref(), failure.plugin_version.is_some()), (Some("hostile"), true));
    next_call_works(&host).await;
}

#[tokio::test]
async fn an_infinite_loop_is_stopped_at_the_deadline() {
    // Bound to the file: an unbound section could only lower the fuel.
    let host =
        hostile("[plugins.hostile]\nfile = \"hostile.wasm\"\nlimits = { fuel = 1_000_000_000_000, timeout_ms = 200 }\n").await;
    let outcome = host.call("spin", json!({})).await;
    assert_eq!(outcome.status, Status::TimedOut);
    assert_eq!(outcome.output, "timed out after 200 ms");
    assert_eq!(limit_hit(&outcome), (FailureKind::TimedOut, "timeout_ms".into(), 200));
    assert!(outcome.duration.as_millis() < 2_000, "stopped promptly, took {:?}", outcome.duration);
    next_call_works(&host).await;
}

#[tokio::test]
async fn a_call_blocked_in_the_host_is_stopped_at_the_deadline() {
    let host = hostile("[plugins.hostile]\nlimits = { timeout_ms = 200 }\n").await;
    let outcome = host.call("sleep", json!({ "seconds": 30 })).await;
    assert_eq!(outcome.status, Status::TimedOut);
    assert_eq!(outcome.output, "timed out after 200 ms");
    assert!(outcome.duration.as_secs() < 5, "took {:?}", outcome.duration);
    next_call_works(&host).await;
}

#[tokio::test]
async fn a_memory_bomb_hits_the_memory_limit() {
    let host = hostile("[plugins.hostile]\nlimits = { memory_mib = 16 }\n").await;
    let outcome = host.call("exhaust_memory", json!({})).await;
    assert_eq!(outcome.status, Status::LimitExceeded);
    assert_eq!(outcome.output, "memory limit 16 MiB exceeded");
    assert_eq!(limit_hit(&outcome), (FailureKind::MemoryLimit, "memory_bytes".into(), 16 << 20));
    next_call_works(&host).await;
}

#[tokio::test]
async fn unbounded_recursion_hits_the_stack_limit() {
    let host = hostile("").await;
    let outcome = host.call("recurse", json!({})).await;
    assert_eq!(outcome.status, Status::LimitExceeded);
    assert_eq!(outcome.output, "stack limit 512 KiB exceeded");
    assert_eq!(limit_hit(&outcome), (FailureKind::StackOverflow, "stack_bytes".into(), 512 << 10));
    next_call_works(&host).await;
}

#[tokio::test]
async fn a_flood_of_output_hits_the_output_limit() {
    let host = hostile("[plugins.hostile]\nlimits = { output_kib = 256 }\n").await;
    let outcome = host.call("flood_output", json!({ "mib": 4 })).await;
    assert_eq!(outcome.status, Status::LimitExceeded);
    assert_eq!(outcome.output, "output of 4 MiB exceeds the limit of 256 KiB");
    assert_eq!(limit_hit(&outcome), (FailureKind::OutputTooLarge, "output_bytes".into(), 256 << 10));
    next_call_works(&host).await;
}

#[tokio::test]
async fn a_panic_is_a_trap_with_the_panic_message() {
    let host = hostile("").await;
    let outcome = host.call("panic", json!({})).await;
    assert_eq!(outcome.status, Status::Error);
    assert!(outcome.output.starts_with("plugin trapped: "), "{}", outcome.output);
    assert!(outcome.output.contains("hostile plugin panicked on purpose"), "{}", outcome.output);
    next_call_works(&host).await;
}

#[tokio::test]
async fn a_chatty_plugin_is_not_failed_by_its_output_cap() {
    let host = hostile("").await;
    let outcome = host.call("chatter", json!({ "kib": 1024 })).await;
    assert_eq!(outcome.status, Status::Success, "{}", outcome.output);
    assert_eq!(outcome.output, "done");
}

#[tokio::test]
async fn too_few_instances_is_named() {
    let host = hostile("[plugins.hostile]\nlimits = { instances = 1 }\n").await;
    let outcome = host.call("count_calls", json!({})).await;
    assert_eq!(outcome.status, Status::LimitExceeded);
    assert_eq!(outcome.output, "instances limit 1 exceeded");
    assert_eq!(limit_hit(&outcome), (FailureKind::ResourceLimit, "instances".into(), 1));
    next_call_works(&host).await;
}

#[tokio::test]
async fn too_few_tables_or_table_elements_are_named() {
    for (limit, message) in [("tables = 1", "tables limit 1 exceeded"), ("table_elements = 1", "table elements limit 1 exceeded")]
    {
        let host = hostile(&format!("[plugins.hostile]\nlimits = {{ {limit} }}\n")).await;
        let outcome = host.call("count_calls", json!({})).await;
        assert_eq!(outcome.status, Status::LimitExceeded, "{limit}");
        assert_eq!(outcome.output, message);
        next_call_works(&host).await;
    }
}

#[tokio::test]
async fn each_call_gets_a_fresh_instance() {
    let host = hostile("").await;
    for _ in 0..3 {
        let outcome = host.call("count_calls", json!({})).await;
        assert_eq!(outcome.status, Status::Success);
        assert_eq!(outcome.output, r#"{"calls":1}"#, "a static survived between calls");
    }
}
