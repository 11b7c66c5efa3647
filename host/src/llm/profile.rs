//! [`LlmProfile`]: an endpoint as `[llm.NAME]` describes it, its limits'
//! defaults, and how a failed request is retried. Plain data, so a policy
//! holds it whether or not the client is built in (the `chat` feature).

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// How long the model may send nothing before the reply is given up, by
/// default: generous, as a local model may think a long while.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long connecting may take, by default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a reply may stream, by default, before it is given up: SSE
/// framing and all, so about a quarter of it is text. A long reply is a
/// few hundred KiB of stream.
pub const DEFAULT_MAX_REPLY_BYTES: usize = 32 << 20;
/// The longest one line of the stream may be, by default: a chunk is one
/// line, and the longest a provider sends holds a whole call's arguments.
pub const DEFAULT_MAX_LINE_BYTES: usize = 8 << 20;
/// The most one tool call's arguments may hold, by default.
pub const DEFAULT_MAX_CALL_ARGUMENT_BYTES: usize = 4 << 20;
/// The most calls one reply may make, by default; the rest are answered
/// with an error the model can read, never run.
pub const DEFAULT_MAX_CALLS_PER_REPLY: usize = 64;
/// How long one request may take, from sending it to the reply's last
/// byte, by default: a server that trickles empty chunks keeps the idle
/// timeout from firing, never this.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
/// Retries of a request that failed before any reply arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Retries after the first attempt. Default 3.
    pub retries: u32,
    /// The first wait; each next one doubles. Default 500 ms.
    pub base: Duration,
    /// The longest wait. Default 8 s.
    pub cap: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { retries: 3, base: Duration::from_millis(500), cap: Duration::from_secs(8) }
    }
}

/// An endpoint profile: `[llm.NAME]` in `toolhost.toml`. `Debug` shows the
/// headers' names, not their values, which may be credentials.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct LlmProfile {
    /// The API base, e.g. `http://127.0.0.1:8080/v1`; requests go to
    /// `{base_url}/chat/completions`.
    pub base_url: String,
    /// The model name sent with each request.
    pub model: String,
    /// The environment variable holding the API key, if the endpoint needs
    /// one; the key itself is never in the policy.
    pub api_key_env: Option<String>,
    /// Extra request headers.
    pub headers: BTreeMap<String, String>,
    /// Extra fields merged into every request body (`temperature`, …).
    pub extra_body: Map<String, Value>,
    /// How long the model may send nothing. Default [`DEFAULT_IDLE_TIMEOUT`].
    pub idle_timeout: Duration,
    /// How long connecting may take. Default [`DEFAULT_CONNECT_TIMEOUT`].
    pub connect_timeout: Duration,
    /// Retries before any reply arrived.
    pub retry: RetryPolicy,
    /// The most one reply may stream, in bytes: content, reasoning, calls
    /// and framing. Default [`DEFAULT_MAX_REPLY_BYTES`].
    pub max_reply_bytes: usize,
    /// The longest one line of the stream may be, in bytes. Default
    /// [`DEFAULT_MAX_LINE_BYTES`].
    pub max_line_bytes: usize,
    /// The most one tool call's arguments may hold, in bytes. Default
    /// [`DEFAULT_MAX_CALL_ARGUMENT_BYTES`].
    pub max_call_argument_bytes: usize,
    /// The most calls one reply may make. Default
    /// [`DEFAULT_MAX_CALLS_PER_REPLY`].
    pub max_calls_per_reply: usize,
    /// How long one request may take in all, retries included. Default
    /// [`DEFAULT_REQUEST_TIMEOUT`].
    pub request_timeout: Duration,
    /// The endpoint is the VCP server this host joins as a node (`[vcp]
    /// server`, written as there): that server runs the calls, and a chat
    /// hands them over ([`Handover`](crate::vcp::Handover)).
    pub vcp_server: Option<String>,
}

impl LlmProfile {
    /// A profile for `base_url` and `model` with every other setting at its
    /// default.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        LlmProfile {
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: None,
            headers: BTreeMap::new(),
            extra_body: Map::new(),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            retry: RetryPolicy::default(),
            max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_call_argument_bytes: DEFAULT_MAX_CALL_ARGUMENT_BYTES,
            max_calls_per_reply: DEFAULT_MAX_CALLS_PER_REPLY,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            vcp_server: None,
        }
    }
}

impl std::fmt::Debug for LlmProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmProfile")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key_env", &self.api_key_env)
            .field("headers", &self.headers.keys().map(|name| (name, REDACTED)).collect::<BTreeMap<_, _>>())
            .field("extra_body", &self.extra_body)
            .field("idle_timeout", &self.idle_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("retry", &self.retry)
            .field("max_reply_bytes", &self.max_reply_bytes)
            .field("max_line_bytes", &self.max_line_bytes)
            .field("max_call_argument_bytes", &self.max_call_argument_bytes)
            .field("max_calls_per_reply", &self.max_calls_per_reply)
            .field("request_timeout", &self.request_timeout)
            .field("vcp_server", &self.vcp_server)
            .finish()
    }
}

/// What `Debug` shows in place of a secret.
pub(super) const REDACTED: &str = "<redacted>";
