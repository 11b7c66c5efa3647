//! Failures kept as data: what ended a call, as a kind a program matches
//! on, beside the text.

use crate::built::CALC;
use crate::support::TestHost;
use serde_json::json;
use toolhost::{Status, types::FailureKind};

#[tokio::test]
async fn a_plugins_own_invalid_args_is_an_invalid_args_outcome() {
    let host = TestHost::new(&[CALC], "").await;
    // The declaration takes any string; the plugin refuses this one.
    let outcome = host.call("calculate", json!({ "expression": "1+" })).await;
    assert_eq!(outcome.status, Status::InvalidArgs, "{}", outcome.output);
    let failure = outcome.failure.expect("a refusal is a failure");
    assert_eq!(failure.kind, FailureKind::InvalidArgs);
    assert_eq!((failure.plugin.as_deref(), failure.limit), (Some("calc"), None));

    let ok = host.call("calculate", json!({ "expression": "6*7" })).await;
    assert_eq!((ok.status, ok.failure), (Status::Success, None));
}
