//! The OpenAI-compatible native format: tools rendered as the `tools`
//! JSON-schema array, calls read from a `tool_calls` object or array.

use super::json_call::{self, Trust};
use super::lenient_json;
use super::marker_index::{Listed, MarkerIndex};
use super::scan::{Collector, Reasoning};
use super::{Declared, Parsed, Protocol, ProtocolId, result_text};
use crate::manifest::{ParamSpec, ParamType, ToolSpec};
use crate::message::Message;
use crate::outcome::ToolOutcome;
use serde_json::{Map, Value, json};

/// What native looks for, listed in one pass: the markers of reasoning
/// (`<think>`, `[THINK]`), where a call is not looked for, and the brackets
/// that open JSON.
pub(crate) const LISTED: Listed = [b'<', b'[', b'{'];

/// The native protocol.
#[derive(Debug, Clone, Copy)]
pub struct Native;

impl Protocol for Native {
    fn id(&self) -> ProtocolId {
        ProtocolId::Native
    }

    fn render(&self, tools: &[&ToolSpec]) -> String {
        serde_json::to_string_pretty(&tools_schema(tools)).unwrap_or_default()
    }

    /// The first JSON object or array outside reasoning is read as the
    /// `tool_calls` message, array, or single call; text around it is
    /// content.
    fn parse(&self, reply: &str, declared: &Declared) -> Parsed {
        let mut out = Collector::new(reply);
        let markers = MarkerIndex::new(reply, &[LISTED]);
        let reasoning = Reasoning::find(&markers);
        let mut at = 0;
        while let Some(start) = markers.find_open_bracket(at) {
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
pub fn tools_schema(tools: &[&ToolSpec]) -> Value {
    Value::Array(tools.iter().map(|tool| tool_schema(tool)).collect())
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

/// Tool declarations in a file that is not an OpenAI `tools` array.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool {index}: {what}")]
#[non_exhaustive]
pub struct ToolsSchemaError {
    /// Which tool of the array, from 0.
    pub index: usize,
    /// What is wrong with it.
    pub what: String,
}

/// The tools an OpenAI `tools` array declares (or an object holding one
/// under `tools`), each `{"type": "function", "function": {"name",
/// "description", "parameters"}}` or the function alone: the inverse of
/// [`tools_schema`]. A parameter's type is its schema's `type` (the first
/// that is not `null` when it lists several); `object`, `array`, `null`,
/// a union (`anyOf`, `oneOf`) or no type at all is any JSON value. Tools
/// read this way belong to no plugin: their `plugin` is `tools`.
///
/// # Errors
/// When `tools` is not such an array, or a tool has no name.
pub fn tools_from_schema(tools: &Value) -> Result<Vec<ToolSpec>, ToolsSchemaError> {
    let tools = tools.get("tools").unwrap_or(tools);
    let Value::Array(items) = tools else {
        return Err(ToolsSchemaError { index: 0, what: "expected an array of tools".into() });
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| tool_from_schema(item).map_err(|what| ToolsSchemaError { index, what }))
        .collect()
}

/// One tool of an OpenAI `tools` array.
fn tool_from_schema(item: &Value) -> Result<ToolSpec, String> {
    let function = item.get("function").unwrap_or(item);
    let name = function.get("name").and_then(Value::as_str).ok_or("it has no `name`")?;
    let description = function.get("description").and_then(Value::as_str).unwrap_or_default();
    let parameters = function.get("parameters").or_else(|| function.get("input_schema"));
    let required: Vec<&str> = parameters
        .and_then(|p| p.get("required"))
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let properties = parameters.and_then(|p| p.get("properties")).and_then(Value::as_object);
    let params = properties
        .into_iter()
        .flatten()
        .map(|(key, schema)| ParamSpec {
            name: key.clone(),
            ty: schema_type(schema),
            description: schema.get("description").and_then(Value::as_str).unwrap_or_default().to_owned(),
            required: required.contains(&key.as_str()),
        })
        .collect();
    Ok(ToolSpec { params, ..ToolSpec::new(name, "tools", description) })
}

/// The type a parameter's JSON Schema declares: its `type` (the one that is
/// not `null` of a list), else that of the first of its `anyOf` or `oneOf`
/// branches that is not `null` (Pydantic's `Optional[T]`). The type names
/// vLLM's XML parsers accept beside JSON Schema's (`int`, `float`, `double`,
/// `bool`, `str`) count as theirs.
fn schema_type(schema: &Value) -> ParamType {
    let named = match schema.get("type") {
        Some(Value::String(ty)) => Some(type_named(ty)),
        Some(Value::Array(types)) => types.iter().filter_map(Value::as_str).find(|ty| *ty != "null").map(type_named),
        _ => None,
    };
    named.or_else(|| first_branch_type(schema)).unwrap_or(ParamType::Json)
}

/// The type of the first branch of a schema's `anyOf` or `oneOf` that is
/// not `null`, as vLLM's XML parsers type by it.
fn first_branch_type(schema: &Value) -> Option<ParamType> {
    let branches = schema.get("anyOf").or_else(|| schema.get("oneOf"))?.as_array()?;
    branches.iter().find(|branch| branch.get("type").and_then(Value::as_str) != Some("null")).map(schema_type)
}

/// The type a schema's `type` names.
fn type_named(name: &str) -> ParamType {
    match name {
        "string" | "str" => ParamType::String,
        "integer" | "int" => ParamType::Integer,
        "number" | "float" | "double" => ParamType::Number,
        "boolean" | "bool" => ParamType::Boolean,
        _ => ParamType::Json,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_read_back_from_their_schema() {
        let forecast = super::super::forecast();
        let read = tools_from_schema(&tools_schema(&[&forecast])).unwrap();
        let types: Vec<_> = read[0].params.iter().map(|p| (p.name.as_str(), p.ty)).collect();
        let declared: Vec<_> = forecast.params.iter().map(|p| (p.name.as_str(), p.ty)).collect();
        assert_eq!((read[0].name.as_str(), types), ("forecast", declared));
        let file = json!({"tools": [{"name": "f", "parameters": {"type": "object", "required": ["a"], "properties": {
            "a": {"type": ["integer", "null"]}, "b": {"type": "array"}, "c": {"anyOf": [{"type": "string"}]}, "d": {"type": "object"},
            "e": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 5}, "f": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "g": {"type": "float"}, "h": {"anyOf": [{"type": "null"}, {"type": "array", "items": {"type": "string"}}]}}}}]});
        let read = tools_from_schema(&file).unwrap();
        let types: Vec<_> = read[0].params.iter().map(|p| (p.name.as_str(), p.ty, p.required)).collect();
        assert_eq!(
            types,
            [
                ("a", ParamType::Integer, true),
                ("b", ParamType::Json, false),
                ("c", ParamType::String, false),
                ("d", ParamType::Json, false),
                ("e", ParamType::Integer, false),
                ("f", ParamType::String, false),
                ("g", ParamType::Number, false),
                ("h", ParamType::Json, false),
            ]
        );
        assert_eq!(tools_from_schema(&json!([{"function": {}}])).unwrap_err().to_string(), "tool 0: it has no `name`");
        assert_eq!(tools_from_schema(&json!({"a": 1})).unwrap_err().to_string(), "tool 0: expected an array of tools");
    }

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
