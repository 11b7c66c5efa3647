//! [`Message`]: what goes to and from the model, in the shape of the
//! OpenAI-compatible chat API every protocol speaks.

use serde::{Deserialize, Serialize};

/// Who a message is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Role {
    /// Instructions: the system prompt.
    System,
    /// The person, or results given to the model as if from them.
    User,
    /// The model.
    Assistant,
    /// A native tool result, answering one `tool_call_id`.
    Tool,
}

/// A call the model made through the native tool-call API, as it travels
/// in an assistant message: `{"id", "type": "function", "function":
/// {"name", "arguments"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "WireCall", from = "WireCall")]
pub struct NativeCall {
    /// The id the provider gave it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as the model wrote them: JSON text.
    pub arguments: String,
}

#[derive(Serialize, Deserialize)]
struct WireCall {
    id: String,
    #[serde(rename = "type", default = "function")]
    kind: String,
    function: WireFunction,
}

#[derive(Serialize, Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: String,
}

fn function() -> String {
    "function".into()
}

impl From<NativeCall> for WireCall {
    fn from(call: NativeCall) -> Self {
        WireCall { id: call.id, kind: function(), function: WireFunction { name: call.name, arguments: call.arguments } }
    }
}

impl From<WireCall> for NativeCall {
    fn from(wire: WireCall) -> Self {
        NativeCall { id: wire.id, name: wire.function.name, arguments: wire.function.arguments }
    }
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who it is from.
    pub role: Role,
    /// Its text.
    pub content: String,
    /// For a [`Role::Tool`] message, the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For an assistant message, the calls it made through the native API.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<NativeCall>,
}

impl Message {
    /// A message from `role`.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Message { role, content: content.into(), tool_call_id: None, tool_calls: Vec::new() }
    }

    /// A system prompt.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    /// A message from the user.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    /// A reply of the model, with the native calls it made.
    pub fn assistant(content: impl Into<String>, tool_calls: Vec<NativeCall>) -> Self {
        Message { tool_calls, ..Self::new(Role::Assistant, content) }
    }

    /// A native tool result for the call `id`.
    pub fn tool(id: impl Into<String>, content: impl Into<String>) -> Self {
        Message { tool_call_id: Some(id.into()), ..Self::new(Role::Tool, content) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_calls_travel_in_the_openai_shape() {
        let message = Message::assistant("", vec![NativeCall { id: "c1".into(), name: "f".into(), arguments: "{}".into() }]);
        let json = serde_json::to_value(&message).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ]})
        );
        assert_eq!(serde_json::from_value::<Message>(json).unwrap(), message);
    }
}
