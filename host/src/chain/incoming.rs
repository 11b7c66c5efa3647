//! The calls in a finished reply: parsed from its text in the agent's
//! protocol, or taken from the native `tool_calls` the API assembled.

use crate::call::ToolCall;
use crate::llm::Reply;
use crate::manifest::json_type;
use crate::protocol::lenient_json;
use crate::protocol::{Declared, ProtocolId};
use serde_json::{Map, Value};
use std::collections::HashSet;

/// One call found in a reply.
#[derive(Debug, Clone)]
pub(super) enum Incoming {
    /// A call to check and run.
    Call(ToolCall),
    /// A native call whose arguments are not a JSON object: it is answered
    /// with why, never run.
    Unreadable { call: ToolCall, why: String },
}

impl Incoming {
    pub(super) fn call(&self) -> &ToolCall {
        match self {
            Incoming::Call(call) | Incoming::Unreadable { call, .. } => call,
        }
    }
}

/// The calls in `reply`, in order, and what the parser repaired or
/// dropped. Calls without an id of their own are numbered from
/// `first_number`, so ids stay unique across a conversation.
pub(super) fn calls_in(
    reply: &Reply,
    protocol: ProtocolId,
    declared: &Declared,
    first_number: usize,
) -> (Vec<Incoming>, Vec<String>) {
    let (calls, warnings) = if protocol == ProtocolId::Native && !reply.tool_calls.is_empty() {
        (native_calls(reply), Vec::new())
    } else {
        let parsed = protocol.protocol().parse(&reply.content, declared);
        let calls = ToolCall::from_reply(&reply.content, &parsed.calls)
            .into_iter()
            .zip(&parsed.calls)
            .map(|(mut call, parsed)| {
                if parsed.id.is_none() {
                    call.id.clear();
                }
                Incoming::Call(call)
            })
            .collect();
        (calls, parsed.warnings.iter().map(ToString::to_string).collect())
    };
    (number(calls, first_number), warnings)
}

/// The calls the native API assembled; arguments are JSON text, read as
/// leniently as the text protocols read theirs.
fn native_calls(reply: &Reply) -> Vec<Incoming> {
    reply
        .tool_calls
        .iter()
        .map(|native| {
            let call = ToolCall { raw: native.arguments.clone(), ..ToolCall::with_map(&native.id, &native.name, Map::new()) };
            match arguments_of(&native.arguments) {
                Ok(args) => Incoming::Call(ToolCall { args, ..call }),
                Err(why) => Incoming::Unreadable { why: format!("the arguments of `{}` are {why}", native.name), call },
            }
        })
        .collect()
}

/// `{"a": 1}`, possibly encoded as a JSON string; nothing at all is no
/// arguments.
fn arguments_of(text: &str) -> Result<Map<String, Value>, String> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match lenient_json::parse_prefix(text) {
        Ok((Value::Object(args), ..)) => Ok(args),
        Ok((Value::String(inner), ..)) if inner.trim_start().starts_with('{') => arguments_of(&inner),
        Ok((other, ..)) => Err(format!("not a JSON object but {}", json_type(&other))),
        Err(error) => Err(format!("not JSON: {} (at byte {})", error.message, error.offset)),
    }
}

/// Give every call without an id, or with one an earlier call of the reply
/// already has, the id `call-N`.
fn number(mut calls: Vec<Incoming>, first_number: usize) -> Vec<Incoming> {
    let mut seen = HashSet::new();
    for (index, incoming) in calls.iter_mut().enumerate() {
        let call = match incoming {
            Incoming::Call(call) | Incoming::Unreadable { call, .. } => call,
        };
        if call.id.is_empty() || !seen.insert(call.id.clone()) {
            call.id = format!("call-{}", first_number + index);
            seen.insert(call.id.clone());
        }
    }
    calls
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
            ],
            ..Reply::default()
        };
        let (calls, warnings) = calls_in(&reply, ProtocolId::Native, &Declared::default(), 7);
        assert!(warnings.is_empty());
        let ids: Vec<&str> = calls.iter().map(|c| c.call().id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c", "call-10", "call-11"], "missing and repeated ids are numbered");
        assert!(matches!(&calls[0], Incoming::Call(c) if c.args == *json!({"expression": "1+1"}).as_object().unwrap()));
        assert!(matches!(&calls[1], Incoming::Call(c) if c.args["expression"] == "2"));
        assert!(matches!(&calls[2], Incoming::Unreadable { why, .. } if why.contains("an array")));
        assert!(matches!(&calls[3], Incoming::Call(c) if c.args.is_empty()));
    }

    #[test]
    fn text_calls_are_numbered_from_where_the_conversation_is() {
        let reply = Reply {
            content: "<<<[TOOL_REQUEST]>>>\ntool_name:「始」now「末」\n<<<[END_TOOL_REQUEST]>>>\n\
                      <<<[TOOL_REQUEST]>>>\ntool_name:「始」now「末」\n<<<[END_TOOL_REQUEST]>>>"
                .into(),
            ..Reply::default()
        };
        let (calls, _) = calls_in(&reply, ProtocolId::Vcp, &Declared::new(["now"]), 3);
        let ids: Vec<&str> = calls.iter().map(|c| c.call().id.as_str()).collect();
        assert_eq!(ids, ["call-3", "call-4"]);
        // Native protocol, a model without the native API: JSON in the text.
        let reply = Reply { content: r#"{"name": "now", "arguments": {}}"#.into(), ..Reply::default() };
        let (calls, _) = calls_in(&reply, ProtocolId::Native, &Declared::new(["now"]), 1);
        assert_eq!(calls.len(), 1);
    }
}
