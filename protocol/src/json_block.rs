//! Fenced ```json blocks holding
//! `{"action": "tool_call", "name": …, "arguments": {…}}`, several per reply.
//! The prompt has three layers: the rules of the format, the tool list, and
//! guidance by permission level.

use super::json_call::{self, Trust};
use super::lenient_json;
use super::marker_index::{MARKUP, MarkerIndex};
use super::scan::{ACTION, Collector, FENCE, Reasoning, find};
use super::{Declared, Parsed, Protocol, ProtocolId, describe_params, describe_tool, example_arguments, result_text};
use crate::manifest::{Permission, Reach, ToolSpec};
use crate::message::Message;
use crate::outcome::ToolOutcome;
use serde_json::json;

/// The json-block protocol.
#[derive(Debug, Clone, Copy)]
pub(crate) struct JsonBlock;

const BASE_RULES: &str = "## How to call a tool

To call a tool, write a fenced JSON block in exactly this form:

```json
{\"action\": \"tool_call\", \"name\": \"<tool name>\", \"arguments\": {\"<parameter>\": <value>}}
```

Rules:
- One block per call. You may write several blocks in one reply; they run in order.
- \"arguments\" is a JSON object whose keys are the tool's parameters, with values of the declared types.
- Use strict JSON: double quotes, no comments, no trailing commas.
- After the blocks, stop. The results come back in the next message; never invent them.
";

impl Protocol for JsonBlock {
    fn id(&self) -> ProtocolId {
        ProtocolId::JsonBlock
    }

    fn render(&self, tools: &[&ToolSpec]) -> String {
        render_layers(BASE_RULES, tools, |tool| {
            let call = json!({ "action": "tool_call", "name": tool.name, "arguments": example_arguments(tool) });
            format!("```json\n{call}\n```")
        })
    }

    fn parse(&self, reply: &str, declared: &Declared) -> Parsed {
        let mut out = Collector::new(reply);
        let markers = MarkerIndex::new(reply, &[MARKUP]);
        scan_fences(&markers, &Reasoning::find(&markers), declared, false, |_, _| {}, &mut out);
        out.finish()
    }

    fn format_results(&self, outcomes: &[ToolOutcome]) -> Vec<Message> {
        format_json_results(outcomes)
    }
}

/// The three layers: `rules`, the tool list with `example` calls, and the
/// guidance by permission level.
pub(crate) fn render_layers(rules: &str, tools: &[&ToolSpec], example: impl Fn(&ToolSpec) -> String) -> String {
    let mut out = String::from(rules);
    out.push_str("\n## Tools\n");
    for tool in tools {
        out.push_str(&format!(
            "\n### {}\n{}Permission: {}\n{}Example:\n{}\n",
            tool.name,
            describe_tool(tool),
            tool.permission.as_str(),
            describe_params(tool),
            example(tool)
        ));
    }
    out.push_str(&guidance(tools));
    out
}

/// Results as one user message: a fenced JSON array of
/// `{"tool_call_result": {"toolCallId", "result"}}` entries, one per line.
/// Backticks in results are written `\u0060`, so a result cannot close
/// the fence.
pub(crate) fn format_json_results(outcomes: &[ToolOutcome]) -> Vec<Message> {
    let entries: Vec<String> = outcomes
        .iter()
        .map(|o| json!({ "tool_call_result": { "toolCallId": o.id, "result": result_text(o) } }).to_string())
        .collect();
    let array = format!("[\n{}\n]", entries.join(",\n")).replace('`', "\\u0060");
    vec![Message::user(format!("Tool results:\n```json\n{array}\n```"))]
}

/// The third layer: how freely to call each tool, by what it does. A
/// kind no tool is of is left out.
fn guidance(tools: &[&ToolSpec]) -> String {
    let mut text = String::from("\n## When to use them\n");
    for (care, advice) in [
        (Care::Query, "call them whenever they help answer; they only compute."),
        (
            Care::Reading,
            "they read the user's data or reach the network; call them when the request needs it, and say what you are about to do.",
        ),
        (
            Care::Writing,
            "they can read and change the user's files; call them when the request needs it, say what you are about to do, and name any file you will change.",
        ),
        (
            Care::Dangerous,
            "they change or delete things; describe the exact change and get the user's confirmation before calling. A person approves every such call.",
        ),
    ] {
        let names: Vec<&str> = tools.iter().filter(|t| Care::of(t) == care).map(|t| t.name.as_str()).collect();
        if !names.is_empty() {
            text.push_str(&format!("- {} tools ({}): {advice}\n", care.title(), names.join(", ")));
        }
    }
    text
}

/// How freely a model may call a tool: by what it can reach and how much
/// care its author says a call needs, whichever asks for more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Care {
    Query,
    Reading,
    Writing,
    Dangerous,
}

impl Care {
    fn title(self) -> &'static str {
        match self {
            Care::Query => "Query",
            Care::Reading => "Reading",
            Care::Writing => "Writing",
            Care::Dangerous => "Dangerous",
        }
    }

    fn of(tool: &ToolSpec) -> Care {
        match (tool.permission, tool.reach) {
            (Permission::Sensitive, _) => Care::Dangerous,
            (_, Reach::Write) => Care::Writing,
            (Permission::Moderate, _) | (_, Reach::Read) => Care::Reading,
            (Permission::Public, Reach::Compute) => Care::Query,
            // A reach added later: the most care short of a sensitive tool.
            (Permission::Public, _) => Care::Writing,
        }
    }
}

/// A fenced block outside reasoning in a language other than JSON, for a
/// reader of its own ([`scan_fences`] pairs every fence).
pub(crate) struct OtherFence<'a> {
    pub(crate) language: &'a str,
    /// Where its opening fence starts.
    pub(crate) open: usize,
    /// Where its body starts.
    pub(crate) body: usize,
    /// Where its closing fence starts, if it has one.
    pub(crate) close: Option<usize>,
}

/// Every ``` fence outside reasoning whose language is `json` (or, with
/// `any_language`, empty too) is read as JSON calls; but a Python dict in
/// a plain fence with prose after it is an example being explained. Every
/// other fence is passed to `other`.
pub(crate) fn scan_fences(
    markers: &MarkerIndex<'_>,
    reasoning: &Reasoning,
    declared: &Declared,
    any_language: bool,
    mut other: impl FnMut(OtherFence<'_>, &mut Collector<'_>),
    out: &mut Collector<'_>,
) {
    let reply = markers.text();
    let mut at = 0;
    while let Some(open) = markers.find(at, FENCE) {
        let info_start = open + FENCE.len();
        let line_end = find(reply, info_start, "\n").unwrap_or(reply.len());
        let language = reply[info_start..line_end].trim();
        let body = (line_end + 1).min(reply.len());
        let wanted = language.eq_ignore_ascii_case("json") || (any_language && language.is_empty());
        // A string in a JSON body may hold a fence (a Markdown file's
        // content): the block closes after the value.
        let close = markers
            .find(body, FENCE)
            .map(|first| if wanted { lenient_json::close_after_value(reply, body, FENCE).unwrap_or(first) } else { first });
        let next = close.map_or(reply.len(), |c| c + FENCE.len());
        if reasoning.contains(open) {
            at = reasoning.skip(open).unwrap_or(next);
            continue;
        }
        match close {
            _ if !wanted => other(OtherFence { language, open, body, close }, out),
            None => out.warn(open, "a ```json block is not closed; it is not a call"),
            Some(close) => {
                let text = &reply[body..close];
                let explained = language.is_empty() && !reply[close + FENCE.len()..].trim_start().is_empty();
                if explained && is_python_dict(text) {
                    // An example shown in prose, not a call.
                } else if text.trim_start().starts_with(['{', '[']) {
                    let before = out.len();
                    json_call::collect_text(text, body, open..close + FENCE.len(), Trust::Declared, declared, out);
                    if let Some(label) = action_label(reply, open).filter(|_| out.len() > before) {
                        out.markup(label..open);
                    }
                }
            }
        }
        at = next;
    }
}

/// Where an `Action:` label of the fence at `open` starts, on the fence's
/// line or alone on the line before: no prose once the block holds calls.
pub(crate) fn action_label(reply: &str, open: usize) -> Option<usize> {
    let blank = [' ', '\t'];
    let before = reply[..open].trim_end_matches(blank);
    let before = before.strip_suffix('\n').map_or(before, |line| line.strip_suffix('\r').unwrap_or(line)).trim_end_matches(blank);
    let label = before.strip_suffix(ACTION)?.len();
    let line_start = reply[..label].rfind('\n').map_or(0, |at| at + 1);
    reply[line_start..label].trim().is_empty().then_some(label)
}

/// Whether `text` is a Python literal rather than JSON: it reads only with
/// Python's quotes or constants.
fn is_python_dict(text: &str) -> bool {
    const PYTHON: [&str; 4] = ["single-quoted string", "Python True", "Python False", "Python None"];
    lenient_json::parse(text).is_ok_and(|(_, repairs)| repairs.iter().any(|r| PYTHON.contains(&r.what)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn several_blocks_are_calls_and_prose_is_content() {
        let reply = "Sure.\n```json\n{\"action\": \"tool_call\", \"name\": \"calculate\", \"arguments\": {\"expression\": \"1+1\"}}\n```\nThen:\n```json\n{\"action\": \"tool_call\", \"name\": \"current_time\", \"arguments\": {}}\n```";
        let parsed = JsonBlock.parse(reply, &Declared::default());
        let names: Vec<&str> = parsed.calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["calculate", "current_time"]);
        assert_eq!(Value::Object(parsed.calls[0].arguments.clone()), json!({"expression": "1+1"}));
        assert_eq!(parsed.content, "Sure.\n\nThen:");
    }

    #[test]
    fn a_json_example_that_is_not_a_call_is_not_executed() {
        let reply = "The config looks like:\n```json\n{\"name\": \"rm_rf\", \"arguments\": {}}\n```";
        assert!(JsonBlock.parse(reply, &Declared::new(["calculate"])).calls.is_empty());
        assert_eq!(JsonBlock.parse(reply, &Declared::new(["rm_rf"])).calls.len(), 1, "declared names count");
    }

    #[test]
    fn a_string_holding_a_fence_does_not_close_the_block() {
        let declared = Declared::new(["write_file"]);
        let markdown = "Run:\n```sh\nmake\n```\n";
        for json_text in [
            json!({"name": "write_file", "arguments": {"path": "a.md", "content": markdown}}).to_string(),
            // The line breaks written raw, as models do.
            format!("{{\"name\": \"write_file\", \"arguments\": {{\"path\": \"a.md\", \"content\": \"{markdown}\"}}}}"),
        ] {
            let reply = format!("Writing it.\n```json\n{json_text}\n```\nDone.");
            let parsed = JsonBlock.parse(&reply, &declared);
            assert_eq!(parsed.calls.len(), 1, "{reply}: {:?}", parsed.warnings);
            assert_eq!(parsed.calls[0].arguments["content"], markdown, "{reply}");
            assert_eq!(parsed.content, "Writing it.\n\nDone.", "{reply}");
        }
        // Prose between the value and a fence: the first fence closes it.
        let two = "```json\n{\"name\": \"write_file\", \"arguments\": {}}\n```\nThen:\n```json\n{\"name\": \"write_file\", \"arguments\": {}}\n```";
        assert_eq!(JsonBlock.parse(two, &declared).calls.len(), 2);
    }

    #[test]
    fn an_unclosed_fence_is_a_warning() {
        let parsed = JsonBlock.parse("x ```json\n{\"action\": \"tool_call\", \"name\": \"a\"", &Declared::default());
        assert!(parsed.calls.is_empty());
        assert_eq!(parsed.warnings[0].offset, 2);
    }
}
