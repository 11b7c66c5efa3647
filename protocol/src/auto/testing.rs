//! What the tests of every recogniser share: the declared tools, parsing
//! with `auto`, and the check step the pipeline runs next.

use super::super::{Declared, Parsed, Protocol};
use super::Auto;
use crate::call::ToolCall;
use serde_json::{Map, Value};

/// The tools the tests declare; `forecast` has a parameter of every type.
pub(crate) const DECLARED: [&str; 4] = ["get_weather", "calculate", "now", "forecast"];

pub(crate) fn parse(reply: &str) -> Parsed {
    Auto.parse(reply, &Declared::new(DECLARED))
}

/// The calls in `reply`, as (name, arguments).
pub(crate) fn calls(reply: &str) -> Vec<(String, Value)> {
    parse(reply).calls.into_iter().map(|c| (c.name, Value::Object(c.arguments))).collect()
}

pub(crate) fn one(name: &str, args: Value) -> Vec<(String, Value)> {
    vec![(name.to_owned(), args)]
}

/// Asserts that none of `replies` holds a call.
pub(crate) fn no_calls(replies: &[&str]) {
    for reply in replies {
        assert_eq!(calls(reply), vec![], "{reply}");
    }
}

/// Asserts that `reply` is prose: no call, and its tokens left in the
/// content.
pub(crate) fn prose(reply: &str) {
    let parsed = parse(reply);
    assert_eq!((parsed.calls.len(), parsed.content.as_str()), (0, reply), "a quoted token stays in the prose");
}

/// The warnings of `reply`, as text.
pub(crate) fn warnings(reply: &str) -> Vec<String> {
    parse(reply).warnings.into_iter().map(|w| w.message).collect()
}

/// The arguments of the only call in `reply` after the check step, which
/// coerces them to `forecast`'s declared types.
pub(crate) fn checked(reply: &str) -> Map<String, Value> {
    let parsed = parse(reply);
    assert_eq!(parsed.calls.len(), 1, "{reply}: {:?}", parsed.warnings);
    let call = &ToolCall::from_reply(reply, &parsed.calls)[0];
    crate::arguments::check(call, &[&super::super::forecast()]).expect("the check step accepts the call").args
}
