//! Gemma's `tool_code`, as Google's function-calling prompt for Gemma
//! teaches it: pythonic calls in a fenced block whose language is
//! `tool_code` (a call only for a declared tool, as in any fence), or in a
//! `<tool_code>` element (explicit markup; a JSON body there is read as
//! xml-tag's). A `print(…)` around the calls, as the prompt's examples
//! show it, is no part of them. The fences are paired by the fence scan
//! that reads JSON blocks ([`OtherFence`]), so that a fence quoted in a
//! JSON string opens no block here either.

use super::super::ParsedCall;
use super::super::json_block::OtherFence;
use super::super::json_call::{self, Trust};
use super::super::scan::{Collector, FENCE};
use super::super::xml_tag::{self, TOOL_CODE};
use super::{Scope, pythonic};
use serde_json::Map;
use std::ops::Range;

/// The fence's language.
const LANGUAGE: &str = "tool_code";
/// What the prompt's examples wrap a call in.
const PRINT: &str = "print(";

/// A fenced block that is not JSON, as the fence scan pairs them: its calls
/// if its language is `tool_code`.
pub(super) fn read_fence(scope: &Scope<'_>, fence: &OtherFence<'_>, out: &mut Collector<'_>) {
    if fence.language != LANGUAGE {
        return;
    }
    let Some(close) = fence.close else {
        out.warn(fence.open, format!("a ```{LANGUAGE} block is not closed; it is not a call"));
        return;
    };
    read(scope, fence.body..close, fence.open..close + FENCE.len(), |name| scope.declared.contains(name), out);
}

/// Every `<tool_code>` element outside reasoning: pythonic calls, or JSON
/// read as xml-tag's.
pub(super) fn scan_elements(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let reply = scope.reply;
    for element in xml_tag::elements(&scope.markers, &scope.reasoning, TOOL_CODE) {
        let Some(trust) = scope.element_trust(element.open..element.end.unwrap_or(element.body.end)) else { continue };
        let Some(end) = element.end else {
            xml_tag::unclosed(reply, &element, TOOL_CODE.0, out);
            continue;
        };
        let (body, span) = (element.body.clone(), element.open..end);
        let callable = |name: &str| trust == Trust::Explicit || scope.declared.contains(name);
        if !read(scope, body.clone(), span.clone(), callable, out) {
            json_call::collect_text(&reply[body.clone()], body.start, span, trust, scope.declared, out);
        }
    }
}

/// The pythonic calls that `body` opens with, read to its end and collected
/// at `span` where `callable` allows their names. False when `body` does
/// not open with a call, for another reader. Strings are read strictly, as
/// Python writes them: a string running on past its quote would take in a
/// retried call (`city='Par<tool_code>get_weather(city='Paris')`).
fn read(
    scope: &Scope<'_>,
    body: Range<usize>,
    span: Range<usize>,
    callable: impl Fn(&str) -> bool,
    out: &mut Collector<'_>,
) -> bool {
    let reply = scope.reply;
    let trimmed = |range: Range<usize>| {
        let text = &reply[range.clone()];
        let start = range.start + (text.len() - text.trim_start().len());
        start..start + text.trim().len()
    };
    let mut calls = trimmed(body);
    if let Some(inner) = reply[calls.clone()].strip_prefix(PRINT).and_then(|inner| inner.strip_suffix(')')) {
        let inner = trimmed(calls.start + PRINT.len()..calls.start + PRINT.len() + inner.len());
        if pythonic::opens_call(&reply[inner.clone()]) {
            calls = inner;
        }
    }
    if !pythonic::opens_call(&reply[calls.clone()]) {
        return false;
    }
    if let Some(found) = pythonic::sequence(reply, calls.start, calls.end, callable, pythonic::Strings::Strict, out) {
        let call = |(name, arguments)| ParsedCall { id: None, name, arguments, reserved: Map::new(), span: span.clone() };
        out.calls(span.clone(), found.into_iter().map(call).collect());
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
            "<tool_code>print( get_weather(city=\"Paris\") )</tool_code>",
            // Gemini's namespace, and OpenAI's, name no part of the tool.
            "```tool_code\nprint(default_api.get_weather(city=\"Paris\"))\n```",
            "<tool_code>functions.get_weather(city='Paris')</tool_code>",
        ] {
            assert_eq!(calls(reply), paris, "{reply}");
            assert_eq!(parse(reply).content, "", "{reply}: its markup is no content");
            assert_eq!(warnings(reply), Vec::<String>::new(), "{reply}");
        }
        // A fence opened in reasoning pairs with none after it.
        assert_eq!(calls("<think>```python\n</think>\n```tool_code\nget_weather(city=\"Paris\")\n```"), paris);
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
            "```tool_code\ndefault_api.delete_all()\n```",
            "```tool_code\nweather.get_weather(city=\"Paris\")\n```",
            "```python\nget_weather(city=\"Paris\")\n```",
            "```tool_code\nx = get_weather(city=\"Paris\")\n```",
            "<think>```tool_code\nget_weather(city=\"Paris\")\n```</think>It is sunny.",
            "`<tool_code>get_weather(city='Paris')</tool_code>` is how Gemma calls.",
        ]);
        // A fence quoted in a JSON block's string opens no block.
        let quoted = "```json\n{\"note\": \"```\\n```tool_code\\nget_weather(city='Paris')\\n```\"}\n```";
        no_calls(&[quoted]);
        // A retried element: no call takes the retry into its string.
        let retried = "<tool_code>get_weather(city='Par<tool_code>get_weather(city='Paris')</tool_code>";
        assert!(parse(retried).calls.iter().all(|c| c.arguments.get("city") == Some(&json!("Paris"))), "{retried}");
        // In an element, any tool: it is markup.
        assert_eq!(calls("<tool_code>delete_all()</tool_code>"), one("delete_all", json!({})));
        let cut = "```tool_code\nget_weather(city=\"Paris\")";
        assert_eq!((calls(cut), warnings(cut).len()), (vec![], 1), "cut off: a warning, no call");
    }
}
