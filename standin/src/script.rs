//! What the stand-in answers, request by request: a [`Response`] each,
//! written in Rust with the builders or in a JSON script file.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Response {
    /// A whole reply, streamed in small chunks as a real server streams
    /// it. Its text may quote the request (see [`Reply::text`]).
    Reply(Reply),
    /// Exactly these frames, for faults a reply cannot show.
    Stream(Vec<Frame>),
    /// An HTTP error instead of a stream.
    Error {
        /// The HTTP status.
        status: u16,
        /// The body.
        #[serde(default)]
        body: String,
        /// The `Retry-After` header, in seconds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after: Option<u64>,
    },
}

/// A reply, before it is cut into chunks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Reply {
    /// The reply's text. `{{last_message}}` becomes the text of the
    /// request's last message; `{{last_message:REGEX}}` the first group
    /// REGEX captures in it (empty if it does not match).
    pub text: String,
    /// Reasoning, streamed before the text.
    pub reasoning: String,
    /// The field reasoning is streamed in: `reasoning_content` (the
    /// default, as DeepSeek and vLLM) or `reasoning` (as OpenRouter).
    pub reasoning_field: Option<String>,
    /// Native tool calls.
    pub tool_calls: Vec<NativeCall>,
    /// How the calls' pieces are streamed.
    pub call_style: CallStyle,
    /// Characters per chunk. Default 8.
    pub chunk_chars: Option<usize>,
    /// A wait before each chunk, in milliseconds.
    pub delay_ms: u64,
    /// The finish reason. Default `tool_calls` with calls, else `stop`.
    pub finish_reason: Option<String>,
}

/// A native call in a reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NativeCall {
    /// Its id.
    pub id: String,
    /// The function.
    pub name: String,
    /// Its arguments, JSON text (streamed in pieces).
    pub arguments: String,
}

/// How tool-call pieces arrive; providers differ.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CallStyle {
    /// The calls' pieces alternate (call 1, call 2, call 1, …) rather than
    /// one call's pieces all coming first.
    pub interleave: bool,
    /// Every piece repeats the call's id, not only the first.
    pub id_on_every_piece: bool,
    /// Pieces leave out `index` (they are told apart by id alone).
    pub no_index: bool,
}

/// One piece of a stream, written as it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Frame {
    /// `data: <json>`.
    Chunk(Value),
    /// Bytes as they are, for a malformed stream.
    Raw(String),
    /// `data: [DONE]`.
    Done,
    /// A wait, in milliseconds.
    DelayMs(u64),
    /// The connection is cut here.
    Drop,
    /// Nothing more is ever sent, and the connection stays open.
    Hang,
}

impl Reply {
    /// A reply with `text`.
    pub fn text(text: impl Into<String>) -> Self {
        Reply { text: text.into(), ..Reply::default() }
    }

    /// This reply, with `reasoning` streamed first.
    pub fn reasoning(self, reasoning: impl Into<String>) -> Self {
        Reply { reasoning: reasoning.into(), ..self }
    }

    /// This reply, with a native call.
    pub fn call(mut self, id: &str, name: &str, arguments: Value) -> Self {
        self.tool_calls.push(NativeCall { id: id.into(), name: name.into(), arguments: arguments.to_string() });
        self
    }

    /// This reply, its calls streamed in `style`.
    pub fn style(self, call_style: CallStyle) -> Self {
        Reply { call_style, ..self }
    }

    /// This reply, waiting `delay_ms` before each chunk.
    pub fn slowly(self, delay_ms: u64) -> Self {
        Reply { delay_ms, ..self }
    }

    /// The frames of this reply, with `text` as its text, for `model`.
    pub(crate) fn frames(&self, text: &str, model: &str) -> Vec<Frame> {
        let size = self.chunk_chars.unwrap_or(8).max(1);
        let chunk = |delta: Value, finish: Option<&str>| {
            Frame::Chunk(json!({
                "id": "chatcmpl-standin",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
            }))
        };
        let mut chunks = vec![chunk(json!({ "role": "assistant", "content": "" }), None)];
        let field = self.reasoning_field.as_deref().unwrap_or("reasoning_content");
        for piece in pieces(&self.reasoning, size) {
            chunks.push(chunk(json!({ field: piece }), None));
        }
        for piece in pieces(text, size) {
            chunks.push(chunk(json!({ "content": piece }), None));
        }
        for delta in self.call_deltas(size) {
            chunks.push(chunk(json!({ "tool_calls": [delta] }), None));
        }
        let finish =
            self.finish_reason.clone().unwrap_or_else(|| if self.tool_calls.is_empty() { "stop" } else { "tool_calls" }.into());
        chunks.push(chunk(json!({}), Some(&finish)));
        chunks.push(Frame::Chunk(json!({
            "id": "chatcmpl-standin",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [],
            "usage": { "prompt_tokens": 10, "completion_tokens": text.chars().count() / 4 + 1 },
        })));
        chunks.push(Frame::Done);
        if self.delay_ms == 0 {
            return chunks;
        }
        chunks.into_iter().flat_map(|frame| [Frame::DelayMs(self.delay_ms), frame]).collect()
    }

    /// The reply with `text` as one `chat.completion`, for a request that
    /// asked for no stream.
    pub(crate) fn completion(&self, text: &str, model: &str) -> Value {
        let finish =
            self.finish_reason.clone().unwrap_or_else(|| if self.tool_calls.is_empty() { "stop" } else { "tool_calls" }.into());
        let mut message = json!({ "role": "assistant", "content": text });
        if !self.reasoning.is_empty() {
            message[self.reasoning_field.as_deref().unwrap_or("reasoning_content")] = json!(self.reasoning);
        }
        if !self.tool_calls.is_empty() {
            let calls: Vec<Value> = self
                .tool_calls
                .iter()
                .map(|call| json!({ "id": call.id, "type": "function", "function": { "name": call.name, "arguments": call.arguments } }))
                .collect();
            message["tool_calls"] = json!(calls);
        }
        json!({
            "id": "chatcmpl-standin",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{ "index": 0, "message": message, "finish_reason": finish }],
            "usage": { "prompt_tokens": 10, "completion_tokens": text.chars().count() / 4 + 1 },
        })
    }

    /// Each call's pieces: the first names the call, the rest carry its
    /// arguments a few characters at a time.
    fn call_deltas(&self, size: usize) -> Vec<Value> {
        let style = self.call_style;
        let per_call: Vec<Vec<Value>> = self
            .tool_calls
            .iter()
            .enumerate()
            .map(|(index, call)| {
                let mut first = json!({ "index": index, "id": call.id, "type": "function", "function": { "name": call.name, "arguments": "" } });
                let mut deltas = Vec::new();
                if style.no_index {
                    first.as_object_mut().expect("an object").remove("index");
                }
                deltas.push(first);
                for piece in pieces(&call.arguments, size) {
                    let mut delta = json!({ "index": index, "function": { "arguments": piece } });
                    let object = delta.as_object_mut().expect("an object");
                    if style.id_on_every_piece || style.no_index {
                        object.insert("id".into(), json!(call.id));
                    }
                    if style.no_index {
                        object.remove("index");
                    }
                    deltas.push(delta);
                }
                deltas
            })
            .collect();
        if !style.interleave {
            return per_call.into_iter().flatten().collect();
        }
        let longest = per_call.iter().map(Vec::len).max().unwrap_or(0);
        (0..longest).flat_map(|at| per_call.iter().filter_map(move |deltas| deltas.get(at).cloned())).collect()
    }
}

/// `text` in pieces of `size` characters.
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|piece| piece.iter().collect()).collect()
}

impl Response {
    /// A streamed reply with `text`.
    pub fn text(text: impl Into<String>) -> Self {
        Response::Reply(Reply::text(text))
    }

    /// An HTTP error.
    pub fn status(status: u16, body: impl Into<String>) -> Self {
        Response::Error { status, body: body.into(), retry_after: None }
    }

    /// HTTP 429 asking to wait `seconds`.
    pub fn rate_limited(seconds: u64) -> Self {
        Response::Error { status: 429, body: "rate limited".into(), retry_after: Some(seconds) }
    }

    /// The start of a reply with `text`, then the connection cut.
    pub fn dropped_after(text: &str) -> Self {
        let mut frames = Reply::text(text).frames(text, "standin");
        frames.truncate(frames.len() - 3); // finish, usage, [DONE]
        // A pause first, so what came is on the wire before the cut: the
        // client sees a reply cut off, not a connection that failed.
        frames.push(Frame::DelayMs(50));
        frames.push(Frame::Drop);
        Response::Stream(frames)
    }

    /// The start of a reply with `text`, then an `error` object (after
    /// HTTP 200, as providers do when a generation fails).
    pub fn error_after(text: &str, message: &str) -> Self {
        let mut frames = Reply::text(text).frames(text, "standin");
        frames.truncate(frames.len() - 3);
        frames.push(Frame::Chunk(json!({ "error": { "message": message, "type": "server_error" } })));
        Response::Stream(frames)
    }

    /// The start of a reply with `text`, then bytes that are not JSON.
    pub fn malformed_after(text: &str) -> Self {
        let mut frames = Reply::text(text).frames(text, "standin");
        frames.truncate(frames.len() - 3);
        frames.push(Frame::Raw("data: {\"choices\": [{\"delta\": {\"content\": \"x\"\n\n".into()));
        frames.push(Frame::Done);
        Response::Stream(frames)
    }

    /// The start of a reply with `text`, then nothing, forever.
    pub fn hangs_after(text: &str) -> Self {
        let mut frames = Reply::text(text).frames(text, "standin");
        frames.truncate(frames.len() - 3);
        frames.push(Frame::Hang);
        Response::Stream(frames)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_interleave_and_keep_their_ids_where_asked() {
        let reply = Reply::text("")
            .call("a", "f", json!({"x": "12345678901"}))
            .call("b", "g", json!({"y": 1}))
            .style(CallStyle { interleave: true, id_on_every_piece: true, no_index: false });
        let deltas = reply.call_deltas(8);
        let ids: Vec<&str> = deltas.iter().map(|d| d["id"].as_str().unwrap()).collect();
        assert_eq!(&ids[..4], ["a", "b", "a", "b"]);
        let joined: String =
            deltas.iter().filter(|d| d["id"] == "a").map(|d| d["function"]["arguments"].as_str().unwrap()).collect();
        assert_eq!(joined, r#"{"x":"12345678901"}"#);
    }

    #[test]
    fn scripts_read_from_json() {
        let script: Vec<Response> = serde_json::from_str(
            r#"[{"reply": {"text": "hi", "reasoning": "hm"}},
                {"error": {"status": 429, "retry_after": 1}},
                {"stream": [{"raw": "data: x\n\n"}, "drop"]}]"#,
        )
        .unwrap();
        assert_eq!(script[0], Response::Reply(Reply::text("hi").reasoning("hm")));
        assert_eq!(script[1], Response::rate_limited(1).with_body(""));
        assert_eq!(script[2], Response::Stream(vec![Frame::Raw("data: x\n\n".into()), Frame::Drop]));
    }

    impl Response {
        fn with_body(self, text: &str) -> Self {
            match self {
                Response::Error { status, retry_after, .. } => Response::Error { status, body: text.into(), retry_after },
                other => other,
            }
        }
    }
}
