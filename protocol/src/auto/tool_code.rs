//! Gemma's `tool_code`, as Google's function-calling prompt for Gemma
//! teaches it: pythonic calls in a fenced block whose language is
//! `tool_code` (a call only for a declared tool, as in any fence), or in a
//! `<tool_code>` element (explicit markup; a JSON body there is read as
//! xml-tag's). A `print(…)` around a call, as the prompt's examples show
//! it, is no part of the call.

use super::super::ParsedCall;
use super::super::json_call;
use super::super::scan::{Collector, FENCE};
use super::super::xml_tag::{self, TOOL_CODE};
use super::{Scope, pythonic};
use serde_json::Map;
use std::ops::Range;

/// The fence's language.
const LANGUAGE: &str = "tool_code";
/// What the prompt's examples wrap a call in.
const PRINT: &str = "print(";

/// Every `tool_code` block and `<tool_code>` element outside reasoning.
pub(super) fn scan(scope: &Scope<'_>, out: &mut Collector<'_>) {
    scan_fences(scope, out);
    scan_elements(scope, out);
}

fn scan_fences(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let reply = scope.reply;
    let mut at = 0;
    while let Some(open) = scope.markers.find(at, FENCE) {
        let info = open + FENCE.len();
        let line_end = reply[info..].find('\n').map_or(reply.len(), |at| info + at);
        let body = (line_end + 1).min(reply.len());
        let close = scope.markers.find(body, FENCE);
        at = close.map_or(reply.len(), |close| close + FENCE.len());
        if reply[info..line_end].trim() != LANGUAGE {
            continue;
        }
        if let Some(end) = scope.reasoning.skip(open) {
            at = end;
            continue;
        }
        let Some(close) = close else {
            out.warn(open, format!("a ```{LANGUAGE} block is not closed; it is not a call"));
            continue;
        };
        read(scope, body..close, open..close + FENCE.len(), |name| scope.declared.contains(name), out);
    }
}

fn scan_elements(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let reply = scope.reply;
    for element in xml_tag::elements(&scope.markers, &scope.reasoning, TOOL_CODE) {
        let Some(trust) = scope.element_trust(element.open..element.end.unwrap_or(element.body.end)) else { continue };
        let Some(end) = element.end else {
            xml_tag::unclosed(reply, &element, TOOL_CODE.0, out);
            continue;
        };
        let (body, span) = (element.body.clone(), element.open..end);
        if !read(scope, body.clone(), span.clone(), |name| scope.markup_calls(element.open, name), out) {
            json_call::collect_text(&reply[body.clone()], body.start, span, trust, scope.declared, out);
        }
    }
}

/// The pythonic calls that are the whole of `body`, collected at `span`
/// where `callable` allows their names: whether `body` is pythonic calls
/// (read, though none was callable), else left for another reader.
fn read(
    scope: &Scope<'_>,
    body: Range<usize>,
    span: Range<usize>,
    callable: impl Fn(&str) -> bool,
    out: &mut Collector<'_>,
) -> bool {
    let reply = scope.reply;
    let raw = &reply[body.clone()];
    let text = raw.trim();
    let start = body.start + (raw.len() - raw.trim_start().len());
    let (start, end) = match text.strip_prefix(PRINT).and_then(|inner| inner.strip_suffix(')')) {
        Some(inner) if pythonic::opens_call(inner.trim_start()) => (start + PRINT.len(), start + PRINT.len() + inner.len()),
        _ => (start, start + text.len()),
    };
    if !pythonic::opens_call(&reply[start..end]) {
        return false;
    }
    if let Some(calls) = pythonic::sequence(reply, start, end, callable, pythonic::Strings::Loose, out) {
        let call = |(name, arguments)| ParsedCall { id: None, name, arguments, reserved: Map::new(), span: span.clone() };
        out.calls(span.clone(), calls.into_iter().map(call).collect());
    }
    true
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, no_calls, one, parse, warnings};
    use serde_json::json;

    #[test]
    fn gemmas_tool_code_blocks_and_elements_are_calls() {
        let paris = one("get_weather", json!({"city": "Paris"}));
        for reply in [
            "```tool_code\nget_weather(city=\"Paris\")\n```",
            "```tool_code\nprint(get_weather(city=\"Paris\"))\n```",
            "<tool_code>get_weather(city='Paris')</tool_code>",
            "<tool_code>\nprint(get_weather(city=\"Paris\"))\n</tool_code>",
        ] {
            assert_eq!(calls(reply), paris, "{reply}");
            assert_eq!(parse(reply).content, "", "{reply}: its markup is no content");
            assert_eq!(warnings(reply), Vec::<String>::new(), "{reply}");
        }
        let two = "I'll check both.\n```tool_code\nget_weather(city=\"Paris\")\nnow()\n```";
        assert_eq!(calls(two), [paris[0].clone(), ("now".to_owned(), json!({}))]);
        assert_eq!(parse(two).content, "I'll check both.");
        // The element's JSON is still read as xml-tag's.
        assert_eq!(calls("<tool_code>{\"name\": \"now\", \"arguments\": {}}</tool_code>"), one("now", json!({})));
    }

    #[test]
    fn a_tool_code_block_calls_only_declared_tools_and_code_is_no_call() {
        no_calls(&[
            "```tool_code\ndelete_all()\n```",
            "```python\nget_weather(city=\"Paris\")\n```",
            "```tool_code\nx = get_weather(city=\"Paris\")\n```",
            "<think>```tool_code\nget_weather(city=\"Paris\")\n```</think>It is sunny.",
            "`<tool_code>get_weather(city='Paris')</tool_code>` is how Gemma calls.",
        ]);
        // In an element, any tool: it is markup.
        assert_eq!(calls("<tool_code>delete_all()</tool_code>"), one("delete_all", json!({})));
        let cut = "```tool_code\nget_weather(city=\"Paris\")";
        assert_eq!((calls(cut), warnings(cut).len()), (vec![], 1), "cut off: a warning, no call");
    }
}
