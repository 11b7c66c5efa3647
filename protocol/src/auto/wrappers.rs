//! Markup around nothing but calls, which the calls' own readers leave:
//! a fenced block (```` ```xml ```` around a `<tool_call>`, as llama.cpp
//! has seen Hermes and Qwen models write) or an element (`<tools>`,
//! `<response>`, `<json>`, dots.llm1's `<dots_function_call>`, … around
//! calls in their own markup or bare JSON). It is no content either,
//! however deeply such wrappers nest.

use super::super::scan::{Code, Collector, FENCE, Quoted};
use super::Scope;
use std::ops::Range;

/// How far back an element's opening tag is looked for.
const MAX_TAG_BYTES: usize = 64;

/// Every wrapper around a run of calls, left out of the content.
pub(super) fn scan(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let reply = scope.reply;
    let spans = out.call_spans();
    if spans.is_empty() {
        return;
    }
    // Runs of calls apart only by white space (a span inside another is
    // part of it).
    let mut runs: Vec<Range<usize>> = Vec::new();
    for span in spans.iter().cloned() {
        match runs.last_mut() {
            Some(run) if span.start < run.end || reply[run.end..span.start].trim().is_empty() => run.end = run.end.max(span.end),
            _ => runs.push(span),
        }
    }
    let code = scope.code.get_or_init(|| Code::find(reply));
    // A fence is looked at once, for the first run in it: any run after
    // that one has it or text before it (looked at again per run, the
    // fence's body cost the square of its length).
    let mut fences_seen = 0;
    for Range { mut start, mut end } in runs {
        loop {
            let around = element_around(reply, start, end)
                .or_else(|| bracket_around(reply, start, end))
                .filter(|&(open, close)| !any_call_in(&spans, open..start) && !any_call_in(&spans, end..close))
                .or_else(|| fence_around(reply, code, start, end, &mut fences_seen));
            let Some((open, close)) = around else { break };
            out.markup(open..start);
            out.markup(end..close);
            (start, end) = (open, close);
        }
    }
}

/// Whether a call was read from any of `within` (`spans` sorted): a tag
/// that holds one is no wrapper.
fn any_call_in(spans: &[Range<usize>], within: Range<usize>) -> bool {
    spans.get(spans.partition_point(|span| span.start < within.start)).is_some_and(|span| span.start < within.end)
}

/// The element whose tags stand around `start..end` with only white space
/// between: where its opening tag starts and its closing tag ends.
fn element_around(reply: &str, start: usize, end: usize) -> Option<(usize, usize)> {
    let before = reply[..start].trim_end();
    let tag_end = before.strip_suffix('>')?.len();
    let floor = tag_end.saturating_sub(MAX_TAG_BYTES);
    let open = floor + before.as_bytes()[floor..tag_end].iter().rposition(|&b| b == b'<')?;
    let tag = &reply[open + 1..tag_end];
    let name = tag.split_ascii_whitespace().next()?;
    let is_name = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':' | '.');
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) || !name.chars().all(is_name) || tag.ends_with('/') {
        return None;
    }
    let after = reply[end..].trim_start();
    let close = after.strip_prefix("</")?.strip_prefix(name)?.strip_prefix('>')?;
    Some((open, reply.len() - close.len()))
}

/// The bracketed tags around `start..end` with only white space between
/// (`[TOOL_CALL] … [/TOOL_CALL]`, as MiniMax M2 writes them under mlx), or
/// the closing one alone after calls that its opening tag starts
/// (`[TOOL_CALLS][…][/TOOL_CALLS]`): where the opening tag starts and the
/// closing one ends.
fn bracket_around(reply: &str, start: usize, end: usize) -> Option<(usize, usize)> {
    let after = reply[end..].trim_start();
    let name_len = after.strip_prefix("[/")?.bytes().take(MAX_TAG_BYTES).position(|b| b == b']')?;
    let name = &after[2..2 + name_len];
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_uppercase() || b == b'_') {
        return None;
    }
    let close = reply.len() - after.len() + name_len + "[/]".len();
    let open_tag = format!("[{name}]");
    if reply[start..].starts_with(&open_tag) {
        return Some((start, close));
    }
    Some((reply[..start].trim_end().strip_suffix(open_tag.as_str())?.len(), close))
}

/// The closed fenced block around `start..end` with only white space
/// between, as the fence scan pairs them: where it starts and ends. Only
/// a fence that starts at or after `seen` is looked at; `seen` is then
/// moved past it.
fn fence_around(reply: &str, code: &Code, start: usize, end: usize, seen: &mut usize) -> Option<(usize, usize)> {
    let (fence, Quoted::Fenced) = code.region(start)? else { return None };
    if fence.start < *seen {
        return None;
    }
    *seen = fence.end;
    let close = fence.end.checked_sub(FENCE.len()).filter(|_| reply[fence.clone()].ends_with(FENCE))?;
    let body = fence.start + reply[fence.clone()].find('\n')? + 1;
    let inside = body <= start && end <= close;
    (inside && reply[body..start].trim().is_empty() && reply[end..close].trim().is_empty()).then_some((fence.start, fence.end))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, one, parse};
    use serde_json::json;

    #[test]
    fn fences_and_elements_around_nothing_but_calls_are_no_content() {
        let call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
        let bare = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}";
        let invoke = "<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n</invoke>";
        for reply in [
            format!("Checking.\n```xml\n{call}\n```\nOne moment."),
            format!("Checking.\n```json\n{call}\n```\nOne moment."),
            format!("Checking.\n```\n{call}\n```\nOne moment."),
            format!("Checking.\n<tools>\n{call}\n</tools>\nOne moment."),
            format!("Checking.\n<response>{bare}</response>\nOne moment."),
            format!("Checking.\n<dots_function_call>\n{invoke}\n</dots_function_call>\nOne moment."),
            format!("Checking.\n```xml\n<tools type=\"calls\">\n{call}\n</tools>\n```\nOne moment."),
            format!("Checking.\n[TOOL_CALL] {bare} [/TOOL_CALL]\nOne moment."),
            format!("Checking.\n[TOOL_CALLS][{bare}][/TOOL_CALLS]\nOne moment."),
        ] {
            assert_eq!(calls(&reply), one("get_weather", json!({"city": "Paris"})), "{reply}");
            assert_eq!(parse(&reply).content, "Checking.\n\nOne moment.", "{reply}");
        }
    }

    #[test]
    fn wrappers_holding_anything_else_stay_whole() {
        let call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
        for (reply, content) in [
            (format!("```xml\n{call}\nThat is how it calls.\n```"), "```xml\n\nThat is how it calls.\n```"),
            (format!("<p>See:</p>\n{call}"), "<p>See:</p>"),
            (format!("<note>Before. {call}</note>"), "<note>Before. </note>"),
            (format!("<a>{call}</b>"), "<a></b>"),
            // Two blocks: the fences of neither pair across the calls.
            (format!("```\ncode\n```\n{call}\n```\nmore\n```"), "```\ncode\n```\n\n```\nmore\n```"),
        ] {
            assert_eq!(calls(&reply).len(), 1, "{reply}");
            assert_eq!(parse(&reply).content, content, "{reply}");
        }
        // A call read from the tag itself keeps it, and both calls stay.
        let reply = "<x title=\"[now()]\">[get_weather(city=\"Paris\")]</x>";
        assert_eq!(calls(reply).len(), 2, "{reply}");
    }
}
