//! StepFun's Step3: DeepSeek-like tokens spelt with `_`,
//! `<｜tool_calls_begin｜>`, then for each call
//! `<｜tool_call_begin｜>function<｜tool_sep｜>` and the call in `steptml:`
//! invoke markup ([`invoke`](super::invoke)), then `<｜tool_call_end｜>`;
//! then `<｜tool_calls_end｜>`. The model at times leaves out
//! `function<｜tool_sep｜>`, repeats the tool's name after it, or writes a
//! `<｜tool_sep｜>` between calls. A value's text is kept as written, the
//! white space around it too (it is data to an edit tool), and typed by the
//! check step. Reasoning is `<think>…</think>`.

use super::super::ParsedCall;
use super::super::scan::Collector;
use super::super::scan::Forward;
use super::invoke::{Invoke, STEPTML};
use super::section::{self, CallTokens};
use super::{Scope, markup_name};

/// Opens the calls (DeepSeek's parser reads it too, with other calls).
pub(crate) const SECTION_BEGIN: &str = "<｜tool_calls_begin｜>";
/// Closes them.
pub(crate) const SECTION_END: &str = "<｜tool_calls_end｜>";
/// Opens one call.
pub(crate) const CALL_BEGIN: &str = "<｜tool_call_begin｜>";
/// Between the call's type and its invoke markup.
pub(crate) const SEP: &str = "<｜tool_sep｜>";
/// Closes one call.
pub(crate) const CALL_END: &str = "<｜tool_call_end｜>";
/// Every marker this module reads.
pub(crate) const MARKERS: [&str; 9] = {
    let [invoke_open, invoke_close, parameter_open, parameter_close] = STEPTML.markers();
    [SECTION_BEGIN, SECTION_END, CALL_BEGIN, SEP, CALL_END, invoke_open, invoke_close, parameter_open, parameter_close]
};
/// The only call type Step3 writes.
const FUNCTION_TYPE: &str = "function";

/// Reads Step3 sections where DeepSeek's token scan finds them.
pub(super) struct Reader<'a> {
    call_ends: Forward<'a>,
    invokes: Forward<'a>,
    invoke: Invoke<'a>,
}

impl<'a> Reader<'a> {
    pub(super) fn new(reply: &'a str) -> Self {
        Reader {
            call_ends: Forward::new(reply, CALL_END),
            invokes: Forward::new(reply, STEPTML.invoke_open),
            invoke: Invoke::new(reply, &STEPTML),
        }
    }

    /// The section at `found`, if a Step3 section opens there (its first
    /// call begins with Step3's token): where reading it stopped.
    pub(super) fn read(&mut self, scope: &Scope<'_>, found: usize, out: &mut Collector<'_>) -> Option<usize> {
        let after = found + SECTION_BEGIN.len();
        let rest = scope.reply[found..].strip_prefix(SECTION_BEGIN)?;
        rest.trim_start().starts_with(CALL_BEGIN).then_some(())?;
        Some(section::read(scope, found, after, self, out))
    }
}

/// `rest` past a `<｜tool_sep｜>` written between two calls (as vLLM's
/// tests/tool_parsers/test_step3_tool_parser.py writes its parallel calls),
/// and the white space after it.
fn past_stray_sep(rest: &str) -> &str {
    rest.strip_prefix(SEP).map_or(rest, str::trim_start)
}

/// Whether the text between a call's token and its invoke tag is what
/// Step3 writes there: `function<｜tool_sep｜>`, at times the tool's name
/// after it, or nothing (both in vLLM's Step3 tests).
fn is_call_header(text: &str) -> bool {
    let text = text.trim();
    let Some(rest) = text.strip_prefix(FUNCTION_TYPE).and_then(|rest| rest.trim_start().strip_prefix(SEP)) else {
        return text.is_empty();
    };
    let rest = rest.trim();
    rest.is_empty() || markup_name(rest).is_some()
}

impl CallTokens for Reader<'_> {
    fn section_end(&self, rest: &str) -> Option<usize> {
        rest.starts_with(SECTION_END).then_some(SECTION_END.len())
    }

    fn opens_call(&self, rest: &str) -> bool {
        past_stray_sep(rest).starts_with(CALL_BEGIN)
    }

    /// The call whose `<｜tool_call_begin｜>` is at `at` (or after a stray
    /// separator there), if it is one, and where reading it stopped.
    fn call(&mut self, scope: &Scope<'_>, at: usize, out: &mut Collector<'_>) -> (Option<ParsedCall>, usize) {
        let reply = scope.reply;
        let head = reply.len() - past_stray_sep(&reply[at..]).len() + CALL_BEGIN.len();
        let Some(end) = self.call_ends.next(head) else {
            out.warn(at, format!("a call is cut off before its {CALL_END}; it is not a call"));
            return (None, reply.len());
        };
        let after = end + CALL_END.len();
        let invoke_at = self.invokes.next(head).filter(|&i| i < end && is_call_header(&reply[head..i]));
        let Some(invoke_at) = invoke_at else {
            out.warn(head, format!("a call is not `{FUNCTION_TYPE}{SEP}` and an invoke tag; it is not a call"));
            return (None, after);
        };
        let (call, stopped) = self.invoke.call(scope, invoke_at, out);
        if stopped > end || !reply[stopped..end].trim_start().is_empty() {
            if call.is_some() {
                out.warn(stopped, "text after the invoke tag of a call; it is not a call");
            }
            return (None, after.max(stopped));
        }
        (call.map(|call| ParsedCall { span: at..after, ..call }), after)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, checked, no_calls, one, parse, warnings};
    use serde_json::{Value, json};

    /// Two calls as Step3's template writes them.
    const TWO_CALLS: &str = "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\"get_weather\"><steptml:parameter name=\"city\">Paris</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\"now\"></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>";

    fn both() -> Vec<(String, Value)> {
        vec![("get_weather".into(), json!({"city": "Paris"})), ("now".into(), json!({}))]
    }

    #[test]
    fn step3_calls_alone_after_prose_and_after_reasoning() {
        assert_eq!(calls(TWO_CALLS), both());
        let parsed = parse(TWO_CALLS);
        assert_eq!((parsed.content.as_str(), parsed.warnings.len()), ("", 0), "{:?}", parsed.warnings);
        let reply = format!("<think>The weather, then the time.</think>\nChecking.\n{TWO_CALLS}");
        assert_eq!(calls(&reply), both());
        assert_eq!(parse(&reply).content, "<think>The weather, then the time.</think>\nChecking.");
        let spaced = TWO_CALLS.replace("><", ">\n<");
        assert_eq!(calls(&spaced), both(), "line breaks between the tokens");
    }

    #[test]
    fn step3_values_are_typed_by_the_declaration() {
        let reply = "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\"forecast\"><steptml:parameter name=\"city\">42</steptml:parameter><steptml:parameter name=\"days\"> 3 </steptml:parameter><steptml:parameter name=\"ratio\">0.5</steptml:parameter><steptml:parameter name=\"metric\">false</steptml:parameter><steptml:parameter name=\"options\">{\"a\": [1, null]}</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>";
        assert_eq!(
            Value::Object(checked(reply)),
            json!({"city": "42", "days": 3, "ratio": 0.5, "metric": false, "options": {"a": [1, null]}})
        );
    }

    #[test]
    fn step3_calls_as_vllms_tests_write_them() {
        // vLLM tests/tool_parsers/test_step3_tool_parser.py: a call without
        // `function<｜tool_sep｜>`, a separator between parallel calls, the
        // tool's name again after the separator.
        let bare = "<｜tool_calls_begin｜><｜tool_call_begin｜><steptml:invoke name=\"get_weather\"><steptml:parameter name=\"city\">Oslo</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_sep｜><｜tool_call_begin｜><steptml:invoke name=\"now\"><steptml:parameter name=\"zone\">Europe/Oslo</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>";
        assert_eq!(
            calls(bare),
            vec![("get_weather".into(), json!({"city": "Oslo"})), ("now".into(), json!({"zone": "Europe/Oslo"}))]
        );
        assert_eq!((parse(bare).content.as_str(), parse(bare).warnings.len()), ("", 0));
        let named = "Let me look.\n\n<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>get_weather\n<steptml:invoke name=\"get_weather\"><steptml:parameter name=\"city\">Rome</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>\n\nOne moment.";
        assert_eq!(calls(named), one("get_weather", json!({"city": "Rome"})));
        assert_eq!(parse(named).content, "Let me look.\n\n\n\nOne moment.");
        let other = "<｜tool_calls_begin｜><｜tool_call_begin｜>function call<｜tool_sep｜><steptml:invoke name=\"now\"></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>";
        assert_eq!(calls(other), vec![], "only the function type or nothing");
    }

    #[test]
    fn a_step3_string_keeps_the_white_space_around_it() {
        // vLLM tests/tool_parsers/test_step3_tool_parser.py,
        // TestStep3ParameterWhitespace: an edit tool's old_string keeps its
        // indentation and line break; typed values are still typed.
        let reply = "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\"forecast\"><steptml:parameter name=\"city\">    if x:\n</steptml:parameter><steptml:parameter name=\"days\"> 4 </steptml:parameter><steptml:parameter name=\"metric\"> true </steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>";
        assert_eq!(Value::Object(checked(reply)), json!({"city": "    if x:\n", "days": 4, "metric": true}));
        let typed = "<｜tool_calls_begin｜><｜tool_call_begin｜><steptml:invoke name=\"calculate\"><steptml:parameter name=\"n\">42</steptml:parameter><steptml:parameter name=\"tags\">[\"a\", \"b\"]</steptml:parameter><steptml:parameter name=\"none\">null</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>";
        assert_eq!(calls(typed), one("calculate", json!({"n": 42, "tags": ["a", "b"], "none": null})), "typed without a schema");
    }

    #[test]
    fn a_cut_off_step3_call_is_a_warning_not_a_call() {
        let cut = &TWO_CALLS[..TWO_CALLS.len() - "</steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>".len()];
        assert_eq!(calls(cut), one("get_weather", json!({"city": "Paris"})));
        assert_eq!(warnings(cut), ["a call is cut off before its <｜tool_call_end｜>; it is not a call"]);
    }

    #[test]
    fn step3_tokens_in_prose_or_code_are_not_calls() {
        no_calls(&[
            "Step3 opens with <｜tool_calls_begin｜> and <｜tool_call_begin｜>.",
            "`<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\"delete_all\"></steptml:invoke><｜tool_call_end｜>`",
            "<think><｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\"now\"></steptml:invoke><｜tool_call_end｜></think>",
            "A <steptml:invoke name=\"now\"></steptml:invoke> tag alone is no call.",
            "e.g. <｜tool_call_begin｜><steptml:invoke name=\"now\"></steptml:invoke><｜tool_call_end｜> without its section",
            "<｜tool_calls_begin｜><｜tool_call_begin｜>Call it like <steptml:invoke name=\"now\"></steptml:invoke><｜tool_call_end｜>",
        ]);
    }
}
