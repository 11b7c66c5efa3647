//! A streamed reply put back together, one SSE chunk at a time.
//!
//! Chunks are `{"choices": [{"delta": {"content", "reasoning_content" or
//! "reasoning", "tool_calls"}, "finish_reason"}], "usage"}`; a usage chunk
//! may have no choices; an `error` object is a failure, not text. Native
//! tool calls arrive in pieces: a piece names its call by `id` (some
//! providers repeat it on every piece) and by `index` (OpenAI sends the id
//! once, then only the index); pieces are matched by id first, index
//! second, else continue the last call.
//!
//! What a hostile server can make it hold is bounded: one call's arguments
//! by `max_call_argument_bytes`, and the calls kept by
//! `max_calls_per_reply` (the one after the limit is kept to be answered;
//! further ones are only counted).

use super::profile::{DEFAULT_MAX_CALL_ARGUMENT_BYTES, DEFAULT_MAX_CALLS_PER_REPLY};
use super::{LlmError, Reply, ReplyLimit, StreamEvent, Usage};
use crate::message::NativeCall;
use serde_json::Value;
use toolhost_support::json_text;

/// The reply so far.
#[derive(Debug)]
pub(crate) struct Assembler {
    reply: Reply,
    /// Each call's `index`, where a piece gave one.
    indexes: Vec<Option<u64>>,
    /// Whether `[DONE]` or a finish reason was seen.
    pub(crate) finished: bool,
    max_call_argument_bytes: usize,
    max_calls: usize,
    /// The id and index of the last call not kept: its further pieces are
    /// dropped with it, not counted as more calls.
    dropping: Option<(Option<String>, Option<u64>)>,
}

impl Default for Assembler {
    fn default() -> Self {
        Assembler::new(DEFAULT_MAX_CALL_ARGUMENT_BYTES, DEFAULT_MAX_CALLS_PER_REPLY)
    }
}

impl Assembler {
    /// An empty reply whose calls' arguments may hold `max_call_argument_bytes`
    /// each, keeping at most `max_calls` calls and the one after.
    pub(crate) fn new(max_call_argument_bytes: usize, max_calls: usize) -> Self {
        Assembler {
            reply: Reply::default(),
            indexes: Vec::new(),
            finished: false,
            max_call_argument_bytes,
            max_calls,
            dropping: None,
        }
    }

    /// Take one chunk's JSON, reporting deltas to `on_delta`.
    pub(crate) fn chunk(&mut self, data: &str, on_delta: &mut (dyn FnMut(StreamEvent) + Send)) -> Result<(), LlmError> {
        // A lone surrogate escaped in it reads as U+FFFD ([`json_text`]).
        let chunk: Value =
            serde_json::from_slice(&json_text::lone_surrogates_replaced(data.as_bytes())).map_err(|e| LlmError::Malformed {
                message: format!("a chunk is not JSON ({e}): {}", excerpt(data)),
                partial: Box::new(self.reply.clone()),
            })?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            let message = error.get("message").and_then(Value::as_str).map_or_else(|| error.to_string(), str::to_owned);
            return Err(LlmError::Stream { message, partial: Box::new(self.reply.clone()) });
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
            self.reply.usage =
                Some(Usage { prompt_tokens: count("prompt_tokens"), completion_tokens: count("completion_tokens") });
        }
        let choices = chunk.get("choices").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        for choice in choices.iter().filter(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0) {
            if let Some(delta) = choice.get("delta") {
                self.delta(delta, on_delta)?;
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.reply.finish_reason = Some(reason.to_owned());
                self.finished = true;
            }
        }
        Ok(())
    }

    fn delta(&mut self, delta: &Value, on_delta: &mut (dyn FnMut(StreamEvent) + Send)) -> Result<(), LlmError> {
        for key in ["reasoning_content", "reasoning"] {
            if let Some(text) = delta.get(key).and_then(Value::as_str).filter(|t| !t.is_empty()) {
                self.reply.reasoning.push_str(text);
                on_delta(StreamEvent::Reasoning(text.to_owned()));
            }
        }
        if let Some(text) = delta.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            self.reply.content.push_str(text);
            on_delta(StreamEvent::Text(text.to_owned()));
        }
        for piece in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            self.tool_call_piece(piece)?;
        }
        Ok(())
    }

    fn tool_call_piece(&mut self, piece: &Value) -> Result<(), LlmError> {
        let id = piece.get("id").and_then(Value::as_str).filter(|id| !id.is_empty());
        let index = piece.get("index").and_then(Value::as_u64);
        let calls = &mut self.reply.tool_calls;
        let found = match (id, index) {
            (Some(id), _) if calls.iter().any(|c| c.id == id) => calls.iter().position(|c| c.id == id),
            (Some(_), _) => None,
            (None, Some(index)) => self.indexes.iter().rposition(|i| *i == Some(index)),
            (None, None) => calls.len().checked_sub(1),
        };
        let continues_dropped = |(dropped_id, dropped_index): &(Option<String>, Option<u64>)| match id {
            Some(id) => dropped_id.as_deref() == Some(id),
            None => index.is_none() || *dropped_index == index,
        };
        if (found.is_none() || (id.is_none() && index.is_none())) && self.dropping.as_ref().is_some_and(continues_dropped) {
            return Ok(());
        }
        let at = match found {
            Some(at) => at,
            // Past the limit and the one after it: counted, not kept.
            None if calls.len() > self.max_calls => {
                self.reply.calls_not_kept += 1;
                self.dropping = Some((id.map(str::to_owned), index));
                return Ok(());
            }
            None => {
                calls.push(NativeCall { id: id.unwrap_or_default().to_owned(), name: String::new(), arguments: String::new() });
                self.indexes.push(index);
                calls.len() - 1
            }
        };
        self.dropping = None;
        let call = &mut calls[at];
        if let Some(function) = piece.get("function") {
            let name = function.get("name").and_then(Value::as_str).unwrap_or_default();
            let arguments = function.get("arguments").and_then(Value::as_str).unwrap_or_default();
            // A name is no bigger a place to hide bytes than arguments.
            if call.name.len() + name.len() + call.arguments.len() + arguments.len() > self.max_call_argument_bytes {
                return Err(LlmError::OverLimit {
                    limit: ReplyLimit::CallArguments(self.max_call_argument_bytes),
                    partial: self.partial(),
                });
            }
            call.name.push_str(name);
            call.arguments.push_str(arguments);
        }
        Ok(())
    }

    /// The `[DONE]` line.
    pub(crate) fn done(&mut self) {
        self.finished = true;
    }

    /// What has arrived.
    pub(crate) fn partial(&self) -> Box<Reply> {
        Box::new(self.reply.clone())
    }

    /// The reply, once the stream has ended: whole, or cut off. A call
    /// the provider gave no id keeps an empty one: the conversation gives
    /// it one unique in it (`CallIds`).
    pub(crate) fn finish(self) -> Result<Reply, LlmError> {
        if self.finished { Ok(self.reply) } else { Err(LlmError::CutOff { partial: Box::new(self.reply) }) }
    }
}

/// The start of `text`, for an error message.
pub(crate) fn excerpt(text: &str) -> String {
    const KEEP: usize = 200;
    let cut = text.floor_char_boundary(KEEP);
    if cut < text.len() { format!("{}…", &text[..cut]) } else { text.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chunks: &[&str]) -> (Result<Reply, LlmError>, Vec<StreamEvent>) {
        let mut events = Vec::new();
        let mut assembler = Assembler::default();
        for chunk in chunks {
            if *chunk == "[DONE]" {
                assembler.done();
            } else if let Err(e) = assembler.chunk(chunk, &mut |e| events.push(e)) {
                return (Err(e), events);
            }
        }
        (assembler.finish(), events)
    }

    #[test]
    fn text_and_reasoning_stream_apart_and_a_usage_chunk_without_choices_counts() {
        let (reply, events) = run(&[
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning":" more"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#,
            "[DONE]",
        ]);
        let reply = reply.unwrap();
        assert_eq!((reply.content.as_str(), reply.reasoning.as_str()), ("Hello", "think more"));
        assert_eq!(reply.usage, Some(Usage { prompt_tokens: 5, completion_tokens: 2 }));
        assert_eq!(events[0], StreamEvent::Reasoning("think".into()));
        assert_eq!(events[2], StreamEvent::Text("Hel".into()));
    }

    #[test]
    fn a_lone_surrogate_in_a_chunk_reads_as_a_replacement_character() {
        let (reply, _) = run(&[r#"{"choices":[{"index":0,"delta":{"content":"cut \ud83d"},"finish_reason":"stop"}]}"#]);
        assert_eq!(reply.unwrap().content, "cut \u{fffd}");
    }

    #[test]
    fn tool_call_pieces_join_by_id_first_and_index_second() {
        // OpenAI: the id once, then the index; a second call interleaved.
        let (reply, _) = run(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"calc","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"clock","arguments":"{\"z"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"x\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\":1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"2}"}}]},"finish_reason":"tool_calls"}]}"#,
        ]);
        let calls = reply.unwrap().tool_calls;
        assert_eq!(calls.len(), 2);
        assert_eq!((calls[0].id.as_str(), calls[0].arguments.as_str()), ("a", "{\"x\":2}"));
        assert_eq!((calls[1].id.as_str(), calls[1].arguments.as_str()), ("b", "{\"z\":1}"));
        // A provider repeating the id on every piece, with no index.
        let (reply, _) = run(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"x1","function":{"name":"f","arguments":"{"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"x2","function":{"name":"g","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"x1","function":{"arguments":"}"}}]}}],"finish_reason":null}"#,
            "[DONE]",
        ]);
        let calls = reply.unwrap().tool_calls;
        assert_eq!((calls[0].name.as_str(), calls[0].arguments.as_str()), ("f", "{}"));
        assert_eq!((calls[1].name.as_str(), calls[1].arguments.as_str()), ("g", "{}"));
    }

    #[test]
    fn an_error_object_mid_stream_is_an_error_keeping_what_came() {
        let (reply, _) = run(&[r#"{"choices":[{"delta":{"content":"partial"}}]}"#, r#"{"error":{"message":"overloaded"}}"#]);
        let Err(LlmError::Stream { message, partial }) = reply else { panic!("{reply:?}") };
        assert_eq!((message.as_str(), partial.content.as_str()), ("overloaded", "partial"));
    }

    #[test]
    fn a_stream_without_an_end_is_cut_off_and_garbage_is_malformed() {
        let (reply, _) = run(&[r#"{"choices":[{"delta":{"content":"half"}}]}"#]);
        assert!(matches!(reply, Err(LlmError::CutOff { partial }) if partial.content == "half"));
        let (reply, _) = run(&["not json"]);
        assert!(matches!(reply, Err(LlmError::Malformed { .. })), "{reply:?}");
    }
}
