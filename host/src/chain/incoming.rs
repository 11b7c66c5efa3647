//! The calls in a finished reply: parsed from its text in the agent's
//! protocol, or taken from the native `tool_calls` the API assembled.

use crate::arguments;
use crate::call::{CallIds, ToolCall, looks_like_json, text_input};
use crate::llm::Reply;
use crate::manifest::{ToolSpec, json_type};
use crate::protocol::lenient_json;
use crate::protocol::{Declared, ProtocolId};
use serde_json::{Map, Value};

/// One call found in a reply.
#[derive(Debug, Clone)]
pub(super) enum Incoming {
    /// A call to check and run.
    Call(ToolCall),
    /// A native call whose arguments are not a JSON object: it is answered
    /// with why, never run.
    Unreadable { call: ToolCall, why: String },
    /// The first call past the reply's limit: answered with why it and the
    /// ones after it were not run.
    PastLimit { call: ToolCall, why: String },
}

impl Incoming {
    pub(super) fn call(&self) -> &ToolCall {
        match self {
            Incoming::Call(call) | Incoming::Unreadable { call, .. } | Incoming::PastLimit { call, .. } => call,
        }
    }
}

/// `incoming` with at most `limit` calls to run. When the reply made more
/// (`not_kept` more than `incoming` holds, counted by the client), the
/// first call past the limit stays, to tell the model why it and the rest
/// were not run; the rest are dropped, so a reply of a million calls costs
/// no more than one of `limit + 1`.
pub(super) fn within_limit(mut incoming: Vec<Incoming>, not_kept: usize, limit: usize) -> Vec<Incoming> {
    let made = incoming.len().saturating_add(not_kept);
    if made <= limit {
        return incoming;
    }
    incoming.truncate(limit + 1);
    if let Some(past) = incoming.pop() {
        let why = format!(
            "this reply made {made} calls and one reply may make {limit} (max_calls_per_reply): the first {limit} were run, \
             this one and the {} after it were not. Make fewer calls in one reply.",
            made - limit - 1
        );
        incoming.push(Incoming::PastLimit { call: past.call().clone(), why });
    }
    incoming
}

/// `incoming` with each input given as one text made the value of the
/// parameter it can be for, by the tools `specs` declare
/// ([`arguments::resolve_text_input`]), so that the transcript records
/// what will run.
pub(super) fn resolve_text_inputs(incoming: Vec<Incoming>, specs: &[&ToolSpec]) -> Vec<Incoming> {
    incoming
        .into_iter()
        .map(|incoming| match incoming {
            Incoming::Call(call) => Incoming::Call(arguments::resolve_text_input(call, specs)),
            other => other,
        })
        .collect()
}

/// The calls in `reply`, in order, and what the parser repaired or
/// dropped. Each gets its id from `ids`, the conversation's, so ids stay
/// unique across it.
pub(super) fn calls_in(
    reply: &Reply,
    protocol: ProtocolId,
    declared: &Declared,
    ids: &mut CallIds,
) -> (Vec<Incoming>, Vec<String>) {
    if protocol == ProtocolId::Native && !reply.tool_calls.is_empty() {
        return (native_calls(reply, ids), Vec::new());
    }
    let parsed = protocol.protocol().parse(&reply.content, declared);
    let calls = ToolCall::from_reply_in(&reply.content, &parsed.calls, ids).into_iter().map(Incoming::Call).collect();
    (calls, parsed.warnings.iter().map(ToString::to_string).collect())
}

/// The calls the native API assembled; arguments are JSON text, read as
/// leniently as the text protocols read theirs.
fn native_calls(reply: &Reply, ids: &mut CallIds) -> Vec<Incoming> {
    reply
        .tool_calls
        .iter()
        .map(|native| {
            let id = ids.assign(Some(&native.id));
            let call = ToolCall::with_map(id, &native.name, Map::new()).with_raw(native.arguments.clone());
            match arguments_of(&native.arguments) {
                Ok(Given::Arguments(args)) => Incoming::Call(call.with_args(args)),
                Ok(Given::Text(text)) => Incoming::Call(call.with_reserved(text_input(&text))),
                Err(why) => Incoming::Unreadable { why: format!("the arguments of `{}` are {why}", native.name), call },
            }
        })
        .collect()
}

/// What a native call's arguments give.
enum Given {
    /// Named arguments.
    Arguments(Map<String, Value>),
    /// One text, for the tool's one parameter (`"Paris"`, `Paris`, `42`).
    Text(String),
}

/// `{"a": 1}`, possibly encoded as a JSON string; nothing at all is no
/// arguments; a JSON string of no JSON, or text that does not start as
/// JSON (`Paris`, `42`), is one text input.
fn arguments_of(text: &str) -> Result<Given, String> {
    if text.trim().is_empty() {
        return Ok(Given::Arguments(Map::new()));
    }
    if !looks_like_json(text) {
        return Ok(Given::Text(text.to_owned()));
    }
    match lenient_json::parse_prefix(text) {
        Ok((Value::Object(args), ..)) => Ok(Given::Arguments(args)),
        // A quoted phrase and more (`"rust wasm" tutorial`): all of it.
        Ok((Value::String(_), used, _)) if !text[used..].trim().is_empty() => Ok(Given::Text(text.to_owned())),
        Ok((Value::String(inner), ..)) if looks_like_json(&inner) => arguments_of(&inner),
        Ok((Value::String(inner), ..)) => Ok(Given::Text(inner)),
        Ok((other, ..)) => Err(format!("not a JSON object but {}", json_type(&other))),
        Err(error) => Err(format!("not JSON: {} (at byte {})", error.message, error.offset)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::NativeCall;
    use serde_json::json;

    fn native(id: &str, name: &str, arguments: &str) -> NativeCall {
        NativeCall { id: id.into(), name: name.into(), arguments: arguments.into() }
    }

    #[test]
    fn native_arguments_are_read_leniently_and_unreadable_ones_are_kept_to_be_answered() {
        let reply = Reply {
            tool_calls: vec![
                native("a", "calculate", r#"{"expression": "1+1",}"#),
                native("b", "calculate", r#""{\"expression\": \"2\"}""#),
                native("c", "calculate", "[1, 2]"),
                native("", "now", ""),
                native("a", "now", "{}"),
                native("t1", "get_weather", r#""Paris""#),
                native("t2", "get_weather", "Paris, France"),
                native("t3", "calculate", "1+1"),
                native("t4", "calculate", r#"{"expression": "#),
                native("t5", "search", r#""rust wasm" tutorial"#),
            ],
            ..Reply::default()
        };
        let mut ids = CallIds::after(["call-1", "b"]);
        let (calls, warnings) = calls_in(&reply, ProtocolId::Native, &Declared::default(), &mut ids);
        assert!(warnings.is_empty());
        let ids: Vec<&str> = calls.iter().map(|c| c.call().id.as_str()).collect();
        assert_eq!(ids[..5], ["a", "call-2", "c", "call-3", "call-4"], "missing and taken ids are numbered");
        assert!(matches!(&calls[0], Incoming::Call(c) if c.args == *json!({"expression": "1+1"}).as_object().unwrap()));
        assert!(matches!(&calls[1], Incoming::Call(c) if c.args["expression"] == "2"));
        assert!(matches!(&calls[2], Incoming::Unreadable { why, .. } if why.contains("an array")));
        assert!(matches!(&calls[3], Incoming::Call(c) if c.args.is_empty()));
        // One text, for the check step to give the tool's one parameter;
        // broken JSON is still unreadable.
        let texts: Vec<_> = calls[5..8]
            .iter()
            .map(|incoming| match incoming {
                Incoming::Call(call) if call.args.is_empty() => call.reserved.get(crate::call::TEXT_INPUT_KEY).cloned(),
                _ => None,
            })
            .collect();
        assert_eq!(texts, [Some(json!("Paris")), Some(json!("Paris, France")), Some(json!("1+1"))]);
        assert!(matches!(&calls[8], Incoming::Unreadable { why, .. } if why.contains("not JSON")), "{:?}", calls[8]);
        assert!(
            matches!(&calls[9], Incoming::Call(c) if c.reserved[crate::call::TEXT_INPUT_KEY] == "\"rust wasm\" tutorial"),
            "the whole text, not its first quoted phrase: {:?}",
            calls[9]
        );
    }

    #[test]
    fn text_calls_are_numbered_after_the_conversations_ids() {
        let reply = Reply {
            content: "<<<[TOOL_REQUEST]>>>\ntool_name:「始」now「末」\n<<<[END_TOOL_REQUEST]>>>\n\
                      <<<[TOOL_REQUEST]>>>\ntool_name:「始」now「末」\n<<<[END_TOOL_REQUEST]>>>"
                .into(),
            ..Reply::default()
        };
        let (calls, _) = calls_in(&reply, ProtocolId::Vcp, &Declared::new(["now"]), &mut CallIds::after(["call-1", "call-2"]));
        let ids: Vec<&str> = calls.iter().map(|c| c.call().id.as_str()).collect();
        assert_eq!(ids, ["call-3", "call-4"]);
        // Native protocol, a model without the native API: JSON in the text.
        let reply = Reply { content: r#"{"name": "now", "arguments": {}}"#.into(), ..Reply::default() };
        let (calls, _) = calls_in(&reply, ProtocolId::Native, &Declared::new(["now"]), &mut CallIds::new());
        assert_eq!(calls.len(), 1);
    }
}
