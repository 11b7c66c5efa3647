//! [`ToolCall`]: one request to run a tool, however it was asked for.

use serde::Serialize;
use serde_json::{Map, Value};

/// One request to run a tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    /// Identifies the call within its batch (e.g. `call-1`, or the id a
    /// native tool-call API gave it).
    pub id: String,
    /// The tool's name.
    pub tool: String,
    /// The arguments, a JSON object.
    pub args: Map<String, Value>,
    /// The text the call was parsed from, if any.
    pub raw: String,
}

impl ToolCall {
    /// A call with `id` to `tool` with `args`, not parsed from text.
    pub fn new(id: impl Into<String>, tool: impl Into<String>, args: Map<String, Value>) -> Self {
        ToolCall { id: id.into(), tool: tool.into(), args, raw: String::new() }
    }
}
