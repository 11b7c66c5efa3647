//! Talking to a model: the [`LlmClient`] trait, and [`OpenAiClient`] for
//! any OpenAI-compatible `/chat/completions` endpoint, streamed over SSE.
//!
//! A client sends the conversation so far and streams the reply: text and
//! reasoning deltas as they arrive (through a callback, for a terminal or a
//! page to show), then the whole [`Reply`]. Reasoning (`reasoning_content`
//! or `reasoning`) is kept apart from the reply's text, shown to people and
//! never parsed for calls. Native tool calls (`tool_calls`) arrive in
//! pieces and are assembled per call.
//!
//! Failures are [`LlmError`]s that say what happened and keep whatever of
//! the reply had arrived, so a transcript loses nothing.

#[cfg(feature = "chat")]
mod assemble;
#[cfg(feature = "chat")]
mod openai;
mod profile;
mod section;

#[cfg(feature = "chat")]
pub use openai::{ClientError, OpenAiClient};
pub use profile::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CALL_ARGUMENT_BYTES, DEFAULT_MAX_CALLS_PER_REPLY,
    DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_REPLY_BYTES, DEFAULT_REQUEST_TIMEOUT, LlmProfile, RetryPolicy,
};
pub(crate) use section::LlmSection;

use crate::message::{Message, NativeCall};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What is sent to the model. It borrows the conversation, which the
/// transcript keeps formatted from one round to the next.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatRequest<'a> {
    /// The conversation, system prompt first.
    pub messages: &'a [Message],
    /// The native `tools` schema, for the native protocol; `None` for the
    /// text protocols, which describe the tools in the system prompt.
    pub tools: Option<&'a serde_json::Value>,
}

/// A piece of a reply as it streams in.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// Reply text.
    Text(String),
    /// Reasoning text: for people, not parsed for calls.
    Reasoning(String),
}

/// Token counts the provider reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    /// Tokens sent.
    pub prompt_tokens: u64,
    /// Tokens generated.
    pub completion_tokens: u64,
}

/// A reply, whole or as far as it came.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reply {
    /// The reply's text.
    pub content: String,
    /// Its reasoning, apart.
    pub reasoning: String,
    /// Calls made through the native API, assembled.
    pub tool_calls: Vec<NativeCall>,
    /// Why it ended (`stop`, `tool_calls`, `length`…), when it said.
    pub finish_reason: Option<String>,
    /// Token counts, when reported.
    pub usage: Option<Usage>,
    /// Native calls the reply made past the one after the client's
    /// [`max_calls_per_reply`](LlmClient::max_calls_per_reply): counted,
    /// not kept. (The first call past the limit is kept in `tool_calls`,
    /// to be answered with why it was not run.)
    pub calls_not_kept: usize,
}

/// Why a reply could not be had; every variant that streamed keeps what
/// arrived.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// No connection, after the retries.
    #[error("cannot reach the model at {url}: {message}")]
    Connect {
        /// The endpoint.
        url: String,
        /// What went wrong, down to its first cause ("Connection refused").
        message: String,
        /// The HTTP client's error, the endpoint left out of it (it is in
        /// `url`).
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// The server answered with an error status, after any retries.
    #[error("the model server answered {status}: {body}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The start of the body it sent.
        body: String,
    },
    /// An `error` object arrived in the stream (after HTTP 200).
    #[error("the model server reported an error mid-reply: {message}")]
    Stream {
        /// Its message.
        message: String,
        /// What had arrived before.
        partial: Box<Reply>,
    },
    /// The stream held something that is not the protocol.
    #[error("the model server sent something unreadable: {message}")]
    Malformed {
        /// What.
        message: String,
        /// What had arrived before.
        partial: Box<Reply>,
    },
    /// The stream ended without a finish reason or `[DONE]`.
    #[error("the reply was cut off: the stream ended without a finish reason{}", describe_cut(.partial))]
    CutOff {
        /// What had arrived.
        partial: Box<Reply>,
    },
    /// Nothing arrived for longer than allowed.
    #[error("the model sent nothing for {seconds} s")]
    Idle {
        /// The idle limit.
        seconds: u64,
        /// What had arrived.
        partial: Box<Reply>,
    },
    /// The reply streamed more than the profile's `max_reply_bytes`; the
    /// rest was not read.
    #[error("the model's reply passed the size limit of {} (max_reply_bytes); the rest was not read", size_in_words(*limit))]
    TooLarge {
        /// The limit, in bytes of the stream.
        limit: usize,
        /// What had arrived.
        partial: Box<Reply>,
    },
    /// The reply passed another limit of its profile; the rest was not
    /// read.
    #[error("the model's reply passed a limit: {limit}; the rest was not read")]
    OverLimit {
        /// Which, and its value.
        limit: ReplyLimit,
        /// What had arrived.
        partial: Box<Reply>,
    },
    /// The request was cancelled.
    #[error("cancelled")]
    Cancelled {
        /// What had arrived.
        partial: Box<Reply>,
    },
}

/// A limit of an `[llm.NAME]` profile, besides the reply's size, that a
/// reply can pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplyLimit {
    /// One line of the stream was longer than this many bytes.
    Line(usize),
    /// One tool call's arguments held more than this many bytes.
    CallArguments(usize),
    /// The request took longer than this.
    Deadline(std::time::Duration),
}

impl std::fmt::Display for ReplyLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            ReplyLimit::Line(bytes) => write!(f, "one line of the stream is longer than {} (max_line_kib)", size_in_words(bytes)),
            ReplyLimit::CallArguments(bytes) => {
                write!(f, "one tool call's arguments are longer than {} (max_call_argument_kib)", size_in_words(bytes))
            }
            ReplyLimit::Deadline(time) => write!(f, "the request took longer than {} ms (request_timeout_ms)", time.as_millis()),
        }
    }
}

fn size_in_words(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) { format!("{} MiB", bytes >> 20) } else { format!("{bytes} bytes") }
}

fn describe_cut(partial: &Reply) -> String {
    if partial.content.is_empty() { String::new() } else { format!(" after {} bytes", partial.content.len()) }
}

impl LlmError {
    /// What of the reply arrived before the failure.
    pub fn partial(&self) -> Option<&Reply> {
        match self {
            LlmError::Stream { partial, .. }
            | LlmError::Malformed { partial, .. }
            | LlmError::CutOff { partial }
            | LlmError::Idle { partial, .. }
            | LlmError::TooLarge { partial, .. }
            | LlmError::OverLimit { partial, .. }
            | LlmError::Cancelled { partial } => Some(partial),
            LlmError::Connect { .. } | LlmError::Status { .. } => None,
        }
    }
}

/// A model that replies to a conversation. Host applications can plug in
/// their own; [`OpenAiClient`] speaks the OpenAI-compatible API.
#[async_trait::async_trait]
pub trait LlmClient: Send + Sync {
    /// Send `request`, report deltas to `on_delta` as they arrive, and
    /// return the whole reply; stop when `cancel` fires.
    async fn complete(
        &self,
        request: &ChatRequest,
        on_delta: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<Reply, LlmError>;

    /// The most calls one reply may make; the chain answers the rest with
    /// an error the model can read and runs none of them.
    fn max_calls_per_reply(&self) -> usize {
        DEFAULT_MAX_CALLS_PER_REPLY
    }
}
