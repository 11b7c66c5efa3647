//! [`ToolCall`]: one request to run a tool, however it was asked for.

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
}

impl ToolCall {
    /// A call with `id` to `tool` with `args`, not parsed from text.
    pub fn new(id: impl Into<String>, tool: impl Into<String>, args: Map<String, Value>) -> Self {
        ToolCall { id: id.into(), tool: tool.into(), args, raw: String::new(), reserved: Map::new() }
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
            })
            .collect()
    }
}
