//! [`StandIn`]: a real HTTP server on a local port that answers
//! `POST …/chat/completions` from its script and records every request.

use crate::script::{Frame, Response};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use futures::StreamExt;
use regex::Regex;
use serde_json::Value;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// A request the stand-in received.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The body, as JSON (`Value::String` if it was not JSON).
    pub body: Value,
    /// The headers, names in lower case.
    pub headers: Vec<(String, String)>,
}

impl Recorded {
    /// The request's `messages`.
    pub fn messages(&self) -> &[Value] {
        self.body["messages"].as_array().map_or(&[], Vec::as_slice)
    }

    /// The text of the last message: its content, or the text of its
    /// parts where the content is an array of them (as agent SDKs send).
    pub fn last_message(&self) -> String {
        let Some(content) = self.messages().last().map(|m| &m["content"]) else { return String::new() };
        match content {
            Value::String(text) => text.clone(),
            Value::Array(parts) => parts.iter().filter_map(|part| part["text"].as_str()).collect::<Vec<_>>().join(""),
            _ => String::new(),
        }
    }

    /// Whether the request asked for the reply streamed: OpenAI's default
    /// is not, but every client here asks for a stream unless it says
    /// `"stream": false`.
    pub fn streamed(&self) -> bool {
        self.body["stream"] != Value::Bool(false)
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct Script {
    responses: VecDeque<Response>,
    /// Answer every request with this once the script is used up.
    forever: Option<Response>,
    recorded: Vec<Recorded>,
}

type Shared = Arc<Mutex<Script>>;

/// A scripted model server, stopped when dropped.
pub struct StandIn {
    address: SocketAddr,
    script: Shared,
    server: tokio::task::JoinHandle<()>,
}

impl StandIn {
    /// Serve `responses`, one per request, in order; once they are used up
    /// every request gets HTTP 500 saying so.
    pub async fn start(responses: impl IntoIterator<Item = Response>) -> std::io::Result<Self> {
        Self::serve(responses.into_iter().collect(), None).await
    }

    /// Serve `response` to every request (for the benchmark).
    pub async fn always(response: Response) -> std::io::Result<Self> {
        Self::serve(VecDeque::new(), Some(response)).await
    }

    async fn serve(responses: VecDeque<Response>, forever: Option<Response>) -> std::io::Result<Self> {
        let script: Shared = Arc::new(Mutex::new(Script { responses, forever, recorded: Vec::new() }));
        let app = Router::new()
            .route("/v1/chat/completions", axum::routing::post(complete))
            .route("/chat/completions", axum::routing::post(complete))
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        // Each SSE chunk is its own small write: without TCP_NODELAY,
        // Nagle's algorithm holds them for the client's delayed ACK, and
        // a local round trip takes tens of milliseconds instead of tens of
        // microseconds, as no real server lets it.
        let listener = axum::serve::ListenerExt::tap_io(listener, |stream: &mut tokio::net::TcpStream| {
            let _ = stream.set_nodelay(true);
        });
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(StandIn { address, script, server })
    }

    /// The base URL to give a client: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.lock().recorded.clone()
    }

    /// Responses not yet given.
    pub fn remaining(&self) -> usize {
        self.lock().responses.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn complete(State(script): State<Shared>, headers: HeaderMap, body: Bytes) -> axum::response::Response {
    let body = serde_json::from_slice(&body).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    let recorded = Recorded {
        body,
        headers: headers
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect(),
    };
    let next = {
        let mut script = script.lock().unwrap_or_else(PoisonError::into_inner);
        script.recorded.push(recorded.clone());
        script.responses.pop_front().or_else(|| script.forever.clone())
    };
    let Some(response) = next else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "the stand-in's script is used up").into_response();
    };
    let frames = match response {
        Response::Error { status, body, retry_after } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = (status, body).into_response();
            if let Some(seconds) = retry_after {
                response.headers_mut().insert(header::RETRY_AFTER, seconds.into());
            }
            return response;
        }
        Response::Stream(frames) => frames,
        Response::Reply(reply) => {
            let model = recorded.body["model"].as_str().unwrap_or("standin");
            let text = quote(&reply.text, &recorded.last_message());
            if !recorded.streamed() {
                return axum::Json(reply.completion(&text, model)).into_response();
            }
            reply.frames(&text, model)
        }
    };
    let stream = futures::stream::iter(frames).then(|frame| async move {
        match frame {
            Frame::Chunk(value) => Ok(Some(Bytes::from(format!("data: {value}\n\n")))),
            Frame::Raw(text) => Ok(Some(Bytes::from(text))),
            Frame::Done => Ok(Some(Bytes::from_static(b"data: [DONE]\n\n"))),
            Frame::DelayMs(ms) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(None)
            }
            Frame::Drop => Err(std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "the script cuts the connection")),
            Frame::Hang => futures::future::pending().await,
        }
    });
    let stream = stream.filter_map(|item: std::io::Result<Option<Bytes>>| async move { item.transpose() });
    ([(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")], Body::from_stream(stream))
        .into_response()
}

/// `text` with `{{last_message}}` and `{{last_message:REGEX}}` filled in
/// from `last`.
fn quote(text: &str, last: &str) -> String {
    static PLACEHOLDER: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let placeholder = PLACEHOLDER.get_or_init(|| Regex::new(r"\{\{last_message(?::(.*?))?\}\}").expect("a valid pattern"));
    placeholder
        .replace_all(text, |captures: &regex::Captures<'_>| match captures.get(1) {
            None => last.to_owned(),
            Some(pattern) => Regex::new(pattern.as_str())
                .ok()
                .and_then(|re| re.captures(last).and_then(|c| c.get(1)).map(|m| m.as_str().to_owned()))
                .unwrap_or_default(),
        })
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// POST `body` to the stand-in's completions at `base` (…/v1), raw: the response.
    async fn post(base: &str, body: &str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let authority = base.trim_start_matches("http://").split('/').next().unwrap().to_owned();
        let mut stream = tokio::net::TcpStream::connect(&authority).await.unwrap();
        let request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        response
    }

    #[tokio::test]
    async fn a_request_for_no_stream_gets_one_completion_and_parts_are_quoted() {
        let reply =
            crate::Reply::text("you said: {{last_message}}").call("c1", "calculate", serde_json::json!({"expression": "1"}));
        let standin = StandIn::start([Response::Reply(reply), Response::text("again: {{last_message}}")]).await.unwrap();
        let parts = r#"{"model":"m","stream":false,"messages":[{"role":"user","content":[{"type":"text","text":"hello "},{"type":"text","text":"there"}]}]}"#;
        let said = post(&standin.base_url(), parts).await;
        let json = &said[said.find("\r\n\r\n").unwrap() + 4..];
        let completion: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {said}"));
        assert_eq!(completion["object"], "chat.completion");
        let message = &completion["choices"][0]["message"];
        assert_eq!(message["content"], "you said: hello there", "the text of every part: {completion}");
        assert_eq!(message["tool_calls"][0]["function"]["name"], "calculate");
        assert_eq!(completion["choices"][0]["finish_reason"], "tool_calls");
        let streamed = post(&standin.base_url(), r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#).await;
        assert!(streamed.contains("text/event-stream") && streamed.contains("data: [DONE]"), "{streamed}");
    }

    #[test]
    fn placeholders_quote_the_last_message() {
        assert_eq!(quote("said: {{last_message}}", "hi"), "said: hi");
        assert_eq!(quote("n = {{last_message:value (\\d+)}}.", "the value 42 is"), "n = 42.");
        assert_eq!(quote("n = {{last_message:nothing (\\d+)}}.", "the value 42"), "n = .");
    }
}
