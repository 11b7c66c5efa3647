//! [`OpenAiClient`]: any OpenAI-compatible `/chat/completions` endpoint
//! (OpenAI, llama.cpp, vLLM, Ollama, LM Studio…), streamed over SSE.
//!
//! Connection errors, 429 (waiting as `Retry-After` says) and 5xx are
//! retried with exponential backoff and jitter — never once any of a reply
//! has arrived, since the model would be asked twice. The stream is read
//! with `eventsource-stream`; `data: [DONE]` or a finish reason ends it,
//! and a stream that ends without either is reported as cut off.

use super::assemble::{Assembler, excerpt};
use super::profile::REDACTED;
use super::{ChatRequest, LlmClient, LlmError, LlmProfile, Reply, ReplyLimit, RetryPolicy, StreamEvent};
use crate::error_chain::error_chain;
use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The most of an error status's body that is read: the message shows the
/// start of it, and the rest is never waited for.
const ERROR_BODY_READ: usize = 4 << 10;
/// The longest `Retry-After` honoured; a longer one is an error.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// The wait before retry `attempt` (from 1) under `retry`: doubling,
/// capped, with ±50% jitter so many clients do not retry in step.
fn backoff(retry: &RetryPolicy, attempt: u32) -> Duration {
    let doubled = retry.base.saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)));
    doubled.min(retry.cap).mul_f64(0.5 + fastrand::f64())
}

/// A client for one [`LlmProfile`]. `Debug` never shows the API key.
#[derive(Clone)]
pub struct OpenAiClient {
    profile: LlmProfile,
    url: String,
    api_key: Option<String>,
    http: reqwest::Client,
}

impl std::fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("profile", &self.profile)
            .field("url", &self.url)
            .field("api_key", &self.api_key.as_ref().map(|_| REDACTED))
            .finish_non_exhaustive()
    }
}

/// Why a client could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The profile names an API-key variable that is not set.
    #[error("the API key variable `{0}` is not set")]
    MissingKey(String),
    /// The HTTP client could not be built (a header that is not valid).
    #[error("cannot build the HTTP client: {what}")]
    Http {
        /// What could not be used (`header `x-key``).
        what: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl ClientError {
    fn http(what: impl Into<String>, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        ClientError::Http { what: what.into(), source: Box::new(source) }
    }
}

impl OpenAiClient {
    /// A client for `profile`, reading its API key from the environment.
    ///
    /// # Errors
    ///
    /// [`ClientError::MissingKey`] when the profile's API-key variable is not
    /// set; [`ClientError::Http`] when a header is not valid or the HTTP client
    /// cannot be built.
    pub fn new(profile: LlmProfile) -> Result<Self, ClientError> {
        let api_key = match &profile.api_key_env {
            Some(name) => Some(std::env::var(name).map_err(|_| ClientError::MissingKey(name.clone()))?),
            None => None,
        };
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in &profile.headers {
            let what = || format!("header `{name}`");
            let value = reqwest::header::HeaderValue::try_from(value.as_str()).map_err(|e| ClientError::http(what(), e))?;
            let name = reqwest::header::HeaderName::try_from(name.as_str()).map_err(|e| ClientError::http(what(), e))?;
            headers.insert(name, value);
        }
        let http = crate::http_client::builder()
            .connect_timeout(profile.connect_timeout)
            .default_headers(headers)
            .build()
            .map_err(|e| ClientError::http("the client", e))?;
        let url = format!("{}/chat/completions", profile.base_url.trim_end_matches('/'));
        Ok(OpenAiClient { profile, url, api_key, http })
    }

    /// The request body for `request`.
    fn body(&self, request: &ChatRequest) -> Value {
        let mut body = json!({
            "model": self.profile.model,
            "messages": request.messages,
            "stream": true,
            "stream_options": { "include_usage": true },
        });
        let object = body.as_object_mut().expect("an object");
        if let Some(tools) = request.tools {
            object.insert("tools".into(), tools.clone());
        }
        for (key, value) in &self.profile.extra_body {
            object.insert(key.clone(), value.clone());
        }
        body
    }

    /// Send once: the response, or a failure that may be retried (after
    /// the wait the server asked for, if it did).
    async fn attempt(&self, body: &Value) -> Result<reqwest::Response, Attempt> {
        let mut request = self.http.post(&self.url).json(body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|error| {
            let retry = error.is_connect() || error.is_timeout() || error.is_request();
            // The URL is said once, by this error; reqwest's would repeat it.
            let error = error.without_url();
            let failure = LlmError::Connect { url: self.url.clone(), message: error_chain(&error), source: Arc::new(error) };
            if retry { Attempt::Retry(failure, None) } else { Attempt::Fail(failure) }
        })?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let wait = retry_after(&response);
        let retryable = status.as_u16() == 429 || status.is_server_error();
        let failure = LlmError::Status { status: status.as_u16(), body: excerpt(&body_start(response).await) };
        match wait {
            _ if !retryable => Err(Attempt::Fail(failure)),
            Some(wait) if wait > MAX_RETRY_AFTER => Err(Attempt::Fail(failure)),
            wait => Err(Attempt::Retry(failure, wait)),
        }
    }

    /// The response to `body`, retrying what may be retried; the last
    /// failure when every attempt failed.
    async fn respond(&self, body: &Value, cancel: &CancellationToken) -> Result<reqwest::Response, LlmError> {
        let cancelled = || LlmError::Cancelled { partial: Box::default() };
        let mut attempt = 0;
        loop {
            let outcome = tokio::select! {
                () = cancel.cancelled() => return Err(cancelled()),
                outcome = self.attempt(body) => outcome,
            };
            let (failure, wait) = match outcome {
                Ok(response) => return Ok(response),
                Err(Attempt::Fail(failure)) => return Err(failure),
                Err(Attempt::Retry(failure, wait)) => (failure, wait),
            };
            attempt += 1;
            if attempt > self.profile.retry.retries {
                return Err(failure);
            }
            let wait = wait.unwrap_or_else(|| backoff(&self.profile.retry, attempt));
            tracing::info!("{failure}; retrying in {} ms", wait.as_millis());
            tokio::select! {
                () = cancel.cancelled() => return Err(cancelled()),
                () = tokio::time::sleep(wait) => {}
            }
        }
    }
}

/// How one attempt failed.
enum Attempt {
    /// Try again, after the wait the server asked for where it did.
    Retry(LlmError, Option<Duration>),
    /// Give up.
    Fail(LlmError),
}

/// Why the stream of a reply stopped giving bytes.
#[derive(Debug, thiserror::Error)]
enum Received {
    /// The connection broke.
    #[error(transparent)]
    Broken(reqwest::Error),
    /// More than `max_reply_bytes` arrived.
    #[error("the reply passed its size limit")]
    OverCap,
    /// A line passed `max_line_bytes`.
    #[error("a line passed its length limit")]
    LineTooLong,
}

/// The start of an error's body: at most [`ERROR_BODY_READ`] bytes are
/// read, so an endless body is not waited for.
async fn body_start(mut response: reqwest::Response) -> String {
    let mut start = Vec::new();
    while start.len() < ERROR_BODY_READ {
        match response.chunk().await {
            Ok(Some(bytes)) => start.extend_from_slice(&bytes[..bytes.len().min(ERROR_BODY_READ - start.len())]),
            Ok(None) | Err(_) => break,
        }
    }
    String::from_utf8_lossy(&start).into_owned()
}

/// The stream cut at line ends, each line against its limit: what is
/// handed on ends a line, and an unfinished line is held (never past the
/// limit) until its end arrives. The SSE parser scans its whole buffer
/// again for every piece it is given, so one long line fed to it piece by
/// piece cost the square of its length: 20 MiB without a line end kept a
/// core busy for minutes before the line limit was reached.
struct WholeLines {
    unfinished: Vec<u8>,
    limit: usize,
}

impl WholeLines {
    /// The lines `bytes` finishes, with any held before (empty when it
    /// finishes none); `None` when a line passes the limit.
    fn push(&mut self, bytes: &[u8]) -> Option<Vec<u8>> {
        let mut current = self.unfinished.len();
        let mut rest = bytes;
        while let Some(end) = rest.iter().position(|b| matches!(b, b'\n' | b'\r')) {
            if current.saturating_add(end) > self.limit {
                return None;
            }
            current = 0;
            rest = &rest[end + 1..];
        }
        if current.saturating_add(rest.len()) > self.limit {
            return None;
        }
        let finished = bytes.len() - rest.len();
        if finished == 0 {
            self.unfinished.extend_from_slice(bytes);
            return Some(Vec::new());
        }
        let mut lines = std::mem::take(&mut self.unfinished);
        lines.extend_from_slice(&bytes[..finished]);
        self.unfinished.extend_from_slice(rest);
        Some(lines)
    }
}

/// `Retry-After` in seconds, where given.
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let value = response.headers().get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

#[async_trait::async_trait]
impl LlmClient for OpenAiClient {
    async fn complete(
        &self,
        request: &ChatRequest,
        on_delta: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<Reply, LlmError> {
        let profile = &self.profile;
        let deadline = tokio::time::Instant::now() + profile.request_timeout;
        let late = |partial| LlmError::OverLimit { limit: ReplyLimit::Deadline(profile.request_timeout), partial };
        let body = self.body(request);
        let response = tokio::select! {
            () = tokio::time::sleep_until(deadline) => return Err(late(Box::default())),
            response = self.respond(&body, cancel) => response?,
        };
        let limit = profile.max_reply_bytes;
        let mut streamed = 0usize;
        let mut lines = WholeLines { unfinished: Vec::new(), limit: profile.max_line_bytes };
        // Counted before the SSE parser buffers anything: one endless line
        // is over the cap as surely as many chunks.
        let capped = response.bytes_stream().map(move |bytes| {
            let bytes = bytes.map_err(Received::Broken)?;
            streamed = streamed.saturating_add(bytes.len());
            if streamed > limit {
                return Err(Received::OverCap);
            }
            lines.push(&bytes).ok_or(Received::LineTooLong)
        });
        let mut events = capped.eventsource();
        let mut assembler = Assembler::new(profile.max_call_argument_bytes, profile.max_calls_per_reply);
        loop {
            // Empty chunks keep the idle timeout from firing, never the
            // deadline.
            let next = tokio::select! {
                () = cancel.cancelled() => return Err(LlmError::Cancelled { partial: assembler.partial() }),
                () = tokio::time::sleep_until(deadline) => return Err(late(assembler.partial())),
                next = tokio::time::timeout(profile.idle_timeout, events.next()) => next,
            };
            let event = match next {
                Err(_idle) => {
                    return Err(LlmError::Idle { seconds: profile.idle_timeout.as_secs(), partial: assembler.partial() });
                }
                Ok(None) => break,
                Ok(Some(Ok(event))) => event,
                Ok(Some(Err(EventStreamError::Transport(Received::OverCap)))) => {
                    return Err(LlmError::TooLarge { limit, partial: assembler.partial() });
                }
                Ok(Some(Err(EventStreamError::Transport(Received::LineTooLong)))) => {
                    let limit = ReplyLimit::Line(profile.max_line_bytes);
                    return Err(LlmError::OverLimit { limit, partial: assembler.partial() });
                }
                // The connection broke mid-stream: what came is kept, and
                // the reply is reported cut off.
                Ok(Some(Err(EventStreamError::Transport(Received::Broken(error))))) => {
                    tracing::debug!("the model's stream broke: {}", error_chain(&error));
                    break;
                }
                Ok(Some(Err(error))) => {
                    return Err(LlmError::Malformed { message: error.to_string(), partial: assembler.partial() });
                }
            };
            if event.data.trim() == "[DONE]" {
                assembler.done();
                break;
            }
            if !event.data.trim().is_empty() {
                assembler.chunk(&event.data, on_delta)?;
            }
        }
        assembler.finish()
    }

    fn max_calls_per_reply(&self) -> usize {
        self.profile.max_calls_per_reply
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn lines_are_handed_on_whole_and_a_long_one_is_refused_at_its_limit() {
        let mut lines = super::WholeLines { unfinished: Vec::new(), limit: 10 };
        assert_eq!(lines.push(b"data: ab"), Some(Vec::new()), "held until its end");
        assert_eq!(lines.push(b"c\n\ndata: x"), Some(b"data: abc\n\n".to_vec()));
        assert_eq!(lines.push(b"y\r\n"), Some(b"data: xy\r\n".to_vec()));
        assert_eq!(lines.push(b"0123456789"), Some(Vec::new()), "at the limit");
        assert_eq!(lines.push(b"x"), None, "past it, before its end came");
        let mut lines = super::WholeLines { unfinished: Vec::new(), limit: 4 };
        assert_eq!(lines.push(b"ok\n12345\n"), None, "a finished line past the limit");
    }

    #[test]
    fn secrets_never_show_in_debug_output() {
        // A variable every process has stands in for the key's.
        let variable = "PATH";
        let key = std::env::var(variable).expect("PATH is set");
        let mut profile = super::LlmProfile::new("http://127.0.0.1:1/v1", "m");
        profile.api_key_env = Some(variable.into());
        profile.headers.insert("x-api-token".into(), "header-secret-value".into());
        let client = super::OpenAiClient::new(profile.clone()).unwrap();
        for shown in [format!("{client:?}"), format!("{client:#?}"), format!("{profile:?}")] {
            assert!(!shown.contains(&key) && !shown.contains("header-secret-value"), "{shown}");
            assert!(shown.contains("x-api-token") && shown.contains(variable), "{shown}");
        }
        assert!(format!("{client:?}").contains("api_key: Some(\"<redacted>\")"));
    }

    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_with_jitter() {
        let policy = RetryPolicy { retries: 5, base: Duration::from_millis(100), cap: Duration::from_millis(300) };
        for _ in 0..50 {
            let first = backoff(&policy, 1);
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(150), "{first:?}");
            let late = backoff(&policy, 5);
            assert!(late <= Duration::from_millis(450), "capped: {late:?}");
        }
    }

    #[test]
    fn extra_body_fields_and_tools_join_the_request() {
        let mut profile = LlmProfile::new("http://x/v1/", "m");
        profile.extra_body.insert("temperature".into(), json!(0.2));
        let client = OpenAiClient::new(profile).unwrap();
        assert_eq!(client.url, "http://x/v1/chat/completions");
        let body = client.body(&ChatRequest { messages: &[], tools: Some(&json!([])) });
        assert_eq!(body["temperature"], json!(0.2));
        assert_eq!(body["tools"], json!([]));
        assert_eq!(body["stream"], json!(true));
    }
}
