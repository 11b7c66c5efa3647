//! [`Message`]: what goes back to the model after a round of calls, in the
//! shape of the OpenAI-compatible chat API every protocol speaks.

use serde::{Deserialize, Serialize};

/// Who a message is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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
}

impl Message {
    /// A message from the user.
    pub fn user(content: impl Into<String>) -> Self {
        Message { role: Role::User, content: content.into(), tool_call_id: None }
    }

    /// A native tool result for the call `id`.
    pub fn tool(id: impl Into<String>, content: impl Into<String>) -> Self {
        Message { role: Role::Tool, content: content.into(), tool_call_id: Some(id.into()) }
    }
}
