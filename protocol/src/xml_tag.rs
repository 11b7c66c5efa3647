//! `<tool_code>{"name": …, "arguments": {…}}</tool_code>`: a JSON payload
//! inside a tag, so code in arguments survives. `<tool_call>` is accepted
//! too.

use super::json_block::{format_json_results, render_layers};
use super::json_call::{self, Trust};
use super::lenient_json;
use super::marker_index::{MARKUP, MarkerIndex};
use super::scan::{Collector, Forward, Reasoning};
use super::{Declared, Parsed, Protocol, ProtocolId, example_arguments};
use crate::manifest::ToolSpec;
use crate::message::Message;
use crate::outcome::ToolOutcome;
use serde_json::{Value, json};
use std::ops::Range;

/// The xml-tag protocol.
#[derive(Debug, Clone, Copy)]
pub(crate) struct XmlTag;

const RULES: &str = "## How to call a tool

To call a tool, write its name and arguments as JSON inside a tag:

<tool_code>{\"name\": \"<tool name>\", \"arguments\": {\"<parameter>\": <value>}}</tool_code>

Rules:
- One tag per call; several tags run in order.
- The content is strict JSON; escape quotes and newlines inside strings.
- After the tags, stop. The results come back in the next message; never invent them.
";

/// The protocol's own tag, open and close.
pub(crate) const TOOL_CODE: (&str, &str) = ("<tool_code>", "</tool_code>");
/// Hermes' tag, which `auto` also reads with other bodies (GLM's,
/// Qwen3-Coder's).
pub(crate) const TOOL_CALL: (&str, &str) = ("<tool_call>", "</tool_call>");
/// The tags whose content is a JSON call, open and close.
pub(crate) const TAGS: &[(&str, &str)] = &[TOOL_CODE, TOOL_CALL];

impl Protocol for XmlTag {
    fn id(&self) -> ProtocolId {
        ProtocolId::XmlTag
    }

    fn render(&self, tools: &[&ToolSpec]) -> String {
        render_layers(RULES, tools, |tool| {
            let call = json!({ "name": tool.name, "arguments": example_arguments(tool) });
            format!("<tool_code>{call}</tool_code>")
        })
    }

    fn parse(&self, reply: &str, declared: &Declared) -> Parsed {
        let mut out = Collector::new(reply);
        let markers = MarkerIndex::new(reply, &[MARKUP]);
        scan_tags(&markers, &Reasoning::find(&markers), declared, &mut out);
        out.finish()
    }

    fn format_results(&self, outcomes: &[ToolOutcome]) -> Vec<Message> {
        format_json_results(outcomes)
    }
}

/// Every `<tool_code>` / `<tool_call>` element outside reasoning.
pub(crate) fn scan_tags(markers: &MarkerIndex<'_>, reasoning: &Reasoning, declared: &Declared, out: &mut Collector<'_>) {
    for &tag in TAGS {
        scan_json_tag(markers, reasoning, declared, tag, |_| Some(Trust::Explicit), out);
    }
}

/// Every element of `tag` outside reasoning, its body read as JSON calls
/// trusted as `trust(span)` says (`None`: the element is no call).
pub(crate) fn scan_json_tag(
    markers: &MarkerIndex<'_>,
    reasoning: &Reasoning,
    declared: &Declared,
    tag: (&str, &str),
    trust: impl Fn(Range<usize>) -> Option<Trust>,
    out: &mut Collector<'_>,
) {
    let reply = markers.text();
    for element in elements(markers, reasoning, tag) {
        let Some(trust) = trust(element.open..element.end.unwrap_or(element.body.end)) else { continue };
        match element.end {
            Some(end) => {
                let body = element.body;
                json_call::collect_text(&reply[body.clone()], body.start, element.open..end, trust, declared, out);
            }
            None => unclosed(reply, &element, tag.0, out),
        }
    }
}

/// Warns of the unclosed `element` of the tag `open`, which is no call.
/// One cut off where the tag opens again is a model's attempt before its
/// retry: no prose either.
pub(crate) fn unclosed(reply: &str, element: &Element, open: &str, out: &mut Collector<'_>) {
    if element.body.end < reply.len() {
        out.warn(element.open, format!("{open} is cut off and opened again; it is not a call"));
        out.markup(element.open..element.body.end);
    } else {
        out.warn(element.open, format!("{open} is not closed; it is not a call"));
    }
}

/// One element of a tag: `<tag>body</tag>`.
pub(crate) struct Element {
    /// Where its opening tag starts.
    pub(crate) open: usize,
    /// Its body; to the end of the reply when it is not closed.
    pub(crate) body: Range<usize>,
    /// Where its closing tag ends, if it has one.
    pub(crate) end: Option<usize>,
}

/// The elements of `(open, close)` outside reasoning, in order. An element
/// whose body is a JSON value followed by white space and a `close` closes
/// there; else at the first `close`, unless its body opens like JSON and
/// the tag opens again before that close: then it is cut off there (a
/// model's retry follows), or, where it holds a whole value the next one
/// does not repeat, ends there, its close left out. An element with no
/// close is the last.
pub(crate) fn elements<'a>(
    markers: &'a MarkerIndex<'a>,
    reasoning: &'a Reasoning,
    (open_tag, close_tag): (&'a str, &'a str),
) -> impl Iterator<Item = Element> + 'a {
    let reply = markers.text();
    let mut at = Some(0);
    // Remembered: the elements of one model's retries share a close.
    let mut closes = Forward::indexed(markers, close_tag);
    std::iter::from_fn(move || {
        loop {
            let open = markers.find(at?, open_tag)?;
            if let Some(end) = reasoning.skip(open) {
                at = Some(end);
                continue;
            }
            let body = open + open_tag.len();
            // A string in a JSON body may hold the closing tag.
            let first = closes.next(body);
            let after_value = first.and_then(|_| {
                let text = reply[body..].trim_start();
                let (_, json_at) = json_start(text)?;
                lenient_json::close_after_value(reply, reply.len() - text.len() + json_at, close_tag)
            });
            // A JSON body that is cut off and retried: the tag opens again
            // before it closes.
            let retry = match (after_value, first) {
                (None, Some(first)) if opens_json(reply[body..first].trim_start()) => {
                    markers.find(body, open_tag).filter(|&retry| retry < first)
                }
                _ => None,
            };
            if let Some(retry) = retry {
                at = Some(retry);
                // Unless it holds a whole value that the next does not
                // repeat: its close left out, it is an element of its own.
                let text = reply[body..retry].trim();
                let whole = attempt(text).filter(|(_, used)| *used == text.len());
                // Compared as values: a retry may space its JSON otherwise.
                let next = || attempt(reply[retry + open_tag.len()..].trim_start()).map(|(call, _)| call);
                let closes_here = whole.is_some_and(|(call, _)| next().is_none_or(|next| next != call));
                return Some(Element { open, body: body..retry, end: closes_here.then_some(retry) });
            }
            let Some(close) = after_value.or(first) else {
                at = None;
                return Some(Element { open, body: body..reply.len(), end: None });
            };
            let end = close + close_tag.len();
            at = Some(end);
            return Some(Element { open, body: body..close, end: Some(end) });
        }
    })
}

/// Where the JSON of an element's body starts: at its start, or after a
/// tool's name and white space (GLM 4.7's `get_weather {…}`), with the name
/// (empty when none).
fn json_start(text: &str) -> Option<(&str, usize)> {
    if text.starts_with(['{', '[']) {
        return Some(("", 0));
    }
    let name_len = text.bytes().take_while(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')).count();
    let after = &text[name_len..];
    let json = after.trim_start();
    (name_len > 0 && after.starts_with(char::is_whitespace) && json.starts_with('{'))
        .then(|| (&text[..name_len], text.len() - json.len()))
}

/// Whether an element's body opens with JSON ([`json_start`]).
fn opens_json(text: &str) -> bool {
    json_start(text).is_some()
}

/// The call an element's body opens with, its name (if written before the
/// JSON) and its value, and how far it runs.
fn attempt(text: &str) -> Option<((&str, Value), usize)> {
    let (name, json_at) = json_start(text)?;
    let (value, used, _) = lenient_json::parse_prefix(&text[json_at..]).ok()?;
    Some(((name, value), json_at + used))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_tags_hold_calls_and_code_survives() {
        let reply = "<tool_code>{\"name\": \"write_file\", \"arguments\": {\"content\": \"fn main() {\\n    println!(\\\"</b>\\\");\\n}\"}}</tool_code>\n<tool_call>{\"name\": \"calculate\", \"arguments\": {\"expression\": \"2\"}}</tool_call>";
        let parsed = XmlTag.parse(reply, &Declared::default());
        assert_eq!(parsed.calls.len(), 2, "{:?}", parsed.warnings);
        assert_eq!(
            Value::Object(parsed.calls[0].arguments.clone()),
            json!({"content": "fn main() {\n    println!(\"</b>\");\n}"})
        );
        assert_eq!(parsed.calls[1].name, "calculate");
    }

    #[test]
    fn a_string_holding_the_closing_tag_does_not_close_the_element() {
        for tag in TAGS {
            let content = format!("Wrap calls as {}…{}.", tag.0, tag.1);
            let call = json!({"name": "write_file", "arguments": {"content": content}});
            let reply = format!("Writing.\n{}{call}{}\nDone.", tag.0, tag.1);
            let parsed = XmlTag.parse(&reply, &Declared::default());
            assert_eq!(parsed.calls.len(), 1, "{reply}: {:?}", parsed.warnings);
            assert_eq!(parsed.calls[0].arguments["content"], content.as_str(), "{reply}");
            assert_eq!((parsed.content.as_str(), parsed.warnings.len()), ("Writing.\n\nDone.", 0), "{reply}");
        }
    }

    #[test]
    fn an_unclosed_tag_is_a_warning() {
        let parsed = XmlTag.parse("<tool_code>{\"name\": \"a\"}", &Declared::default());
        assert!(parsed.calls.is_empty());
        assert!(parsed.warnings[0].message.contains("not closed"));
    }
}
