//! Calls written as JSON, in the shapes models use: `{"name", "arguments"}`
//! (Hermes, Qwen, xml-tag), `{"name", "parameters"}` (Llama 3),
//! `{"name", "args"}`, `{"tool_call_id", "tool_name", "parameters"}`
//! (Command R), Anthropic's `{"type": "tool_use", "id", "name", "input"}`,
//! `{"tool", "tool_input"}`,
//! `{"action": "tool_call", …}` (json-block), `{"action": NAME,
//! "action_input": {…}}` (LangChain's structured chat and JSON agents),
//! OpenAI `tool_calls` items
//! `{"function": {"name", "arguments"}}`, llama.cpp's generic
//! `{"tool_call": {"name", "arguments"}}`, a `{"tool_calls": […]}` message,
//! and arrays of any of these. Arguments given as a JSON string, even
//! encoded twice, are decoded; a string that is no JSON (`"action_input":
//! "Paris"`) is one text input, for the tool's one parameter
//! ([`TEXT_INPUT_KEY`](super::call::TEXT_INPUT_KEY)).

use super::call::{looks_like_json, text_input};
use super::lenient_json::{self, Repair};
use super::scan::Collector;
use super::{Declared, ParsedCall};
use serde_json::{Map, Value};
use std::ops::Range;

/// The keys a call names its tool by, in order of preference.
const NAME_KEYS: [&str; 4] = ["name", "tool_name", "function", TOOL_KEY];
/// The keys of an object that only wraps a call.
const WRAPPER_KEYS: [&str; 3] = ["tool_call", "function_call", TOOL_KEY];
/// Names the tool (`{"tool": NAME, "tool_input": {…}}`, LangChain's agent
/// actions as prompts spell them), or wraps a call (GLM's stray
/// `{"tool": {…}}`).
const TOOL_KEY: &str = "tool";
/// The keys a call gives its arguments under, in order of preference:
/// `input` in Anthropic's `tool_use` blocks, which models trained on them
/// write as JSON, `tool_input` beside `tool`.
const ARGUMENT_KEYS: [&str; 5] = ["arguments", PARAMETERS_KEY, "args", "input", "tool_input"];
/// Arguments for Llama 3, but the JSON Schema of a tool definition's too.
const PARAMETERS_KEY: &str = "parameters";
/// The keys a call gives its id under, in order of preference.
const ID_KEYS: [&str; 2] = ["id", "tool_call_id"];
/// LangChain's agents name the tool by `action` and give its input here.
pub(crate) const ACTION_INPUT_KEY: &str = "action_input";
/// The `action` with which a LangChain agent answers rather than calls.
pub(crate) const FINAL_ANSWER: &str = "Final Answer";
/// What a tool's definition says it does; no call says so.
const DESCRIPTION_KEY: &str = "description";

/// How far a piece of JSON is trusted to be a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trust {
    /// Marked up as a call (a tag, a `[TOOL_CALLS]` prefix, `"action":
    /// "tool_call"` in a json-block fence): any name counts.
    Explicit,
    /// Bare or merely fenced JSON: a call only when it names a declared
    /// tool or says `"action": "tool_call"`, so examples in prose never run.
    Declared,
}

/// Read `text` (which stands at `base` in the reply), the whole of what
/// markup closes, as lenient JSON ([`lenient_json::parse_closed`]) and
/// collect the calls it holds.
pub(crate) fn collect_text(
    text: &str,
    base: usize,
    span: Range<usize>,
    trust: Trust,
    declared: &Declared,
    out: &mut Collector<'_>,
) {
    match lenient_json::parse_closed(text) {
        Ok((value, repairs)) => {
            out.json_read_at(base + (text.len() - text.trim_start().len()));
            report(&repairs, base, out);
            collect_value(value, span, trust, declared, out);
        }
        Err(error) => out.warn(base + error.offset, format!("not a JSON call: {}", error.message)),
    }
}

/// Collect the calls in an already parsed value found at `span`.
pub(crate) fn collect_value(value: Value, span: Range<usize>, trust: Trust, declared: &Declared, out: &mut Collector<'_>) {
    let mut calls = Vec::new();
    gather(value, &span, trust, declared, out, &mut calls, 0);
    out.calls(span, calls);
}

pub(crate) fn report(repairs: &[Repair], base: usize, out: &mut Collector<'_>) {
    for repair in repairs {
        out.warn(base + repair.offset, format!("repaired: {}", repair.what));
    }
}

fn gather(
    value: Value,
    span: &Range<usize>,
    trust: Trust,
    declared: &Declared,
    out: &mut Collector<'_>,
    calls: &mut Vec<ParsedCall>,
    depth: usize,
) {
    if depth > 2 {
        return;
    }
    match value {
        Value::Array(items) => {
            for item in items {
                gather(item, span, trust, declared, out, calls, depth + 1);
            }
        }
        Value::Object(mut object) => {
            if let Some(Value::Array(items)) = object.remove("tool_calls") {
                for item in items {
                    gather(item, span, Trust::Explicit, declared, out, calls, depth + 1);
                }
                return;
            }
            // A call wrapped in an object of its own: llama.cpp's generic
            // format `{"tool_call": {…}}`, OpenAI's legacy `{"function_call":
            // {…}}` as fine-tunes copy it, GLM's stray `{"tool": {…}}`.
            let named = NAME_KEYS.iter().any(|&key| object.get(key).is_some_and(|name| key != TOOL_KEY || name.is_string()));
            let wrapper = WRAPPER_KEYS.iter().find(|key| !named && object.get(**key).is_some_and(Value::is_object));
            if let Some(Some(call)) = wrapper.map(|key| object.remove(*key)) {
                gather(call, span, trust, declared, out, calls, depth + 1);
                return;
            }
            // `"function": "NAME"` names the call instead (GLM 4.7 strays into it).
            let function_object = object.get("function").is_some_and(Value::is_object);
            if let Some(Value::Object(function)) = function_object.then(|| object.remove("function")).flatten() {
                let found = calls.len();
                gather(Value::Object(function), span, trust, declared, out, calls, depth + 1);
                // The id sits beside `function`: {"id", "type", "function"}.
                if let (Some(Value::String(id)), Some(call)) = (object.remove("id"), calls.get_mut(found)) {
                    call.id = Some(id);
                }
                return;
            }
            if let Some(call) = call_from(object, span, trust, declared, out) {
                calls.push(call);
            }
        }
        _ => {}
    }
}

fn call_from(
    mut object: Map<String, Value>,
    span: &Range<usize>,
    trust: Trust,
    declared: &Declared,
    out: &mut Collector<'_>,
) -> Option<ParsedCall> {
    let action = object.remove("action");
    let input = object.remove(ACTION_INPUT_KEY);
    let (says_call, name, raw) = match (action, input) {
        (Some(Value::String(a)), input) if a == "tool_call" => {
            let Some(Value::String(name)) = remove_first(&mut object, &NAME_KEYS) else { return None };
            (true, name, input.map(|input| (ACTION_INPUT_KEY, input)))
        }
        // LangChain's agents: the action names the tool; its final answer
        // is no call.
        (Some(Value::String(name)), Some(input))
            if name != FINAL_ANSWER && !NAME_KEYS.iter().any(|k| object.contains_key(*k)) =>
        {
            (false, name, Some((ACTION_INPUT_KEY, input)))
        }
        (Some(_), _) => return None,
        (None, input) => {
            // Unmarked, `tool` names a call only beside its arguments: a log
            // of past steps (`{"tool": NAME, "result": …}`) names tools too.
            let by_tool = !NAME_KEYS.iter().any(|&key| key != TOOL_KEY && object.contains_key(key));
            let no_arguments = input.is_none() && !ARGUMENT_KEYS.iter().any(|key| object.contains_key(*key));
            if by_tool && no_arguments && trust == Trust::Declared {
                return None;
            }
            let Some(Value::String(name)) = remove_first(&mut object, &NAME_KEYS) else { return None };
            (false, name, input.map(|input| (ACTION_INPUT_KEY, input)))
        }
    };
    if trust == Trust::Declared && !says_call && !declared.contains(&name) {
        return None;
    }
    // A tool's definition, as a prompt lists it, names a tool and says what
    // it does, and gives no arguments.
    if raw.is_none() && object.contains_key(DESCRIPTION_KEY) && !ARGUMENT_KEYS.iter().any(|key| object.contains_key(*key)) {
        return None;
    }
    let raw = ARGUMENT_KEYS.iter().find_map(|&key| Some((key, object.remove(key)?))).or(raw);
    // A tool definition, as the native prompt lists them, names a tool too;
    // its `parameters` are a JSON Schema, not arguments.
    if let Some((PARAMETERS_KEY, parameters)) = &raw
        && is_object_schema(parameters)
    {
        return None;
    }
    // One text for the tool's one parameter (`"action_input": "Paris"`):
    // in markup, or as LangChain's JSON agents write it. Bare JSON whose
    // arguments are a text is more likely prose about a tool than a call,
    // and a tool's definition has a description beside them.
    let text_allowed =
        (trust == Trust::Explicit || matches!(raw, Some((ACTION_INPUT_KEY, _)))) && !object.contains_key(DESCRIPTION_KEY);
    let raw = raw.map(|(_, value)| value);
    let id = match remove_first(&mut object, &ID_KEYS) {
        Some(Value::String(id)) => Some(id),
        _ => None,
    };
    let decoded = match raw {
        None | Some(Value::Null) => Decoded::Arguments(Map::new()),
        Some(Value::Object(map)) => Decoded::Arguments(map),
        Some(Value::String(text)) => decode_string_arguments(&text, span.start, out)?,
        Some(scalar @ (Value::Number(_) | Value::Bool(_))) => Decoded::Text(scalar.to_string()),
        Some(_) => {
            out.warn(span.start, format!("the arguments of `{name}` are not an object; the call is dropped"));
            return None;
        }
    };
    let (arguments, reserved) = match decoded {
        Decoded::Arguments(arguments) => (arguments, Map::new()),
        Decoded::Text(text) if text_allowed => (Map::new(), text_input(&text)),
        // Bare JSON that is no call is prose, not warned of; markup is.
        Decoded::Text(_) => {
            if trust == Trust::Explicit {
                out.warn(span.start, format!("the arguments of `{name}` are a text, not a JSON object; it is not a call"));
            }
            return None;
        }
    };
    Some(ParsedCall { id, name, arguments, reserved, span: span.clone() })
}

/// What a family's arguments, written as a JSON string, hold.
enum Decoded {
    /// Named arguments.
    Arguments(Map<String, Value>),
    /// One text, for the tool's one parameter.
    Text(String),
}

/// Arguments a family wrote as a JSON value: an object, or a JSON string
/// holding one (Kimi K2 encodes them twice at times), decoded with a
/// warning; `None` for anything else.
pub(crate) fn arguments_of(value: Value, offset: usize, out: &mut Collector<'_>) -> Option<Map<String, Value>> {
    match value {
        Value::Object(map) => Some(map),
        Value::String(text) => match decode_string_arguments(&text, offset, out)? {
            Decoded::Arguments(map) => Some(map),
            Decoded::Text(_) => {
                out.warn(offset, "the arguments are a text, not a JSON object; it is not a call");
                None
            }
        },
        _ => None,
    }
}

/// Whether `object` names a call or wraps one, by its keys.
pub(crate) fn names_a_call(object: &Map<String, Value>) -> bool {
    NAME_KEYS.iter().chain(&WRAPPER_KEYS).any(|key| object.contains_key(*key))
}

/// The value of the first of `keys` that `object` has, taken out.
fn remove_first(object: &mut Map<String, Value>, keys: &[&str]) -> Option<Value> {
    keys.iter().find_map(|key| object.remove(*key))
}

/// `{"type": "object", "properties": {…}}`: the schema of a tool's
/// parameters.
fn is_object_schema(value: &Value) -> bool {
    value.get("type").and_then(Value::as_str) == Some("object") && value.get("properties").is_some_and(Value::is_object)
}

/// `"arguments": "{\"a\": 1}"`, possibly encoded more than once; or a
/// text that is no JSON object (`Paris`, `"rust wasm" tutorial`, a JSON
/// string of one), which is one text input.
fn decode_string_arguments(text: &str, offset: usize, out: &mut Collector<'_>) -> Option<Decoded> {
    let mut current = Value::String(text.to_owned());
    let mut decoded = false;
    for _ in 0..3 {
        match current {
            Value::String(s) if s.trim_start().is_empty() => return Some(Decoded::Arguments(Map::new())),
            Value::String(s) if !looks_like_json(&s) => return Some(Decoded::Text(s)),
            Value::String(s) => match lenient_json::parse(&s) {
                Ok((value, _)) => {
                    decoded = true;
                    current = value;
                }
                // A quoted phrase and more: text, not JSON.
                Err(_) if s.trim_start().starts_with('"') => return Some(Decoded::Text(s)),
                Err(e) => {
                    out.warn(offset, format!("the arguments string is not JSON: {}", e.message));
                    return None;
                }
            },
            Value::Object(map) => {
                if decoded {
                    out.warn(offset, "repaired: arguments given as a JSON string");
                }
                return Some(Decoded::Arguments(map));
            }
            _ => break,
        }
    }
    match current {
        Value::Object(map) => {
            out.warn(offset, "repaired: arguments given as a JSON string");
            Some(Decoded::Arguments(map))
        }
        Value::Number(_) | Value::Bool(_) => Some(Decoded::Text(current.to_string())),
        _ => {
            out.warn(offset, "the arguments are not an object; the call is dropped");
            None
        }
    }
}
