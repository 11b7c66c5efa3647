//! MiniMax M3: every tag behind the namespace token `]<]minimax[>[`, the
//! calls in one `<tool_call>` element, each an `<invoke name="NAME">` whose
//! arguments are elements named by their keys:
//!
//! ```text
//! ]<]minimax[>[<tool_call>
//! ]<]minimax[>[<invoke name="NAME">]<]minimax[>[<city>Paris]<]minimax[>[</city>…]<]minimax[>[</invoke>
//! ]<]minimax[>[</tool_call>
//! ```
//!
//! An argument holding elements is an object, or an array when every one
//! is an `<item>` (as the template writes lists); a key written twice
//! holds an array. A top-level value is text, typed by the declaration in
//! the check step; a nested one is a JSON number, boolean or `null` when it
//! reads as one, else text (vLLM types nested values by their schema, which
//! the declaration does not hold). Reasoning is `<mm:think>…</mm:think>`.
//! The closing `</tool_call>` may be left out.

use super::super::ParsedCall;
use super::super::lenient_json::MAX_DEPTH;
use super::super::scan::{Collector, find};
use super::function_tag::quoted_name;
use super::section::{self, CallTokens};
use super::{Scope, attribute_name, exact_number, markup_name};
use serde_json::{Map, Value};
use std::collections::HashSet;

/// Stands before every tag.
pub(crate) const NAMESPACE: &str = "]<]minimax[>[";
/// Opens the calls.
const SECTION_BEGIN: &str = "]<]minimax[>[<tool_call>";
/// Closes them.
const SECTION_END: &str = "]<]minimax[>[</tool_call>";
/// Opens a call, up to its name's value.
const INVOKE_OPEN: &str = "]<]minimax[>[<invoke name=";
/// Closes a call.
const INVOKE_CLOSE: &str = "]<]minimax[>[</invoke>";
/// Opens an element, after the namespace token.
const ELEMENT_OPEN: &str = "<";
/// Opens a closing tag, after the namespace token.
const ELEMENT_CLOSE: &str = "</";
/// An array's elements.
const ITEM: &str = "item";
/// Every marker this module reads.
pub(crate) const MARKERS: [&str; 4] = [SECTION_BEGIN, SECTION_END, INVOKE_OPEN, INVOKE_CLOSE];

/// Whether the `<tool_call>` at `open` is an M3 section's.
pub(super) fn opens_section(reply: &str, open: usize) -> bool {
    reply[..open].ends_with(NAMESPACE)
}

/// The M3 section whose `<tool_call>` stands at `open`, found by the scan
/// for `<tool_call>` elements (outside reasoning), so that prose costs no
/// search of its own.
pub(super) fn read(scope: &Scope<'_>, open: usize, out: &mut Collector<'_>) {
    let found = open - NAMESPACE.len();
    if scope.markup_trust(found).is_some() {
        section::read(scope, found, found + SECTION_BEGIN.len(), &mut Reader::default(), out);
    }
}

/// Reads the calls of a section.
#[derive(Default)]
struct Reader {
    /// Where the section's closing tag stands (or the reply ends), once
    /// looked for: searched once per section, not once per bad call.
    section_end: Option<usize>,
}

impl Reader {
    /// Where the section being read ends, at or after `p`.
    fn section_end(&mut self, reply: &str, p: usize) -> usize {
        match self.section_end {
            Some(end) if end >= p => end,
            _ => *self.section_end.insert(find(reply, p, SECTION_END).unwrap_or(reply.len())),
        }
    }
}

impl CallTokens for Reader {
    fn section_end(&self, rest: &str) -> Option<usize> {
        rest.starts_with(SECTION_END).then_some(SECTION_END.len())
    }

    fn opens_call(&self, rest: &str) -> bool {
        rest.starts_with(INVOKE_OPEN)
    }

    fn call(&mut self, scope: &Scope<'_>, at: usize, out: &mut Collector<'_>) -> (Option<ParsedCall>, usize) {
        let reply = scope.reply;
        let Some((name, mut p)) =
            quoted_name(reply, at + INVOKE_OPEN.len()).and_then(|(name, p)| Some((attribute_name(name)?, p)))
        else {
            out.warn(at, "an invoke tag does not name a tool; it is not a call");
            return (None, at + INVOKE_OPEN.len());
        };
        let mut arguments = Repeating::default();
        loop {
            p += reply[p..].len() - reply[p..].trim_start().len();
            if let Some(after) = reply[p..].strip_prefix(INVOKE_CLOSE) {
                let end = reply.len() - after.len();
                let call = scope.markup_calls(at, name).then(|| ParsedCall {
                    id: None,
                    name: name.to_owned(),
                    arguments: arguments.map,
                    reserved: Map::new(),
                    span: at..end,
                });
                return (call, end);
            }
            match element(reply, p, 0) {
                Ok((key, value, end)) => {
                    arguments.insert(key, leaf_text(value));
                    p = end;
                }
                Err(Stop::Malformed) => {
                    out.warn(p, format!("expected {NAMESPACE}<KEY> or {INVOKE_CLOSE} in the call to `{name}`; it is not a call"));
                    // Resume within the section: past its end, the search
                    // would take the text after it along, and repeated by
                    // every section of a hostile reply, be quadratic.
                    let section_end = self.section_end(reply, p);
                    let close = find(&reply[..section_end], p, INVOKE_CLOSE);
                    return (None, close.map_or(section_end, |close| close + INVOKE_CLOSE.len()));
                }
                Err(Stop::CutOff) => {
                    out.warn(at, format!("a call is cut off before its {INVOKE_CLOSE}; it is not a call"));
                    return (None, reply.len());
                }
            }
        }
    }
}

/// Why reading an element stopped.
enum Stop {
    /// The reply ended first.
    CutOff,
    /// The text is no element.
    Malformed,
}

/// A value read from an element: text, or what its children make.
enum Read {
    Text(String),
    Value(Value),
}

/// A top-level argument: its text as written, for the check step to type.
fn leaf_text(read: Read) -> Value {
    match read {
        Read::Text(text) => Value::String(text),
        Read::Value(value) => value,
    }
}

/// A nested value: a JSON scalar when the text reads as one.
fn nested(read: Read) -> Value {
    match read {
        Read::Text(text) => match serde_json::from_str::<Value>(text.trim()) {
            Ok(Value::Number(_)) => exact_number(text.trim()).map_or(Value::String(text), Value::Number),
            Ok(scalar @ (Value::Bool(_) | Value::Null)) => scalar,
            _ => Value::String(text),
        },
        Read::Value(value) => value,
    }
}

/// The element whose namespace token stands at `at`: its tag, its value
/// and where its closing tag ends.
fn element(reply: &str, at: usize, depth: usize) -> Result<(&str, Read, usize), Stop> {
    if depth > MAX_DEPTH {
        return Err(Stop::Malformed);
    }
    let rest = &reply[at..];
    let Some(open) = rest.strip_prefix(NAMESPACE).and_then(|r| r.strip_prefix(ELEMENT_OPEN)) else {
        return Err(if NAMESPACE.starts_with(rest) { Stop::CutOff } else { Stop::Malformed });
    };
    if open.starts_with('/') {
        return Err(Stop::Malformed);
    }
    let tag_at = reply.len() - open.len();
    let Some(tag_length) = open.bytes().position(|b| b == b'>') else { return Err(Stop::CutOff) };
    let tag = &open[..tag_length];
    if markup_name(tag).is_none() {
        return Err(Stop::Malformed);
    }
    let body = tag_at + tag_length + 1;
    let close = |p: usize| {
        let rest = reply[p..].strip_prefix(NAMESPACE)?.strip_prefix(ELEMENT_CLOSE)?.strip_prefix(tag)?.strip_prefix('>')?;
        Some(reply.len() - rest.len())
    };
    let children_start = body + reply[body..].len() - reply[body..].trim_start().len();
    let opens_child = |p: usize| {
        reply[p..].strip_prefix(NAMESPACE).is_some_and(|r| r.starts_with(ELEMENT_OPEN) && !r.starts_with(ELEMENT_CLOSE))
    };
    if !opens_child(children_start) {
        // Text up to the next namespace token, which must close the element.
        let text_end = find(reply, body, NAMESPACE).ok_or(Stop::CutOff)?;
        return match close(text_end) {
            Some(end) => Ok((tag, Read::Text(reply[body..text_end].to_owned()), end)),
            None if format!("{NAMESPACE}{ELEMENT_CLOSE}{tag}>").starts_with(&reply[text_end..]) => Err(Stop::CutOff),
            None => Err(Stop::Malformed),
        };
    }
    let mut children: Vec<(&str, Value)> = Vec::new();
    let mut p = children_start;
    loop {
        p += reply[p..].len() - reply[p..].trim_start().len();
        if let Some(end) = close(p) {
            return Ok((tag, Read::Value(assemble(children)), end));
        }
        let (child, value, end) = element(reply, p, depth + 1)?;
        children.push((child, nested(value)));
        p = end;
    }
}

/// An element's children as a value: an array of `<item>`s, else an
/// object whose repeated keys hold arrays.
fn assemble(children: Vec<(&str, Value)>) -> Value {
    if children.iter().all(|(tag, _)| *tag == ITEM) {
        return Value::Array(children.into_iter().map(|(_, value)| value).collect());
    }
    let mut object = Repeating::default();
    for (tag, value) in children {
        object.insert(tag, value);
    }
    Value::Object(object.map)
}

/// An object whose keys written more than once hold arrays of their
/// values (a value that is an array itself stays one element).
#[derive(Default)]
struct Repeating {
    map: Map<String, Value>,
    repeated: HashSet<String>,
}

impl Repeating {
    fn insert(&mut self, key: &str, value: Value) {
        match self.map.get_mut(key) {
            None => {
                self.map.insert(key.to_owned(), value);
            }
            Some(Value::Array(values)) if self.repeated.contains(key) => values.push(value),
            Some(first) => {
                *first = Value::Array(vec![first.take(), value]);
                self.repeated.insert(key.to_owned());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, checked, no_calls, one, parse, prose, warnings};
    use super::NAMESPACE as NS;
    use serde_json::{Value, json};

    fn two_calls() -> String {
        format!(
            "{NS}<tool_call>\n{NS}<invoke name=\"get_weather\">{NS}<city>Beijing{NS}</city>{NS}<date>2024-12-25{NS}</date>{NS}</invoke>\n{NS}<invoke name=\"now\">{NS}</invoke>\n{NS}</tool_call>"
        )
    }

    fn both() -> Vec<(String, Value)> {
        vec![("get_weather".into(), json!({"city": "Beijing", "date": "2024-12-25"})), ("now".into(), json!({}))]
    }

    #[test]
    fn minimax_m3_calls_alone_after_prose_and_after_reasoning() {
        assert_eq!(calls(&two_calls()), both());
        let parsed = parse(&two_calls());
        assert_eq!((parsed.content.as_str(), parsed.warnings.len()), ("", 0), "{:?}", parsed.warnings);
        let reply = format!("<mm:think>The user wants the weather.</mm:think>I will check.\n{}", two_calls());
        assert_eq!(calls(&reply), both());
        assert_eq!(parse(&reply).content, "<mm:think>The user wants the weather.</mm:think>I will check.");
        let unclosed = two_calls().replace(&format!("\n{NS}</tool_call>"), "");
        assert_eq!(calls(&unclosed), both(), "the section's end left out");
    }

    #[test]
    fn minimax_m3_nested_values() {
        let order = format!(
            "{NS}<tool_call>\n{NS}<invoke name=\"create_order\">{NS}<user_id>42{NS}</user_id>{NS}<note>Leave it at the desk.{NS}</note>{NS}<shipping>{NS}<city>Singapore{NS}</city>{NS}<zip>18956{NS}</zip>{NS}</shipping>{NS}<items>{NS}<item>{NS}<sku>book-001{NS}</sku>{NS}<qty>2{NS}</qty>{NS}</item>{NS}<item>{NS}<sku>pen-007{NS}</sku>{NS}<qty>5{NS}</qty>{NS}</item>{NS}</items>{NS}<duplicate_demo>{NS}<tag>a{NS}</tag>{NS}<tag>b{NS}</tag>{NS}</duplicate_demo>{NS}</invoke>\n{NS}</tool_call>"
        );
        let expected = json!({
            "user_id": "42",
            "note": "Leave it at the desk.",
            "shipping": {"city": "Singapore", "zip": 18956},
            "items": [{"sku": "book-001", "qty": 2}, {"sku": "pen-007", "qty": 5}],
            "duplicate_demo": {"tag": ["a", "b"]},
        });
        assert_eq!(calls(&order), one("create_order", expected));
        let typed = format!(
            "{NS}<tool_call>{NS}<invoke name=\"forecast\">{NS}<city>42{NS}</city>{NS}<days>3{NS}</days>{NS}<ratio>0.5{NS}</ratio>{NS}<metric>true{NS}</metric>{NS}<options>{NS}<hourly>true{NS}</hourly>{NS}<x>null{NS}</x>{NS}</options>{NS}</invoke>{NS}</tool_call>"
        );
        assert_eq!(
            Value::Object(checked(&typed)),
            json!({"city": "42", "days": 3, "ratio": 0.5, "metric": true, "options": {"hourly": true, "x": null}})
        );
    }

    #[test]
    fn a_cut_off_minimax_m3_call_is_a_warning_not_a_call() {
        let calls_text = two_calls();
        let last = format!("{NS}<invoke name=\"now\">");
        let cut = &calls_text[..calls_text.find(&last).unwrap() + last.len()];
        assert_eq!(calls(cut), one("get_weather", json!({"city": "Beijing", "date": "2024-12-25"})), "only the complete call");
        assert_eq!(warnings(cut), [format!("a call is cut off before its {NS}</invoke>; it is not a call")]);
        let mid_value = format!("{NS}<tool_call>\n{NS}<invoke name=\"get_weather\">{NS}<city>Bei");
        assert_eq!(calls(&mid_value), vec![]);
        let broken = format!("{NS}<tool_call>{NS}<invoke name=\"now\">{NS}</user_id>{NS}</invoke>{NS}</tool_call>");
        assert_eq!(calls(&broken), vec![]);
        assert_eq!(warnings(&broken), [format!("expected {NS}<KEY> or {NS}</invoke> in the call to `now`; it is not a call")]);
        let twice = format!(
            "{NS}<tool_call>{NS}<invoke name=\"get_weather\">{NS}<city>a{NS}</city>{NS}<city>b{NS}</city>{NS}</invoke>{NS}</tool_call>"
        );
        assert_eq!(calls(&twice), one("get_weather", json!({"city": ["a", "b"]})), "a top-level key written twice");
        let lists = format!(
            "{NS}<tool_call>{NS}<invoke name=\"get_weather\">{NS}<city>{NS}<item>a{NS}</item>{NS}</city>{NS}<city>{NS}<item>b{NS}</item>{NS}</city>{NS}</invoke>{NS}</tool_call>"
        );
        assert_eq!(calls(&lists), one("get_weather", json!({"city": [["a"], ["b"]]})), "a repeated key holding lists");
        let unclosed = format!("{NS}<tool_call>{NS}<invoke name=\"now\">{NS}</x>{NS}</tool_call>\nThe answer is 4.");
        assert_eq!(parse(&unclosed).content.trim(), "The answer is 4.", "a bad call takes nothing past its section");
        assert_eq!(calls(&format!("{unclosed}\n{}", two_calls())).len(), 2, "nor the calls after it");
    }

    #[test]
    fn minimax_m3_tokens_in_prose_or_code_are_not_calls() {
        no_calls(&[
            &format!("M3 writes `{NS}<tool_call>{NS}<invoke name=\"delete_all\">{NS}</invoke>{NS}</tool_call>`."),
            &format!("<mm:think>{NS}<tool_call>{NS}<invoke name=\"now\">{NS}</invoke>{NS}</tool_call></mm:think>"),
            &format!("<think>{NS}<tool_call>{NS}<invoke name=\"now\">{NS}</invoke></think>"),
        ]);
        prose(&format!("It opens with {NS}<tool_call> first."));
    }
}
