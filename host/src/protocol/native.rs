//! The OpenAI-compatible native format: tools rendered as the `tools`
//! JSON-schema array, calls read from a `tool_calls` object or array.

use super::json_call::{self, Trust};
use super::lenient_json;
use super::scan::{Collector, Reasoning, find_open_bracket};
use super::{Declared, Parsed, Protocol, ProtocolId, result_text};
use crate::manifest::{ParamType, ToolSpec};
use crate::message::Message;
use crate::outcome::ToolOutcome;
use serde_json::{Map, Value, json};

/// The native protocol.
#[derive(Debug, Clone, Copy)]
pub struct Native;

impl Protocol for Native {
    fn id(&self) -> ProtocolId {
        ProtocolId::Native
    }

    fn render(&self, tools: &[ToolSpec]) -> String {
        serde_json::to_string_pretty(&tools_schema(tools)).unwrap_or_default()
    }

    /// The first JSON object or array outside reasoning is read as the
    /// `tool_calls` message, array, or single call; text around it is
    /// content.
    fn parse(&self, reply: &str, declared: &Declared) -> Parsed {
        let mut out = Collector::new(reply);
        let reasoning = Reasoning::find(reply);
        let mut at = 0;
        while let Some(start) = find_open_bracket(reply, at) {
            if let Some(end) = reasoning.skip(start) {
                at = end;
                continue;
            }
            match lenient_json::parse_prefix(&reply[start..]) {
                Ok((value, used, repairs)) => {
                    json_call::report(&repairs, start, &mut out);
                    json_call::collect_value(value, start..start + used, Trust::Explicit, declared, &mut out);
                }
                Err(e) => out.warn(start + e.offset, format!("not a tool_calls JSON: {}", e.message)),
            }
            break;
        }
        out.finish()
    }

    /// One `tool` message per call, answering its `tool_call_id`.
    fn format_results(&self, outcomes: &[ToolOutcome]) -> Vec<Message> {
        outcomes.iter().map(|o| Message::tool(&o.id, result_text(o))).collect()
    }
}

/// The OpenAI `tools` array for `tools`.
pub fn tools_schema(tools: &[ToolSpec]) -> Value {
    Value::Array(tools.iter().map(tool_schema).collect())
}

/// One tool as an OpenAI function definition.
pub fn tool_schema(tool: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": parameters_schema(tool),
        },
    })
}

/// The JSON Schema of a tool's arguments, from its declared params: an
/// object with a typed, described property per param, and the required
/// ones listed. What a native tool definition and MCP's `inputSchema` say.
pub fn parameters_schema(tool: &ToolSpec) -> Value {
    let mut properties = Map::new();
    for p in &tool.params {
        let mut schema = match p.ty {
            ParamType::String => json!({ "type": "string" }),
            ParamType::Integer => json!({ "type": "integer" }),
            ParamType::Number => json!({ "type": "number" }),
            ParamType::Boolean => json!({ "type": "boolean" }),
            ParamType::Json => json!({}),
        };
        schema["description"] = Value::String(p.description.clone());
        properties.insert(p.name.clone(), schema);
    }
    let required: Vec<&str> = tool.params.iter().filter(|p| p.required).map(|p| p.name.as_str()).collect();
    json!({ "type": "object", "properties": properties, "required": required })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_calls_objects_and_arrays_parse() {
        let message = r#"{"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "calculate", "arguments": "{\"expression\": \"1+1\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "current_time", "arguments": "{}"}}]}"#;
        let parsed = Native.parse(message, &Declared::default());
        assert_eq!(parsed.calls.len(), 2);
        assert_eq!(Value::Object(parsed.calls[0].arguments.clone()), json!({"expression": "1+1"}));
        let array = r#"[{"type": "function", "function": {"name": "a", "arguments": {"x": 1}}}]"#;
        assert_eq!(Native.parse(array, &Declared::default()).calls[0].name, "a");
        assert!(Native.parse("just prose", &Declared::default()).calls.is_empty());
    }
}
