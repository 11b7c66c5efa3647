//! StepFun's Step3: DeepSeek-like tokens spelt with `_`,
//! `<｜tool_calls_begin｜>`, then for each call
//! `<｜tool_call_begin｜>function<｜tool_sep｜>` and the call in `steptml:`
//! invoke markup ([`invoke`](super::invoke)), then `<｜tool_call_end｜>`;
//! then `<｜tool_calls_end｜>`. Values are trimmed text, typed by the check
//! step. Reasoning is `<think>…</think>`.

use super::super::ParsedCall;
use super::super::scan::Collector;
use super::Scope;
use super::invoke::{Invoke, STEPTML};
use super::section::{self, CallTokenSearch, CallTokens};

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
    tokens: CallTokenSearch<'a>,
    invoke: Invoke<'a>,
}

impl<'a> Reader<'a> {
    pub(super) fn new(reply: &'a str) -> Self {
        Reader { tokens: CallTokenSearch::new(reply, SEP, CALL_END), invoke: Invoke::new(reply, &STEPTML) }
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

impl CallTokens for Reader<'_> {
    fn section_end(&self, rest: &str) -> Option<usize> {
        rest.starts_with(SECTION_END).then_some(SECTION_END.len())
    }

    fn opens_call(&self, rest: &str) -> bool {
        rest.starts_with(CALL_BEGIN)
    }

    /// The call whose `<｜tool_call_begin｜>` is at `at`, if it is one, and
    /// where reading it stopped.
    fn call(&mut self, scope: &Scope<'_>, at: usize, out: &mut Collector<'_>) -> (Option<ParsedCall>, usize) {
        let reply = scope.reply;
        let head = at + CALL_BEGIN.len();
        let (sep, end) = match self.tokens.find(at, head, out) {
            Ok(found) => found,
            Err(stopped) => return (None, stopped),
        };
        let after = end + CALL_END.len();
        let kind = reply[head..sep].trim();
        let invoke_at = sep + SEP.len() + (reply[sep + SEP.len()..].len() - reply[sep + SEP.len()..].trim_start().len());
        if kind != FUNCTION_TYPE || !self.invoke.opens_call(&reply[invoke_at..end]) {
            out.warn(head, format!("a call is not `{FUNCTION_TYPE}{SEP}` and an invoke tag; it is not a call"));
            return (None, after);
        }
        let (call, stopped) = self.invoke.call(scope, invoke_at, out);
        if stopped > end || !reply[stopped..end].trim().is_empty() {
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
        ]);
    }
}
