//! VCP's text format: `<<<[TOOL_REQUEST]>>>` blocks of
//! `key:「始」value「末」` fields, as `VCP-PROTOCOL.md` §1 describes it, and
//! its result payload (§3).

use super::marker_index::{MARKUP, MarkerIndex};
use super::scan::{Collector, Forward, Reasoning};
use super::{Declared, Parsed, ParsedCall, Protocol, ProtocolId, describe_params, describe_tool, example_arguments};
use crate::manifest::ToolSpec;
use crate::message::Message;
use crate::outcome::{Status, ToolOutcome};
use serde_json::{Map, Value};

/// Keys the VCP server interprets itself; a call keeps them apart from
/// its arguments, in `reserved`.
pub const RESERVED_KEYS: &[&str] = &["archery", "ink", "river", "vref", "valet", "maid", "tool_password", "timely_contact"];
/// The reserved keys the server consumes: a tool never sees them. It
/// passes the others (`maid`, …) to the tool as well (VCP-PROTOCOL.md §5),
/// so a VCP-native tool that reads them finds them in its arguments here
/// too.
pub const CONSUMED_KEYS: &[&str] = &["archery", "ink", "river", "vref"];

const OPEN: &str = "[TOOL_REQUEST]";
const CLOSE: &str = "[END_TOOL_REQUEST]";
const VALUE_OPEN: &str = "「始」";
const VALUE_CLOSE: &str = "「末」";
const LENIENT_VALUE_OPEN: &str = "{始}";
const LENIENT_VALUE_CLOSE: &str = "{末}";
const ESCAPE_OPEN: &str = "「始ESCAPE」";
const ESCAPE_CLOSE: &str = "「末ESCAPE」";
const DOC_VALUE_OPEN: &str = "「始exp」";
/// Every marker the parser reads. (`[TOOL_REQUEST]` stands for all its
/// bracketings.)
pub(crate) const MARKERS: [&str; 9] =
    [OPEN, CLOSE, VALUE_OPEN, VALUE_CLOSE, LENIENT_VALUE_OPEN, LENIENT_VALUE_CLOSE, ESCAPE_OPEN, ESCAPE_CLOSE, DOC_VALUE_OPEN];
/// The key that names the tool, beside the arguments.
pub(crate) const TOOL_NAME_KEY: &str = "tool_name";

/// The VCP protocol. With `lenient_markers`, `<<[TOOL_REQUEST]>>` to
/// `<<<<[TOOL_REQUEST]>>>>` and `{始}`/`{末}` are accepted too, as the VCP
/// server does when its switch is on.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Vcp {
    /// Accept 2 to 4 angle brackets and `{始}`/`{末}`.
    pub lenient_markers: bool,
}

/// The VCP protocol as toolhost uses it: lenient markers on.
pub static VCP: Vcp = Vcp { lenient_markers: true };

impl Default for Vcp {
    /// As toolhost uses it ([`VCP`]): lenient markers on.
    fn default() -> Self {
        VCP
    }
}

impl Protocol for Vcp {
    fn id(&self) -> ProtocolId {
        ProtocolId::Vcp
    }

    fn render(&self, tools: &[&ToolSpec]) -> String {
        // The JSON example is the prompt's first bracket, so a parser that
        // reads a text's first JSON value (native) reads it, never JSON a
        // declaration holds.
        let mut out = String::from(
            "To call a tool, write a block like the one shown for it, anywhere in your reply. \
             Every value goes between 「始」 and 「末」; a json parameter's value is JSON, e.g. [\"a\", \"b\"]. \
             You may write several blocks; each is one call. Results come back in the next message.\n\n",
        );
        let definitions: Vec<String> = tools.iter().map(|tool| render_tool(tool)).collect();
        out.push_str(&definitions.join("\n\n---\n\n"));
        out
    }

    fn parse(&self, reply: &str, _declared: &Declared) -> Parsed {
        let mut collector = Collector::new(reply);
        let markers = MarkerIndex::new(reply, &[MARKUP]);
        self.scan(&markers, &Reasoning::find(&markers), &mut collector);
        collector.finish()
    }

    /// One user message: the `<!-- VCP_TOOL_PAYLOAD -->` marker and a
    /// JSON array of text parts, one per call.
    fn format_results(&self, outcomes: &[ToolOutcome]) -> Vec<Message> {
        let items: Vec<Value> = outcomes
            .iter()
            .map(|o| {
                serde_json::json!({
                    "type": "text",
                    "text": format!("Result of {} ({}):\n{}", o.tool, o.status, o.output),
                })
            })
            .collect();
        vec![Message::user(format!("<!-- VCP_TOOL_PAYLOAD -->\n{}", Value::Array(items)))]
    }
}

/// One tool's definition with a ready-to-copy example block.
#[doc(hidden)]
pub fn render_tool(tool: &ToolSpec) -> String {
    let mut out = format!("Tool: {}\nPlugin: {}\nPermission: {}\n", tool.name, tool.plugin, tool.permission.as_str());
    out.push_str(&describe_tool(tool));
    out.push_str(&describe_params(tool));
    out.push_str("Example:\n");
    out.push_str(&request_block(&tool.name, &example_arguments(tool)));
    out
}

/// A `<<<[TOOL_REQUEST]>>>` block calling `tool` with `args`. A value
/// holding a marker the parser reads is written in the escape form, as the
/// VCP server reads it, so the block parses back to the same values. VCP
/// trims values and has no way to write `「末ESCAPE」` or an escaped marker
/// inside one, so such values do not come back exactly.
#[doc(hidden)]
pub fn request_block(tool: &str, args: &Map<String, Value>) -> String {
    let mut fields = vec![field(TOOL_NAME_KEY, tool)];
    for (key, value) in args {
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        fields.push(field(key, &text));
    }
    format!("<<<[TOOL_REQUEST]>>>\n{}\n<<<[END_TOOL_REQUEST]>>>", fields.join(",\n"))
}

/// `key:「始」value「末」`, or `key:「始ESCAPE」value「末ESCAPE」` when the
/// plain form would end early or read as something else.
fn field(key: &str, value: &str) -> String {
    if MARKERS.iter().any(|marker| value.contains(marker)) {
        let escaped = ESCAPED.iter().fold(value.to_owned(), |text, (escaped, real)| text.replace(real, escaped));
        format!("{key}:{ESCAPE_OPEN}{escaped}{ESCAPE_CLOSE}")
    } else {
        format!("{key}:{VALUE_OPEN}{value}{VALUE_CLOSE}")
    }
}

/// The human summary of a round's results, as the VCP server shows it to a
/// person (not to the model): `[[VCP调用结果信息汇总: …]]`.
pub fn summary(outcomes: &[ToolOutcome]) -> String {
    let mut out = String::from("[[VCP调用结果信息汇总:\n");
    for o in outcomes {
        let state = if o.status == Status::Success {
            "✅ SUCCESS".to_owned()
        } else {
            format!("❌ {}", o.status.as_str().to_uppercase())
        };
        out.push_str(&format!("- 工具名称: {}\n- 执行状态: {state}\n- 返回内容: {}\n", o.tool, o.output));
    }
    out.push_str("VCP调用结果结束]]");
    out
}

/// A marker found in the reply.
struct Marker {
    start: usize,
    end: usize,
}

/// Searches for one kind of block marker, forward only.
struct MarkerFinder<'a> {
    reply: &'a str,
    core: &'static str,
    search: Forward<'a>,
    lenient: bool,
}

impl<'a> MarkerFinder<'a> {
    fn new(markers: &'a MarkerIndex<'a>, core: &'static str, lenient: bool) -> Self {
        MarkerFinder { reply: markers.text(), core, search: Forward::indexed(markers, core), lenient }
    }

    /// The first well-bracketed marker whose core starts at or after `from`.
    fn next(&mut self, from: usize) -> Option<Marker> {
        let mut at = from;
        while let Some(core) = self.search.next(at) {
            let bytes = self.reply.as_bytes();
            let before = bytes[..core].iter().rev().take(5).take_while(|&&b| b == b'<').count();
            let after_core = core + self.core.len();
            let after = bytes[after_core..].iter().take(5).take_while(|&&b| b == b'>').count();
            let fits = |n: usize| if self.lenient { (2..=4).contains(&n) } else { n == 3 };
            if fits(before) && fits(after) {
                return Some(Marker { start: core - before, end: after_core + after });
            }
            at = core + 1;
        }
        None
    }
}

impl Vcp {
    pub(crate) fn scan(&self, markers: &MarkerIndex<'_>, reasoning: &Reasoning, out: &mut Collector<'_>) {
        let reply = markers.text();
        let mut opens = MarkerFinder::new(markers, OPEN, self.lenient_markers);
        let mut closes = MarkerFinder::new(markers, CLOSE, self.lenient_markers);
        let mut value_closes = Forward::new(reply, VALUE_CLOSE);
        let mut lenient_closes = Forward::new(reply, LENIENT_VALUE_CLOSE);
        let mut escape_closes = Forward::new(reply, ESCAPE_CLOSE);
        let mut at = 0;
        while let Some(open) = opens.next(at) {
            if let Some(end) = reasoning.skip(open.start) {
                at = end;
                continue;
            }
            let Some(mut close) = closes.next(open.end) else {
                out.warn(open.start, "a tool request has no end marker; it is not a call");
                at = open.end;
                continue;
            };
            let mut fields: Vec<(String, String)> = Vec::new();
            let mut documentation = false;
            let mut p = open.end;
            loop {
                p = skip(reply, p, |c| c.is_whitespace() || c == ',');
                if p >= close.start {
                    break;
                }
                // `-` too: every declared parameter name can be a key.
                let key_end = skip(reply, p, |c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if key_end == p {
                    out.warn(p, "expected a field name; the block's fields end here");
                    break;
                }
                let key = &reply[p..key_end];
                let colon = skip(reply, key_end, char::is_whitespace);
                // Models writing Chinese often put the full-width colon.
                let Some(separator) = [':', '：'].into_iter().find(|c| reply[colon..].starts_with(*c)) else {
                    out.warn(colon, format!("expected `:` after `{key}`; the block's fields end here"));
                    break;
                };
                let v = skip(reply, colon + separator.len_utf8(), char::is_whitespace);
                let rest = &reply[v..];
                let value = if rest.starts_with(DOC_VALUE_OPEN) {
                    documentation = true;
                    break;
                } else if rest.starts_with(ESCAPE_OPEN) {
                    let body = v + ESCAPE_OPEN.len();
                    let Some(end) = escape_closes.next(body) else {
                        // Every end marker after it is inside the value.
                        out.warn(
                            v,
                            format!("the value of `{key}` has no closing 「末ESCAPE」, so no block ends; it is not a call"),
                        );
                        fields.clear();
                        close = Marker { start: reply.len(), end: reply.len() };
                        p = reply.len();
                        break;
                    };
                    if end > close.start {
                        // End markers inside an escaped value do not end the block.
                        match closes.next(end + ESCAPE_CLOSE.len()) {
                            Some(later) => close = later,
                            None => {
                                out.warn(open.start, "a tool request has no end marker; it is not a call");
                                fields.clear();
                                close = Marker { start: reply.len(), end: reply.len() };
                                p = reply.len();
                                break;
                            }
                        }
                    }
                    p = end + ESCAPE_CLOSE.len();
                    unescape(&reply[body..end])
                } else if let Some(value_open) = [VALUE_OPEN, LENIENT_VALUE_OPEN]
                    .into_iter()
                    .find(|m| rest.starts_with(m) && (self.lenient_markers || *m == VALUE_OPEN))
                {
                    let body = v + value_open.len();
                    let mut end = value_closes.next(body);
                    if self.lenient_markers {
                        end = match (end, lenient_closes.next(body)) {
                            (Some(a), Some(b)) => Some(a.min(b)),
                            (a, b) => a.or(b),
                        };
                    }
                    match end.filter(|&e| e < close.start) {
                        Some(end) => {
                            let close_len =
                                if reply[end..].starts_with(VALUE_CLOSE) { VALUE_CLOSE.len() } else { LENIENT_VALUE_CLOSE.len() };
                            p = end + close_len;
                            reply[body..end].trim().to_owned()
                        }
                        None => {
                            out.warn(v, format!("the value of `{key}` has no closing 「末」; the block's fields end here"));
                            break;
                        }
                    }
                } else {
                    out.warn(v, format!("the value of `{key}` does not start with 「始」; the block's fields end here"));
                    break;
                };
                fields.push((key.to_owned(), value));
            }
            at = close.end.max(open.end);
            if documentation || p >= reply.len() && fields.is_empty() {
                continue;
            }
            self.emit(open.start..close.end, fields, out);
        }
    }

    fn emit(&self, span: std::ops::Range<usize>, fields: Vec<(String, String)>, out: &mut Collector<'_>) {
        let mut name = None;
        let mut arguments = Map::new();
        let mut reserved = Map::new();
        for (key, value) in fields {
            if key == TOOL_NAME_KEY {
                name = Some(value);
            } else if RESERVED_KEYS.contains(&key.as_str()) {
                if !CONSUMED_KEYS.contains(&key.as_str()) {
                    arguments.insert(key.clone(), Value::String(value.clone()));
                }
                reserved.insert(key, Value::String(value));
            } else {
                // Last duplicate wins, as the VCP server does.
                arguments.insert(key, Value::String(value));
            }
        }
        match name {
            Some(name) if !name.is_empty() => out.call(ParsedCall { id: None, name, arguments, reserved, span }),
            _ => out.warn(span.start, "a tool request has no tool_name; it is dropped"),
        }
    }
}

/// The first position at or after `from` whose char does not satisfy `keep`.
fn skip(text: &str, from: usize, keep: impl Fn(char) -> bool) -> usize {
    text[from..].char_indices().find(|&(_, c)| !keep(c)).map_or(text.len(), |(i, _)| from + i)
}

/// Inside an escaped value, each escaped marker stands for the real one:
/// (escaped, real).
const ESCAPED: [(&str, &str); 3] = [
    ("<<<[TOOL_REQUEST_ESCAPE]>>>", "<<<[TOOL_REQUEST]>>>"),
    ("<<<[END_TOOL_REQUEST_ESCAPE]>>>", "<<<[END_TOOL_REQUEST]>>>"),
    (ESCAPE_OPEN, VALUE_OPEN),
];

/// An escaped value's text, with the real markers back.
fn unescape(raw: &str) -> String {
    ESCAPED.iter().fold(raw.trim().to_owned(), |text, (escaped, real)| text.replace(escaped, real))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(reply: &str) -> Parsed {
        VCP.parse(reply, &Declared::default())
    }

    fn args(call: &ParsedCall) -> Value {
        Value::Object(call.arguments.clone())
    }

    #[test]
    fn every_block_is_a_call_in_order() {
        let reply = "Let me compute.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」SciCalculator「末」,\nexpression:「始」1+1「末」\n<<<[END_TOOL_REQUEST]>>>\nand\n<<<[TOOL_REQUEST]>>>tool_name:「始」Echo「末」,text:「始」 hi 「末」<<<[END_TOOL_REQUEST]>>> done";
        let parsed = parse(reply);
        assert_eq!(parsed.calls.len(), 2);
        assert_eq!(parsed.calls[0].name, "SciCalculator");
        assert_eq!(args(&parsed.calls[0]), json!({"expression": "1+1"}));
        assert_eq!(args(&parsed.calls[1]), json!({"text": "hi"}), "values are trimmed");
        assert_eq!(parsed.content, "Let me compute.\n\nand\n done");
        assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    }

    #[test]
    fn a_full_width_colon_separates_a_field_as_a_colon_does() {
        let parsed = parse(
            "<<<[TOOL_REQUEST]>>>\ntool_name：「始」calculate「末」,\nexpression ：「始」6 * 7「末」\n<<<[END_TOOL_REQUEST]>>>",
        );
        assert_eq!(parsed.calls.len(), 1, "{:?}", parsed.warnings);
        assert_eq!(parsed.calls[0].name, "calculate");
        assert_eq!(args(&parsed.calls[0]), json!({"expression": "6 * 7"}));
        assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    }

    #[test]
    fn last_duplicate_wins_empty_is_empty_and_reserved_keys_stay_apart() {
        let parsed = parse(
            "<<<[TOOL_REQUEST]>>>tool_name:「始」t「末」,a:「始」1「末」,a:「始」2「末」,b:「始」「末」,maid:「始」Nova「末」,archery:「始」no_reply「末」<<<[END_TOOL_REQUEST]>>>",
        );
        let call = &parsed.calls[0];
        assert_eq!(args(call), json!({"a": "2", "b": "", "maid": "Nova"}), "the server passes `maid` to the tool");
        assert_eq!(Value::Object(call.reserved.clone()), json!({"maid": "Nova", "archery": "no_reply"}));
    }

    #[test]
    fn the_keys_the_server_consumes_never_reach_the_tool_and_the_others_do() {
        let fields: String = RESERVED_KEYS.iter().map(|key| format!("{key}:「始」{key} value「末」,")).collect();
        let parsed = parse(&format!("<<<[TOOL_REQUEST]>>>tool_name:「始」t「末」,{fields}<<<[END_TOOL_REQUEST]>>>"));
        let call = &parsed.calls[0];
        let passed: Vec<&str> = call.arguments.keys().map(String::as_str).collect();
        assert_eq!(passed, ["valet", "maid", "tool_password", "timely_contact"]);
        assert_eq!(call.reserved.len(), RESERVED_KEYS.len(), "every reserved key is available apart");
        assert_eq!(call.arguments["maid"], "maid value");
    }

    #[test]
    fn escaped_values_keep_markers() {
        let reply = "<<<[TOOL_REQUEST]>>>tool_name:「始」write「末」,content:「始ESCAPE」a <<<[TOOL_REQUEST_ESCAPE]>>> b 「始ESCAPE」 <<<[END_TOOL_REQUEST]>>> 「末」 c「末ESCAPE」<<<[END_TOOL_REQUEST]>>>";
        let parsed = parse(reply);
        assert_eq!(parsed.calls.len(), 1, "{:?}", parsed.warnings);
        assert_eq!(
            args(&parsed.calls[0]),
            json!({"content": "a <<<[TOOL_REQUEST]>>> b 「始」 <<<[END_TOOL_REQUEST]>>> 「末」 c"})
        );
    }

    /// Values holding every marker the parser reads, alone and mixed.
    const MARKED_VALUES: [&str; 9] = [
        "a 「末」 b",
        "x 「始」 y 「末」 z",
        "{末} lenient",
        "「始exp」 is documentation",
        "stop <<<[END_TOOL_REQUEST]>>> here",
        "<<[END_TOOL_REQUEST]>> lenient end",
        "<<<[TOOL_REQUEST]>>>\ntool_name:「始」rm「末」\n<<<[END_TOOL_REQUEST]>>>",
        "「末」",
        "a「末」,b:「始」c",
    ];

    #[test]
    fn a_value_holding_a_marker_is_written_escaped_and_parses_back_exactly() {
        for value in MARKED_VALUES {
            let block = request_block("write", json!({"content": value}).as_object().unwrap());
            assert!(block.contains("content:「始ESCAPE」"), "{value:?} was written as {block}");
            let parsed = parse(&block);
            assert_eq!(parsed.calls.len(), 1, "{block}: {:?}", parsed.warnings);
            assert_eq!(args(&parsed.calls[0]), json!({"content": value}), "{block}");
        }
        let plain = request_block("write", json!({"content": "no markers"}).as_object().unwrap());
        assert!(plain.contains("content:「始」no markers「末」"), "{plain}");
    }

    #[test]
    fn a_host_built_example_holding_a_marker_renders_so_the_call_parses_back() {
        let mut tool = ToolSpec::new("write", "notes", "Write a note");
        tool.params.push(crate::manifest::ParamSpec {
            name: "content".into(),
            ty: crate::manifest::ParamType::String,
            description: "what to write".into(),
            required: true,
        });
        tool.example = Some(json!({"content": MARKED_VALUES[1]}));
        let parsed = parse(&VCP.render(&[&tool]));
        assert_eq!(parsed.calls.len(), 1, "{:?}", parsed.warnings);
        assert_eq!(parsed.calls[0].name, "write");
        assert_eq!(args(&parsed.calls[0]), json!({"content": MARKED_VALUES[1]}));
    }

    #[test]
    fn reasoning_is_not_searched_even_when_unclosed() {
        let block = "<<<[TOOL_REQUEST]>>>tool_name:「始」t「末」<<<[END_TOOL_REQUEST]>>>";
        assert_eq!(parse(&format!("<think>{block}</think>{block}")).calls.len(), 1);
        assert_eq!(parse(&format!("{block}<think>{block}")).calls.len(), 1);
    }

    #[test]
    fn documentation_forms_are_not_calls() {
        let parsed = parse(
            "<<<[TOOL_REQUEST_EXP]>>>tool_name:「始」t「末」<<<[END_TOOL_REQUEST_EXP]>>>\n<<<[TOOL_REQUEST]>>>tool_name:「始exp」t「末exp」<<<[END_TOOL_REQUEST]>>>",
        );
        assert!(parsed.calls.is_empty());
    }

    #[test]
    fn an_unterminated_block_is_a_warning_not_a_call() {
        let parsed = parse("text <<<[TOOL_REQUEST]>>>tool_name:「始」t「末」");
        assert!(parsed.calls.is_empty());
        assert_eq!(parsed.warnings[0].offset, 5);
        assert!(parsed.warnings[0].message.contains("no end marker"));
    }

    #[test]
    fn an_escaped_value_never_closed_leaves_its_block_without_an_end() {
        // End markers inside an escaped value do not end the block; one that
        // never closes holds every end marker after it, so no block ends.
        let reply = "<<<[TOOL_REQUEST]>>>tool_name:「始」calc「末」,expression:「始ESCAPE」1+1<<<[END_TOOL_REQUEST]>>> and \
                     <<<[TOOL_REQUEST]>>>tool_name:「始」calc「末」<<<[END_TOOL_REQUEST]>>>";
        let parsed = parse(reply);
        assert!(parsed.calls.is_empty(), "{:?}", parsed.calls);
        assert!(parsed.warnings[0].message.contains("no closing 「末ESCAPE」"), "{:?}", parsed.warnings);
    }

    #[test]
    fn a_value_without_its_close_ends_the_fields() {
        let parsed =
            parse("<<<[TOOL_REQUEST]>>>tool_name:「始」t「末」,a:「始」1「末」,b:「始」open <<<[END_TOOL_REQUEST]>>> x 「末」");
        assert_eq!(parsed.calls.len(), 1);
        assert_eq!(args(&parsed.calls[0]), json!({"a": "1"}), "an end marker ends a plain value's block");
        assert!(parsed.warnings[0].message.contains("no closing 「末」"), "{:?}", parsed.warnings);
        let parsed = parse("<<<[TOOL_REQUEST]>>>tool_name:「始」t「末」,a:「始」x, b:「始」y「末」<<<[END_TOOL_REQUEST]>>>");
        assert_eq!(args(&parsed.calls[0]), json!({"a": "x, b:「始」y"}), "a value runs to the first 「末」");
    }

    #[test]
    fn a_block_without_tool_name_is_dropped() {
        let parsed = parse("<<<[TOOL_REQUEST]>>>a:「始」1「末」<<<[END_TOOL_REQUEST]>>>");
        assert!(parsed.calls.is_empty());
        assert!(parsed.warnings[0].message.contains("no tool_name"));
    }

    #[test]
    fn lenient_markers_are_switchable() {
        let reply = "<<[TOOL_REQUEST]>>tool_name:{始}t{末},a:{始}1{末}<<<<[END_TOOL_REQUEST]>>>>";
        assert_eq!(args(&parse(reply).calls[0]), json!({"a": "1"}));
        let strict = Vcp { lenient_markers: false }.parse(reply, &Declared::default());
        assert!(strict.calls.is_empty());
    }

    #[test]
    fn results_use_the_payload_form_and_the_summary_form() {
        let outcome = ToolOutcome::without_running("1", "EchoTest", Status::Success, "echo: hello".into());
        let payload = VCP.format_results(std::slice::from_ref(&outcome));
        assert_eq!(payload.len(), 1);
        assert_eq!(payload[0].role, crate::message::Role::User);
        assert_eq!(
            payload[0].content,
            "<!-- VCP_TOOL_PAYLOAD -->\n[{\"type\":\"text\",\"text\":\"Result of EchoTest (success):\\necho: hello\"}]"
        );
        assert_eq!(
            summary(&[outcome]),
            "[[VCP调用结果信息汇总:\n- 工具名称: EchoTest\n- 执行状态: ✅ SUCCESS\n- 返回内容: echo: hello\nVCP调用结果结束]]"
        );
    }
}
