//! Parse-only recognition of every format: the four protocols' own, and the
//! formats models drift into on their own:
//!
//! - Hermes / Qwen: `<tool_call>{"name", "arguments"}</tool_call>`;
//! - Mistral: `[TOOL_CALLS][{…}]`, `[TOOL_CALLS]name{…}` and
//!   `[TOOL_CALLS]name[ARGS]{…}`;
//! - Llama 3: `{"name", "parameters"}`, with or without `<|python_tag|>`;
//! - pythonic: `[get_weather(city="Paris"), now()]`;
//! - `<function=name>{…}</function>`;
//! - fenced JSON objects and arrays, and an OpenAI `tool_calls` message.
//!
//! Bare (unfenced, untagged) JSON and pythonic lists are calls only when
//! they name a declared tool, so an example in prose never runs. When two
//! recognizers claim overlapping text, the one that starts first wins.

use super::json_block::{format_json_results, scan_fences};
use super::json_call::{self, Trust};
use super::lenient_json;
use super::scan::{Collector, Reasoning, find, find_open_bracket};
use super::vcp::VCP;
use super::xml_tag::scan_tags;
use super::{Declared, Parsed, ParsedCall, Protocol, ProtocolId};
use crate::manifest::ToolSpec;
use crate::message::Message;
use crate::outcome::ToolOutcome;
use serde_json::{Map, Value};

/// The auto protocol: parses anything, renders nothing of its own (it
/// renders as json-block when asked).
#[derive(Debug, Clone, Copy)]
pub struct Auto;

impl Protocol for Auto {
    fn id(&self) -> ProtocolId {
        ProtocolId::Auto
    }

    fn render(&self, tools: &[ToolSpec]) -> String {
        super::json_block::JsonBlock.render(tools)
    }

    fn parse(&self, reply: &str, declared: &Declared) -> Parsed {
        let reasoning = Reasoning::find(reply);
        let mut out = Collector::new(reply);
        VCP.scan(reply, &mut out);
        scan_fences(reply, &reasoning, declared, true, &mut out);
        scan_tags(reply, &reasoning, declared, &mut out);
        scan_function_tags(reply, &reasoning, &mut out);
        scan_prefixed(reply, &reasoning, declared, &mut out);
        scan_tool_calls_message(reply, declared, &mut out);
        scan_bare(reply, &reasoning, declared, &mut out);
        out.finish()
    }

    fn format_results(&self, outcomes: &[ToolOutcome]) -> Vec<Message> {
        format_json_results(outcomes)
    }
}

/// Opens a `<function=name>{…}</function>` call.
pub(crate) const FUNCTION_OPEN: &str = "<function=";
/// Closes it.
pub(crate) const FUNCTION_CLOSE: &str = "</function>";
/// Mistral's and Llama's prefixes before a call.
pub(crate) const PREFIXES: [&str; 2] = ["[TOOL_CALLS]", "<|python_tag|>"];

/// `<function=name>{…}</function>`.
fn scan_function_tags(reply: &str, reasoning: &Reasoning, out: &mut Collector<'_>) {
    const OPEN: &str = FUNCTION_OPEN;
    const CLOSE: &str = FUNCTION_CLOSE;
    let mut at = 0;
    while let Some(open) = find(reply, at, OPEN) {
        at = open + OPEN.len();
        if reasoning.contains(open) {
            continue;
        }
        let Some(name_end) = find(reply, at, ">") else { break };
        let name = reply[at..name_end].trim();
        let body = name_end + 1;
        let Some(close) = find(reply, body, CLOSE) else {
            out.warn(open, format!("<function={name}> is not closed; it is not a call"));
            break;
        };
        let text = reply[body..close].trim();
        let arguments = if text.is_empty() {
            Some(Map::new())
        } else {
            object_at(reply, body + (reply[body..close].len() - reply[body..close].trim_start().len()), out)
        };
        if let Some(arguments) = arguments {
            out.call(ParsedCall { id: None, name: name.to_owned(), arguments, reserved: Map::new(), span: open..close + CLOSE.len() });
        }
        at = close + CLOSE.len();
    }
}

/// Mistral's `[TOOL_CALLS]` and Llama's `<|python_tag|>` prefixes.
fn scan_prefixed(reply: &str, reasoning: &Reasoning, declared: &Declared, out: &mut Collector<'_>) {
    for marker in PREFIXES {
        let mut at = 0;
        while let Some(found) = find(reply, at, marker) {
            at = found + marker.len();
            if reasoning.contains(found) {
                continue;
            }
            let start = at + (reply[at..].len() - reply[at..].trim_start().len());
            if reply[start..].starts_with(['[', '{']) {
                match lenient_json::parse_prefix(&reply[start..]) {
                    Ok((value, used, repairs)) => {
                        json_call::report(&repairs, start, out);
                        json_call::collect_value(value, found..start + used, Trust::Explicit, declared, out);
                        at = start + used;
                    }
                    Err(e) => out.warn(start + e.offset, format!("the call after {marker} is not JSON: {}", e.message)),
                }
                continue;
            }
            // `name{…}` or `name[ARGS]{…}`.
            let name_end = start + reply[start..].find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).unwrap_or(reply.len() - start);
            let name = &reply[start..name_end];
            let mut args_at = name_end;
            if reply[args_at..].starts_with("[ARGS]") {
                args_at += "[ARGS]".len();
            }
            if name.is_empty() || !reply[args_at..].starts_with('{') {
                out.warn(found, format!("nothing recognisable follows {marker}"));
                continue;
            }
            if let Ok((Value::Object(arguments), used, repairs)) = lenient_json::parse_prefix(&reply[args_at..]) {
                json_call::report(&repairs, args_at, out);
                out.call(ParsedCall { id: None, name: name.to_owned(), arguments, reserved: Map::new(), span: found..args_at + used });
                at = args_at + used;
            } else {
                out.warn(args_at, format!("the arguments of `{name}` are not a JSON object"));
            }
        }
    }
}

/// A whole reply that is an OpenAI message with `tool_calls`.
fn scan_tool_calls_message(reply: &str, declared: &Declared, out: &mut Collector<'_>) {
    let trimmed = reply.trim();
    if !trimmed.starts_with('{') || !trimmed.contains("\"tool_calls\"") {
        return;
    }
    let start = reply.len() - reply.trim_start().len();
    if let Ok((value @ Value::Object(_), _)) = lenient_json::parse(trimmed) {
        json_call::collect_value(value, start..start + trimmed.len(), Trust::Explicit, declared, out);
    }
}

/// Bare JSON objects or arrays that name a declared tool, and pythonic
/// lists of declared tools. After a failed attempt the scan resumes where
/// reading stopped, so the time stays linear on any input.
fn scan_bare(reply: &str, reasoning: &Reasoning, declared: &Declared, out: &mut Collector<'_>) {
    let mut at = 0;
    loop {
        // A resume point can fall inside a multi-byte character, or past
        // the end.
        at = at.min(reply.len());
        while !reply.is_char_boundary(at) {
            at += 1;
        }
        let Some(found) = find_open_bracket(reply, at) else { break };
        at = found + 1;
        if let Some(end) = reasoning.skip(found) {
            at = end;
            continue;
        }
        match bare_opening(reply, found) {
            BareOpening::Pythonic => {
                if let Some(end) = pythonic(reply, found, declared, out) {
                    at = end;
                }
                continue;
            }
            BareOpening::Json => {}
            BareOpening::Neither => continue,
        }
        match lenient_json::parse_prefix(&reply[found..]) {
            Ok((value, used, repairs)) => {
                // Repairs are reported only for JSON that turned out to be a call.
                let before = out.len();
                json_call::collect_value(value, found..found + used, Trust::Declared, declared, out);
                if out.len() > before {
                    json_call::report(&repairs, found, out);
                }
                at = found + used;
            }
            Err(error) => at = found + error.offset.max(1),
        }
    }
}

/// What the bracket at `open` may start, read as a bare call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BareOpening {
    /// `[name`: a pythonic list, if `name(` follows and is declared.
    Pythonic,
    /// `{"name"` or `[{"name"` (or single-quoted): a JSON call, if it names
    /// a declared tool.
    Json,
    /// Neither.
    Neither,
}

/// What the `{` or `[` at `open` of `reply` may start.
pub(crate) fn bare_opening(reply: &str, open: usize) -> BareOpening {
    let bytes = reply.as_bytes();
    let after = skip_ws(bytes, open + 1);
    let names_first = |at: usize| reply[at..].starts_with("\"name\"") || reply[at..].starts_with("'name'");
    match bytes[open] {
        b'[' if bytes.get(after).is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_') => BareOpening::Pythonic,
        b'{' if names_first(after) => BareOpening::Json,
        b'[' if bytes.get(after) == Some(&b'{') && names_first(skip_ws(bytes, after + 1)) => BareOpening::Json,
        _ => BareOpening::Neither,
    }
}

/// The first function of a pythonic list at `open`, `[name(`, whether or
/// not it is declared.
pub(crate) fn pythonic_head(reply: &str, open: usize) -> Option<&str> {
    let bytes = reply.as_bytes();
    let start = skip_ws(bytes, open + 1);
    let end = function_name_end(bytes, start);
    (end > start && bytes.get(end) == Some(&b'(')).then(|| &reply[start..end])
}

/// Where a pythonic function name starting at `p` ends.
fn function_name_end(bytes: &[u8], mut p: usize) -> usize {
    while bytes.get(p).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'.') {
        p += 1;
    }
    p
}

/// `[f(a=1, b="x"), g()]` at `open`, if every function is declared.
/// Returns where reading stopped.
fn pythonic(reply: &str, open: usize, declared: &Declared, out: &mut Collector<'_>) -> Option<usize> {
    let bytes = reply.as_bytes();
    let mut p = open + 1;
    let mut calls = Vec::new();
    loop {
        p = skip_ws(bytes, p);
        let name_start = p;
        p = function_name_end(bytes, p);
        let name = &reply[name_start..p];
        if name.is_empty() || !declared.contains(name) || bytes.get(p) != Some(&b'(') {
            return Some(p.max(open + 1));
        }
        p += 1;
        let mut arguments = Map::new();
        loop {
            p = skip_ws(bytes, p);
            if bytes.get(p) == Some(&b')') {
                p += 1;
                break;
            }
            let key_start = p;
            while bytes.get(p).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_') {
                p += 1;
            }
            let key = &reply[key_start..p];
            p = skip_ws(bytes, p);
            if key.is_empty() || bytes.get(p) != Some(&b'=') {
                out.warn(p, format!("`{name}(…)` takes keyword arguments only"));
                return Some(p.max(open + 1));
            }
            p = skip_ws(bytes, p + 1);
            let (value, used, _) = match lenient_json::parse_prefix(&reply[p..]) {
                Ok(read) => read,
                Err(e) => return Some(p + e.offset.max(1)),
            };
            arguments.insert(key.to_owned(), value);
            p = skip_ws(bytes, p + used);
            match bytes.get(p) {
                Some(b',') => p += 1,
                Some(b')') => {}
                _ => return Some(p.max(open + 1)),
            }
        }
        calls.push((name.to_owned(), arguments));
        p = skip_ws(bytes, p);
        match bytes.get(p) {
            Some(b',') => p += 1,
            Some(b']') => {
                p += 1;
                break;
            }
            _ => return Some(p),
        }
    }
    let span = open..p;
    let calls = calls
        .into_iter()
        .map(|(name, arguments)| ParsedCall { id: None, name, arguments, reserved: Map::new(), span: span.clone() })
        .collect();
    out.calls(span, calls);
    Some(p)
}

fn skip_ws(bytes: &[u8], mut p: usize) -> usize {
    while bytes.get(p).is_some_and(|b| b.is_ascii_whitespace()) {
        p += 1;
    }
    p
}

/// Read a JSON object at `at`, warning when it is not one.
fn object_at(reply: &str, at: usize, out: &mut Collector<'_>) -> Option<Map<String, Value>> {
    match lenient_json::parse_prefix(&reply[at..]) {
        Ok((Value::Object(map), _, repairs)) => {
            json_call::report(&repairs, at, out);
            Some(map)
        }
        Ok(_) => {
            out.warn(at, "the arguments are not a JSON object");
            None
        }
        Err(e) => {
            out.warn(at + e.offset, format!("the arguments are not JSON: {}", e.message));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(reply: &str) -> Parsed {
        Auto.parse(reply, &Declared::new(["get_weather", "calculate", "now"]))
    }

    fn calls(reply: &str) -> Vec<(String, Value)> {
        parse(reply).calls.into_iter().map(|c| (c.name, Value::Object(c.arguments))).collect()
    }

    fn one(name: &str, args: Value) -> Vec<(String, Value)> {
        vec![(name.to_owned(), args)]
    }

    #[test]
    fn hermes_and_qwen_tool_call_tags() {
        let reply = "I'll check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
        assert_eq!(calls(reply), one("get_weather", json!({"city": "Paris"})));
        assert_eq!(parse(reply).content, "I'll check.");
    }

    #[test]
    fn mistral_array_and_name_forms() {
        assert_eq!(
            calls("[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}, {\"name\": \"now\", \"arguments\": {}}]"),
            vec![("get_weather".into(), json!({"city": "Oslo"})), ("now".into(), json!({}))]
        );
        assert_eq!(calls("[TOOL_CALLS]get_weather{\"city\": \"Rome\"}"), one("get_weather", json!({"city": "Rome"})));
        assert_eq!(calls("[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Rome\"}"), one("get_weather", json!({"city": "Rome"})));
    }

    #[test]
    fn llama_json_with_and_without_python_tag() {
        let bare = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Lima\"}}";
        assert_eq!(calls(bare), one("get_weather", json!({"city": "Lima"})));
        assert_eq!(calls(&format!("<|python_tag|>{bare}<|eom_id|>")), one("get_weather", json!({"city": "Lima"})));
        assert_eq!(
            calls("<|python_tag|>{\"name\": \"undeclared\", \"parameters\": {}}"),
            one("undeclared", json!({})),
            "the python tag is explicit markup"
        );
    }

    #[test]
    fn pythonic_lists() {
        assert_eq!(
            calls("[get_weather(city=\"Paris\", days=3), now()]"),
            vec![("get_weather".into(), json!({"city": "Paris", "days": 3})), ("now".into(), json!({}))]
        );
        assert_eq!(calls("[get_weather(city='Paris', metric=True)]"), one("get_weather", json!({"city": "Paris", "metric": true})));
        assert!(calls("see [print(x=1)] in the docs").is_empty(), "only declared functions");
    }

    #[test]
    fn function_tags() {
        assert_eq!(calls("<function=get_weather>{\"city\": \"Kyiv\"}</function>"), one("get_weather", json!({"city": "Kyiv"})));
    }

    #[test]
    fn fenced_objects_and_arrays() {
        assert_eq!(calls("```json\n{\"name\": \"calculate\", \"arguments\": {\"expression\": \"2\"}}\n```"), one("calculate", json!({"expression": "2"})));
        assert_eq!(
            calls("```\n[{\"name\": \"now\", \"arguments\": {}}, {\"name\": \"calculate\", \"arguments\": {\"expression\": \"3\"}}]\n```"),
            vec![("now".into(), json!({})), ("calculate".into(), json!({"expression": "3"}))]
        );
    }

    #[test]
    fn the_protocols_own_formats() {
        assert_eq!(calls("<<<[TOOL_REQUEST]>>>tool_name:「始」now「末」<<<[END_TOOL_REQUEST]>>>"), one("now", json!({})));
        assert_eq!(calls("<tool_code>{\"name\": \"now\", \"arguments\": {}}</tool_code>"), one("now", json!({})));
        assert_eq!(
            calls("{\"tool_calls\": [{\"id\": \"c1\", \"type\": \"function\", \"function\": {\"name\": \"now\", \"arguments\": \"{}\"}}]}"),
            one("now", json!({}))
        );
    }

    #[test]
    fn a_bare_json_object_is_a_call_only_for_a_declared_tool() {
        assert!(calls("An example: {\"name\": \"delete_everything\", \"arguments\": {}}").is_empty());
        assert_eq!(calls("Calling {\"name\": \"now\", \"arguments\": {}} now").len(), 1);
    }

    #[test]
    fn calls_in_reasoning_are_not_calls() {
        assert!(calls("<think>maybe <tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call></think>No tools needed.").is_empty());
        assert!(calls("<think>[get_weather(city=\"x\")] {\"name\": \"now\"}").is_empty());
    }

    #[test]
    fn arguments_given_as_a_json_string_even_twice_encoded_are_decoded() {
        assert_eq!(calls("<tool_call>{\"name\": \"now\", \"arguments\": \"{\\\"zone\\\": \\\"UTC\\\"}\"}</tool_call>"), one("now", json!({"zone": "UTC"})));
        let twice = serde_json::to_string(&serde_json::to_string(&json!({"zone": "UTC"})).unwrap()).unwrap();
        let reply = format!("<tool_call>{{\"name\": \"now\", \"arguments\": {twice}}}</tool_call>");
        assert_eq!(calls(&reply), one("now", json!({"zone": "UTC"})));
        assert!(parse(&reply).warnings.iter().any(|w| w.message == "repaired: arguments given as a JSON string"));
    }

    #[test]
    fn found_by_the_property_test() {
        // A resume point inside a multi-byte character panicked; one past
        // the end looped forever.
        assert!(calls("「末ESCAPE」[calc(x=𝃢🕴.;").is_empty());
        assert!(calls("[calc(x=").is_empty());
        assert!(calls("{\"name\": \"now\", \"arguments\": ").is_empty());
    }

    #[test]
    fn one_call_is_not_found_twice() {
        let reply = "```json\n{\"name\": \"now\", \"arguments\": {}}\n```\n<tool_call>{\"name\": \"calculate\", \"arguments\": {\"expression\": \"1\"}}</tool_call>";
        assert_eq!(calls(reply).len(), 2);
    }
}
