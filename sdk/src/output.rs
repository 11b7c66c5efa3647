//! What a tool call returns: an [`Output`] or a [`ToolError`].

use crate::__bindings::toolhost::plugin::types as wit;
use serde_json::Value;

/// A successful tool result.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Plain text for the model.
    Text(String),
    /// A JSON document.
    Json(Value),
}

impl Output {
    pub(crate) fn into_wit(self) -> wit::Output {
        match self {
            Output::Text(text) => wit::Output::Text(text),
            Output::Json(value) => wit::Output::Json(value.to_string()),
        }
    }
}

impl From<String> for Output {
    fn from(text: String) -> Self {
        Output::Text(text)
    }
}

impl From<&str> for Output {
    fn from(text: &str) -> Self {
        Output::Text(text.to_owned())
    }
}

impl From<Value> for Output {
    fn from(value: Value) -> Self {
        Output::Json(value)
    }
}

/// Why a tool call failed. The message goes back to the model, so it should
/// say what to do differently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolError {
    /// The arguments were missing, of the wrong type, or out of range.
    InvalidArgs(String),
    /// The plugin has no tool of that name.
    UnknownTool(String),
    /// The tool ran and failed.
    Failed(String),
}

impl ToolError {
    /// The arguments were wrong; `message` says how.
    pub fn invalid_args(message: impl Into<String>) -> Self {
        ToolError::InvalidArgs(message.into())
    }

    /// The plugin has no tool named `tool`.
    pub fn unknown_tool(tool: &str) -> Self {
        ToolError::UnknownTool(format!("this plugin has no tool named `{tool}`"))
    }

    /// The tool ran and failed; `message` says why.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::Failed(message.into())
    }

    pub(crate) fn into_wit(self) -> wit::ToolError {
        match self {
            ToolError::InvalidArgs(m) => wit::ToolError::InvalidArgs(m),
            ToolError::UnknownTool(m) => wit::ToolError::UnknownTool(m),
            ToolError::Failed(m) => wit::ToolError::Failed(m),
        }
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolError::InvalidArgs(m) => write!(f, "invalid arguments: {m}"),
            ToolError::UnknownTool(m) | ToolError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ToolError {}

impl From<std::io::Error> for ToolError {
    fn from(error: std::io::Error) -> Self {
        ToolError::Failed(error.to_string())
    }
}
