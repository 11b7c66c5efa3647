//! DeepSeek V3, R1 and V3.1, whose tokens use full-width bars and `▁`:
//!
//! - V3 / R1: `<｜tool▁calls▁begin｜>`, then for each call
//!   `<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME` and the arguments in a
//!   ```` ```json ```` fence, then `<｜tool▁call▁end｜>`; then
//!   `<｜tool▁calls▁end｜>`;
//! - V3.1: `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>` in the
//!   same section.
//!
//! Real outputs also write the section's opening as `<｜tool▁calls｜>`, with
//! ASCII `_` or spaces for `▁` (the variants llama.cpp accepts), every
//! token with ASCII `|` for `｜` ([`ASCII`]), and R1 sometimes leaves out
//! `<｜tool▁call▁begin｜>` inside a section.

use super::super::ParsedCall;
use super::super::json_call;
use super::super::lenient_json;
use super::super::scan::{Collector, FENCE};
use super::section::{self, CallTokenSearch, CallTokens};
use super::{Scope, markup_name};
use super::{dsml, step3};
use serde_json::{Map, Value};

/// Opens the calls.
pub(crate) use crate::section_tokens::DEEPSEEK_SECTION_BEGIN as SECTION_BEGIN;
/// The other ways outputs open them: without `▁begin`, with `_`, with
/// spaces, with escaped `_`.
const SECTION_BEGIN_VARIANTS: [&str; 4] =
    ["<｜tool▁calls｜>", "<｜tool_calls_begin｜>", "<｜tool calls begin｜>", "<｜tool\\_calls\\_begin｜>"];
/// Closes the calls.
pub(crate) const SECTION_END: &str = "<｜tool▁calls▁end｜>";
/// Opens one call.
pub(crate) const CALL_BEGIN: &str = "<｜tool▁call▁begin｜>";
/// Between a call's name (V3.1) or type (V3, R1) and the rest.
pub(crate) const SEP: &str = "<｜tool▁sep｜>";
/// Closes one call.
pub(crate) const CALL_END: &str = "<｜tool▁call▁end｜>";
/// Opens every DeepSeek token, as `<|` opens other templates' tokens.
pub(crate) const TOKEN_OPEN: &str = "<｜";
/// Every marker this module reads but [`TOKEN_OPEN`], which opens them all.
pub(crate) const MARKERS: [&str; 14] = [
    ASCII.section_begin,
    ASCII.section_end,
    ASCII.call_begin,
    ASCII.sep,
    ASCII.call_end,
    SECTION_BEGIN,
    SECTION_BEGIN_VARIANTS[0],
    SECTION_BEGIN_VARIANTS[1],
    SECTION_BEGIN_VARIANTS[2],
    SECTION_BEGIN_VARIANTS[3],
    SECTION_END,
    CALL_BEGIN,
    SEP,
    CALL_END,
];
/// The call type V3 and R1 write before the separator.
const FUNCTION_TYPE: &str = "function";
/// The fence's language before V3's arguments.
const JSON_LANGUAGE: &str = "json";

/// DeepSeek's tokens as one output writes them.
pub(crate) struct Tokens {
    section_begin: &'static str,
    section_end: &'static str,
    call_begin: &'static str,
    sep: &'static str,
    call_end: &'static str,
}

/// The tokens as the tokenizer writes them.
const FULL_WIDTH: Tokens =
    Tokens { section_begin: SECTION_BEGIN, section_end: SECTION_END, call_begin: CALL_BEGIN, sep: SEP, call_end: CALL_END };
/// The same with ASCII bars, as some outputs write them (the bars' look-alike
/// is easy to lose when text passes through a client).
pub(crate) const ASCII: Tokens = Tokens {
    section_begin: crate::section_tokens::DEEPSEEK_ASCII_SECTION_BEGIN,
    section_end: "<|tool▁calls▁end|>",
    call_begin: "<|tool▁call▁begin|>",
    sep: "<|tool▁sep|>",
    call_end: "<|tool▁call▁end|>",
};
/// What every ASCII-barred token starts with.
const ASCII_OPEN: &str = "<|tool▁";

/// Every DeepSeek section or lone call outside reasoning, V3.2's and V4's
/// DSML sections ([`dsml`]) and Step3's ([`step3`]) among them; then those
/// written with ASCII bars.
pub(super) fn scan(scope: &Scope<'_>, out: &mut Collector<'_>) {
    scan_tokens(scope, TOKEN_OPEN, &FULL_WIDTH, out);
    scan_tokens(scope, ASCII_OPEN, &ASCII, out);
}

/// Every section or lone call of `tokens`, found at `anchor`.
fn scan_tokens(scope: &Scope<'_>, anchor: &str, tokens: &'static Tokens, out: &mut Collector<'_>) {
    let reply = scope.reply;
    let full_width = std::ptr::eq(tokens, &FULL_WIDTH);
    let mut reader = Reader { tokens: CallTokenSearch::new(reply, tokens.sep, tokens.call_end), names: tokens };
    let mut dsml = dsml::Reader::new(reply);
    let mut step3 = step3::Reader::new(reply);
    let variants = if full_width { &SECTION_BEGIN_VARIANTS[..] } else { &[] };
    let mut at = 0;
    while let Some(found) = scope.markers.find(at, anchor) {
        if let Some(end) = scope.reasoning.skip(found) {
            at = end;
            continue;
        }
        let rest = &reply[found..];
        at = if rest.starts_with(tokens.call_begin) {
            let (call, end) = reader.call(scope, found, out);
            out.calls(found..end, call.into_iter().collect());
            end
        } else if let Some(end) = full_width.then(|| step3.read(scope, found, out)).flatten() {
            end
        } else if let Some(begin) =
            std::iter::once(tokens.section_begin).chain(variants.iter().copied()).find(|b| rest.starts_with(b))
        {
            section::read(scope, found, found + begin.len(), &mut reader, out)
        } else if let Some(end) = full_width.then(|| dsml.read(scope, found, out)).flatten() {
            end
        } else {
            found + anchor.len()
        };
    }
}

/// Reads the calls of a reply.
struct Reader<'a> {
    tokens: CallTokenSearch<'a>,
    /// The tokens it reads.
    names: &'static Tokens,
}

impl CallTokens for Reader<'_> {
    fn section_end(&self, rest: &str) -> Option<usize> {
        rest.starts_with(self.names.section_end).then_some(self.names.section_end.len())
    }

    fn opens_call(&self, rest: &str) -> bool {
        let names = self.names;
        rest.starts_with(names.call_begin) || rest.strip_prefix(FUNCTION_TYPE).is_some_and(|r| r.starts_with(names.sep))
    }

    /// The call at `at` (its `<｜tool▁call▁begin｜>`, or R1's `function`
    /// without it), if it is one, and where reading it stopped.
    fn call(&mut self, scope: &Scope<'_>, at: usize, out: &mut Collector<'_>) -> (Option<ParsedCall>, usize) {
        let reply = scope.reply;
        let names = self.names;
        let head = if reply[at..].starts_with(names.call_begin) { at + names.call_begin.len() } else { at };
        let (sep, end) = match self.tokens.find(at, head, out) {
            Ok(found) => found,
            Err(stopped) => return (None, stopped),
        };
        let after = end + names.call_end.len();
        let before_sep = reply[head..sep].trim();
        let rest = &reply[sep + names.sep.len()..end];
        // V3 and R1: `function`, then the name on its own line, then the
        // fenced arguments; V3.1: the name, then the arguments.
        let (name, arguments) = match rest.split_once('\n') {
            Some((name, arguments)) if before_sep == FUNCTION_TYPE && !rest.trim_start().starts_with('{') => (name, arguments),
            _ => (before_sep, rest),
        };
        let Some(name) = markup_name(name) else {
            out.warn(head, format!("`{}` is not a tool's name; it is not a call", name.trim()));
            return (None, after);
        };
        if !scope.markup_calls(at, name) {
            return (None, after);
        }
        let Some(arguments) = fenced_object(arguments, sep, out) else {
            out.warn(sep, format!("the arguments of `{name}` are not a JSON object; it is not a call"));
            return (None, after);
        };
        (Some(ParsedCall { id: None, name: name.to_owned(), arguments, reserved: Map::new(), span: at..after }), after)
    }
}

/// A JSON object (or a JSON string holding one, warned of at `at`), in a
/// ```` ```json ```` fence or not; nothing is no arguments.
fn fenced_object(text: &str, at: usize, out: &mut Collector<'_>) -> Option<Map<String, Value>> {
    let mut text = text.trim();
    if let Some(fenced) = text.strip_prefix(FENCE) {
        let fenced = fenced.strip_prefix(JSON_LANGUAGE).unwrap_or(fenced);
        text = fenced.strip_suffix(FENCE).unwrap_or(fenced).trim();
    }
    if text.is_empty() {
        return Some(Map::new());
    }
    json_call::arguments_of(lenient_json::parse(text).ok()?.0, at, out)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, checked, no_calls, one, parse, prose, warnings};
    use serde_json::{Value, json};

    /// Two calls as V3 and R1 write them.
    const R1: &str = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Tokyo\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>now\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    /// Two calls as V3.1 writes them.
    const V31: &str = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Tokyo\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>now<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";

    fn both() -> Vec<(String, Value)> {
        vec![("get_weather".into(), json!({"city": "Tokyo"})), ("now".into(), json!({}))]
    }

    #[test]
    fn deepseek_v3_and_r1_calls_in_json_fences() {
        assert_eq!(calls(R1), both());
        let reply = format!("<think>\nThe user asks for Tokyo.\n</think>\n\nI'll check.{R1} And more.");
        let parsed = parse(&reply);
        assert_eq!(parsed.calls.len(), 2);
        assert_eq!(parsed.content, "<think>\nThe user asks for Tokyo.\n</think>\n\nI'll check. And more.");
        assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    }

    #[test]
    fn deepseek_v3_1_calls_after_prose_and_reasoning() {
        assert_eq!(calls(V31), both());
        let forced_open = format!("The weather first.</think>normal text{V31} some suffix text");
        assert_eq!(calls(&forced_open), both());
        assert_eq!(parse(&forced_open).content, "The weather first.</think>normal text some suffix text");
        let one_call =
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>calculate<｜tool▁sep｜>{\"x\":1}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
        assert_eq!(calls(one_call), one("calculate", json!({"x": 1})));
    }

    #[test]
    fn deepseek_variants_that_real_outputs_show() {
        for begin in ["<｜tool▁calls｜>", "<｜tool_calls_begin｜>", "<｜tool calls begin｜>", "<｜tool\\_calls\\_begin｜>"]
        {
            let reply = R1.replacen("<｜tool▁calls▁begin｜>", begin, 1);
            assert_eq!(calls(&reply), both(), "{begin}");
        }
        let no_call_begin = "<｜tool▁calls▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Tokyo\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
        assert_eq!(calls(no_call_begin), one("get_weather", json!({"city": "Tokyo"})), "R1 without the call's begin token");
        let no_section = "<｜tool▁call▁begin｜>now<｜tool▁sep｜>{\"zone\": \"UTC\"}<｜tool▁call▁end｜>";
        assert_eq!(calls(no_section), one("now", json!({"zone": "UTC"})));
        let no_section_end = &R1[..R1.len() - "<｜tool▁calls▁end｜>".len()];
        assert_eq!(calls(no_section_end), both(), "the section's end may be the stop token");
        let named_function = "<｜tool▁call▁begin｜>function<｜tool▁sep｜>{\"a\": 1}<｜tool▁call▁end｜>";
        assert_eq!(calls(named_function), one("function", json!({"a": 1})), "V3.1 calling a tool named `function`");
    }

    #[test]
    fn deepseek_arguments_are_typed_by_the_declaration() {
        let reply = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>forecast\n```json\n{\"city\": \"Rome\", \"days\": \"5\", \"metric\": \"false\", \"options\": {\"a\": null}}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
        assert_eq!(Value::Object(checked(reply)), json!({"city": "Rome", "days": 5, "metric": false, "options": {"a": null}}));
    }

    #[test]
    fn a_cut_off_deepseek_call_is_a_warning_not_a_call() {
        let cut = &V31[..V31.len() - "}<｜tool▁call▁end｜><｜tool▁calls▁end｜>".len()];
        assert_eq!(calls(cut), one("get_weather", json!({"city": "Tokyo"})), "only the complete call");
        assert_eq!(warnings(cut), ["a call is cut off before its <｜tool▁call▁end｜>; it is not a call"]);
        let bad =
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>now<｜tool▁sep｜>{\"zone\": <｜tool▁call▁end｜><｜tool▁calls▁end｜>";
        assert_eq!(calls(bad), vec![]);
        assert_eq!(warnings(bad), ["the arguments of `now` are not a JSON object; it is not a call"]);
        assert_eq!(parse(bad).content, "");
    }

    #[test]
    fn deepseek_tokens_written_with_ascii_bars() {
        // The V3.1 and R1 shapes of vLLM tests/tool_parsers/test_deepseekv31_tool_parser.py
        // and test_deepseekv3_tool_parser.py, `｜` written as ASCII `|`.
        let ascii = |reply: &str| reply.replace('｜', "|");
        assert_eq!(calls(&ascii(V31)), both());
        assert_eq!(calls(&ascii(R1)), both());
        assert_eq!(parse(&ascii(V31)).content, "");
        let unclosed_think = format!("<think>The weather, then the time.{}", ascii(V31));
        assert_eq!(calls(&unclosed_think), both(), "the section ends an unclosed <think>");
        no_calls(&[&format!("e.g. `{}`", ascii(V31)), "It opens with <|tool▁calls▁begin|> first."]);
    }

    #[test]
    fn deepseek_tokens_in_prose_or_code_are_not_calls() {
        no_calls(&[
            "DeepSeek opens its calls with <｜tool▁calls▁begin｜> and ends each with <｜tool▁call▁end｜>.",
            "e.g. `<｜tool▁call▁begin｜>delete_all<｜tool▁sep｜>{}<｜tool▁call▁end｜>`",
            "`<｜tool▁call▁begin｜>now<｜tool▁sep｜>{}<｜tool▁call▁end｜>`",
            "<think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>now<｜tool▁sep｜>{}<｜tool▁call▁end｜></think>",
        ]);
        prose("It opens with <｜tool▁calls▁begin｜> first.");
    }
}
