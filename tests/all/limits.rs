//! Every limit, hit by a hostile plugin; the outcome names the limit and its
//! value, and the host answers the next call normally.

use crate::built::{CALC, HOSTILE};
use crate::support::TestHost;
use serde_json::json;
use std::time::Duration;
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
    TestHost::new(&[HOSTILE, CALC], policy).await
}

/// One limit hit by one hostile call: the policy that sets the limit, the
/// call, and what its outcome must say.
struct Hit {
    policy: &'static str,
    tool: &'static str,
    /// The arguments, as JSON text.
    args: &'static str,
    status: Status,
    output: &'static str,
    /// The failure's kind and the limit it names, with its value.
    limit: (FailureKind, &'static str, u64),
    /// How soon the call must be stopped.
    within: Duration,
}

/// Make the call of `hit` on a fresh host and check its outcome, then that
/// the host answers an ordinary call; the outcome, for checks of its own.
async fn hits(hit: Hit) -> ToolOutcome {
    let host = hostile(hit.policy).await;
    let outcome = host.call(hit.tool, serde_json::from_str(hit.args).expect("the arguments are JSON")).await;
    assert_eq!(outcome.status, hit.status, "{}", outcome.output);
    assert_eq!(outcome.output, hit.output);
    assert_eq!(limit_hit(&outcome), (hit.limit.0, hit.limit.1.into(), hit.limit.2));
    let failure = outcome.failure.as_ref().expect("a failure");
    assert_eq!((failure.plugin.as_deref(), failure.plugin_version.is_some()), (Some("hostile"), true));
    assert!(outcome.duration < hit.within, "stopped within {:?}, took {:?}", hit.within, outcome.duration);
    next_call_works(&host).await;
    outcome
}

/// A test per row: each limit in the table below.
macro_rules! limit_tests {
    ($($(#[$doc:meta])* $name:ident: $hit:expr;)*) => {
        $(
            $(#[$doc])*
            #[tokio::test]
            async fn $name() {
                hits($hit).await;
            }
        )*
    };
}

/// A generous bound for calls that a limit other than time stops.
const PROMPTLY: Duration = Duration::from_secs(30);

limit_tests! {
    // Bound to the file: an unbound section could only lower the fuel.
    an_infinite_loop_is_stopped_at_the_deadline: Hit {
        policy: "[plugins.hostile]\nfile = \"hostile.wasm\"\nlimits = { fuel = 1_000_000_000_000, timeout_ms = 200 }\n",
        tool: "spin",
        args: "{}",
        status: Status::TimedOut,
        output: "timed out after 200 ms",
        limit: (FailureKind::TimedOut, "timeout_ms", 200),
        within: Duration::from_secs(2),
    };
    a_call_blocked_in_the_host_is_stopped_at_the_deadline: Hit {
        policy: "[plugins.hostile]\nlimits = { timeout_ms = 200 }\n",
        tool: "sleep",
        args: r#"{ "seconds": 30 }"#,
        status: Status::TimedOut,
        output: "timed out after 200 ms",
        limit: (FailureKind::TimedOut, "timeout_ms", 200),
        within: Duration::from_secs(5),
    };
    a_memory_bomb_hits_the_memory_limit: Hit {
        policy: "[plugins.hostile]\nlimits = { memory_mib = 16 }\n",
        tool: "exhaust_memory",
        args: "{}",
        status: Status::LimitExceeded,
        output: "memory limit 16 MiB exceeded",
        limit: (FailureKind::MemoryLimit, "memory_bytes", 16 << 20),
        within: PROMPTLY,
    };
    unbounded_recursion_hits_the_stack_limit: Hit {
        policy: "",
        tool: "recurse",
        args: "{}",
        status: Status::LimitExceeded,
        output: "stack limit 512 KiB exceeded",
        limit: (FailureKind::StackOverflow, "stack_bytes", 512 << 10),
        within: PROMPTLY,
    };
    a_flood_of_output_hits_the_output_limit: Hit {
        policy: "[plugins.hostile]\nlimits = { output_kib = 256 }\n",
        tool: "flood_output",
        args: r#"{ "mib": 4 }"#,
        status: Status::LimitExceeded,
        output: "output of 4 MiB exceeds the limit of 256 KiB",
        limit: (FailureKind::OutputTooLarge, "output_bytes", 256 << 10),
        within: PROMPTLY,
    };
    too_few_instances_is_named: Hit {
        policy: "[plugins.hostile]\nlimits = { instances = 1 }\n",
        tool: "count_calls",
        args: "{}",
        status: Status::LimitExceeded,
        output: "instances limit 1 exceeded",
        limit: (FailureKind::ResourceLimit, "instances", 1),
        within: PROMPTLY,
    };
    too_few_tables_is_named: Hit {
        policy: "[plugins.hostile]\nlimits = { tables = 1 }\n",
        tool: "count_calls",
        args: "{}",
        status: Status::LimitExceeded,
        output: "tables limit 1 exceeded",
        limit: (FailureKind::ResourceLimit, "tables", 1),
        within: PROMPTLY,
    };
    too_few_table_elements_is_named: Hit {
        policy: "[plugins.hostile]\nlimits = { table_elements = 1 }\n",
        tool: "count_calls",
        args: "{}",
        status: Status::LimitExceeded,
        output: "table elements limit 1 exceeded",
        limit: (FailureKind::ResourceLimit, "table_elements", 1),
        within: PROMPTLY,
    };
}

/// The fuel limit, in the table's form, and the fuel the outcome reports.
#[tokio::test]
async fn an_infinite_loop_runs_out_of_fuel() {
    let outcome = hits(Hit {
        policy: "[plugins.hostile]\nlimits = { fuel = 50_000_000 }\n",
        tool: "spin",
        args: "{}",
        status: Status::OutOfFuel,
        output: "out of fuel after 50 000 000 units",
        limit: (FailureKind::OutOfFuel, "fuel", 50_000_000),
        within: PROMPTLY,
    })
    .await;
    assert_eq!(outcome.fuel_used, 50_000_000);
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
async fn each_call_gets_a_fresh_instance() {
    let host = hostile("").await;
    for _ in 0..3 {
        let outcome = host.call("count_calls", json!({})).await;
        assert_eq!(outcome.status, Status::Success);
        assert_eq!(outcome.output, r#"{"calls":1}"#, "a static survived between calls");
    }
}
