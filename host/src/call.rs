//! [`ToolCall`]: one request to run a tool, however it was asked for.

use crate::manifest::json_type;
use crate::protocol::ParsedCall;
use serde::Serialize;
use serde_json::{Map, Value};

/// One request to run a tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ToolCall {
    /// Identifies the call within its batch: the id the model gave it (a
    /// native `tool_calls` id, returned unchanged with the result), or
    /// `call-N` by its position.
    pub id: String,
    /// The tool's name.
    pub tool: String,
    /// The arguments, a JSON object.
    pub args: Map<String, Value>,
    /// The text the call was parsed from, if any.
    pub raw: String,
    /// Keys the protocol reserves for itself (VCP's `maid`, `archery`, …),
    /// kept apart from the arguments.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub reserved: Map<String, Value>,
    /// Why the arguments given to [`ToolCall::new`] are not a JSON object,
    /// if they are not: the call then fails its check and never runs.
    #[serde(skip)]
    pub(crate) unusable_args: Option<String>,
}

impl ToolCall {
    /// A call with `id` to `tool` with `args`, not parsed from text. The
    /// arguments are anything that serializes to a JSON object: a
    /// `serde_json::Map`, `json!({"expression": "6*7"})`, a struct with
    /// `#[derive(Serialize)]`; `()` or `null` means none. Anything else
    /// (an array, a number) makes a call that never runs: its outcome is
    /// [`Status::InvalidArgs`](crate::Status::InvalidArgs), saying what it was.
    pub fn new(id: impl Into<String>, tool: impl Into<String>, args: impl Serialize) -> Self {
        let (args, unusable_args) = match serde_json::to_value(args) {
            Ok(Value::Object(map)) => (map, None),
            Ok(Value::Null) => (Map::new(), None),
            Ok(other) => (Map::new(), Some(format!("the arguments must be a JSON object, not {}", json_type(&other)))),
            Err(error) => (Map::new(), Some(format!("the arguments cannot be written as JSON: {error}"))),
        };
        ToolCall { unusable_args, ..ToolCall::with_map(id, tool, args) }
    }

    /// A call whose arguments are already an object: what [`ToolCall::new`]
    /// makes, without serializing them again (the doors' hot paths).
    pub(crate) fn with_map(id: impl Into<String>, tool: impl Into<String>, args: Map<String, Value>) -> Self {
        ToolCall { id: id.into(), tool: tool.into(), args, raw: String::new(), reserved: Map::new(), unusable_args: None }
    }

    /// The calls parsed from `reply`, in order: each keeps the model's id
    /// where it gave one (else `call-N`, N counting from 1), the text it
    /// was written as, and its reserved keys.
    pub fn from_reply(reply: &str, parsed: &[ParsedCall]) -> Vec<ToolCall> {
        parsed
            .iter()
            .enumerate()
            .map(|(index, call)| ToolCall {
                id: call.id.clone().unwrap_or_else(|| format!("call-{}", index + 1)),
                tool: call.name.clone(),
                args: call.arguments.clone(),
                raw: reply.get(call.span.clone()).unwrap_or_default().to_owned(),
                reserved: call.reserved.clone(),
                unusable_args: None,
            })
            .collect()
    }

    /// Why this call's arguments cannot be used, if they cannot.
    pub(crate) fn unusable_args(&self) -> Option<&str> {
        self.unusable_args.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_anything_that_serializes_to_an_object() {
        #[derive(Serialize)]
        struct Add {
            a: i32,
            b: i32,
        }
        let expected: Map<String, Value> = json!({ "a": 1, "b": 2 }).as_object().unwrap().clone();
        for call in [
            ToolCall::new("1", "add", json!({ "a": 1, "b": 2 })),
            ToolCall::new("1", "add", expected.clone()),
            ToolCall::new("1", "add", Add { a: 1, b: 2 }),
        ] {
            assert_eq!((&call.args, call.unusable_args()), (&expected, None));
        }
        assert!(ToolCall::new("1", "clock", ()).args.is_empty());
        let array = ToolCall::new("1", "add", json!([1, 2]));
        assert_eq!(array.unusable_args(), Some("the arguments must be a JSON object, not an array"));
    }
}
