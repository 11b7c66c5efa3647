//! MiniMax-M2 (and M2.1, M2.5, M3): `<minimax:tool_call>`, then for each
//! call `<invoke name="NAME">` with `<parameter name="KEY">value</parameter>`
//! for each argument and `</invoke>`, then `</minimax:tool_call>` (which may
//! be left out: it can be the stop token). Reasoning is `<think>…</think>`.
//!
//! A value is raw text, trimmed as vLLM's and SGLang's `minimax_m2`
//! parsers trim it; it stays a string here, and the check step types it by
//! the declared parameter, as it does Qwen3-Coder's `<parameter=…>` values
//! ([`function_tag`](super::function_tag)). The calls' markup is read by
//! [`invoke`](super::invoke), which DeepSeek's DSML and Step3 share.
//!
//! The section's tags are special tokens, which a server that strips them
//! leaves out: a run of `<invoke>` tags on its own lines is read as a
//! section too. Standing apart from the prose is what tells such a run from
//! an invoke tag quoted in a sentence.

use super::super::scan::{Collector, Forward};
use super::invoke::{InvokeSection, MINIMAX};
use super::minimax_m3;
use super::section;
use super::{Scope, starts_apart};

/// Opens the calls.
pub(crate) const SECTION_BEGIN: &str = "<minimax:tool_call>";
/// Closes them.
pub(crate) const SECTION_END: &str = "</minimax:tool_call>";
/// Every marker this module reads (`</parameter>` is Qwen3-Coder's too).
pub(crate) const MARKERS: [&str; 6] = {
    let [invoke_open, invoke_close, parameter_open, parameter_close] = MINIMAX.markers();
    [SECTION_BEGIN, SECTION_END, invoke_open, invoke_close, parameter_open, parameter_close]
};

/// The element Anthropic-style prompts wrap the same invoke tags in, which
/// then belongs to the calls.
const FUNCTION_CALLS: (&str, &str) = ("<function_calls>", "</function_calls>");
/// What closes the calls: the section's tag, or Anthropic's.
const SECTION_ENDS: [&str; 2] = [SECTION_END, FUNCTION_CALLS.1];

/// Every MiniMax section outside reasoning, and every run of invoke tags
/// that stands apart from the prose, in one pass.
pub(super) fn scan(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let reply = scope.reply;
    let mut reader = InvokeSection::new(reply, &MINIMAX, &SECTION_ENDS);
    let mut sections = Forward::indexed(&scope.markers, SECTION_BEGIN);
    let mut invokes = Forward::indexed(&scope.markers, MINIMAX.invoke_open);
    let mut at = 0;
    while let Some(found) = [sections.next(at), invokes.next(at)].into_iter().flatten().min() {
        if let Some(end) = scope.reasoning.skip(found) {
            at = end;
            continue;
        }
        at = if reply[found..].starts_with(SECTION_BEGIN) {
            let after = found + SECTION_BEGIN.len();
            if scope.markup_trust(found).is_some() { section::read(scope, found, after, &mut reader, out) } else { after }
        } else {
            read_bare(scope, found, &mut reader, out)
        };
    }
}

/// The run of invoke tags at `found`, read as a section whose tags were
/// left out when it stands apart from the prose (a line of its own, or
/// after a sentence's end); a cut-off last call is warned of. Where
/// reading stopped.
fn read_bare(scope: &Scope<'_>, found: usize, reader: &mut InvokeSection<'_>, out: &mut Collector<'_>) -> usize {
    let reply = scope.reply;
    let after_tag = found + MINIMAX.invoke_open.len();
    let before = reply[..found].trim_end();
    let start = before.strip_suffix(FUNCTION_CALLS.0).map_or(found, str::len);
    if !starts_apart(reply, start) || before.ends_with(minimax_m3::NAMESPACE) || scope.markup_trust(found).is_none() {
        return after_tag;
    }
    section::read_bare(scope, start, found, reader, out)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, checked, no_calls, one, parse, prose, warnings};
    use serde_json::{Value, json};

    /// Two calls as MiniMax-M2's template writes them.
    const TWO_CALLS: &str = "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Beijing</parameter>\n<parameter name=\"date\">2024-12-25</parameter>\n</invoke>\n<invoke name=\"now\">\n</invoke>\n</minimax:tool_call>";

    fn both() -> Vec<(String, Value)> {
        vec![("get_weather".into(), json!({"city": "Beijing", "date": "2024-12-25"})), ("now".into(), json!({}))]
    }

    #[test]
    fn minimax_calls_alone_after_prose_and_after_reasoning() {
        assert_eq!(calls(TWO_CALLS), both());
        let parsed = parse(TWO_CALLS);
        assert_eq!(parsed.content, "");
        assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
        let reply = format!(
            "<think>\nThe user wants the weather.\n</think>\n\nLet me search for that.\n{TWO_CALLS}\nThe weather will be..."
        );
        assert_eq!(calls(&reply), both());
        assert_eq!(
            parse(&reply).content,
            "<think>\nThe user wants the weather.\n</think>\n\nLet me search for that.\n\nThe weather will be..."
        );
        let one_call = "<minimax:tool_call><invoke name='now'><parameter name='zone'>UTC</parameter></invoke>";
        assert_eq!(calls(one_call), one("now", json!({"zone": "UTC"})), "single quotes, the section's end left out");
        let unquoted = "<minimax:tool_call><invoke name=now><parameter name=zone>UTC</parameter></invoke></minimax:tool_call>";
        assert_eq!(calls(unquoted), one("now", json!({"zone": "UTC"})), "names without quotes, as the engines read them");
    }

    #[test]
    fn minimax_values_are_trimmed_text_typed_by_the_declaration() {
        let reply = "<minimax:tool_call>\n<invoke name=\"forecast\">\n<parameter name=\"city\">42</parameter>\n<parameter name=\"days\">\n3\n</parameter>\n<parameter name=\"ratio\">0.5</parameter>\n<parameter name=\"metric\">true</parameter>\n<parameter name=\"options\">{\"hourly\": true, \"fields\": [\"rain\"], \"x\": null}</parameter>\n</invoke>\n</minimax:tool_call>";
        assert_eq!(
            Value::Object(checked(reply)),
            json!({"city": "42", "days": 3, "ratio": 0.5, "metric": true, "options": {"hourly": true, "fields": ["rain"], "x": null}})
        );
        let quoting = "<minimax:tool_call><invoke name=\"calculate\"><parameter name=\"code\">close it with </parameter> then</parameter><parameter name=\"x\">1</parameter></invoke></minimax:tool_call>";
        assert_eq!(
            calls(quoting),
            one("calculate", json!({"code": "close it with </parameter> then", "x": 1})),
            "a value quoting markup keeps it"
        );
        let code = "<minimax:tool_call><invoke name=\"calculate\"><parameter name=\"code\">\nif a < b && c > d { \"<x>\" }\n</parameter></invoke></minimax:tool_call>";
        assert_eq!(calls(code), one("calculate", json!({"code": "if a < b && c > d { \"<x>\" }"})));
    }

    #[test]
    fn a_cut_off_minimax_call_is_a_warning_not_a_call() {
        let cut = &TWO_CALLS[..TWO_CALLS.len() - "</invoke>\n</minimax:tool_call>".len()];
        assert_eq!(calls(cut), one("get_weather", json!({"city": "Beijing", "date": "2024-12-25"})), "only the complete call");
        assert_eq!(warnings(cut), ["a call is cut off before its </invoke>; it is not a call"]);
        let mid_value = "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Bei";
        assert_eq!(calls(mid_value), vec![]);
        assert_eq!(warnings(mid_value), ["a call is cut off before its </invoke>; it is not a call"]);
        let broken = "<minimax:tool_call><invoke name=\"now\"><zone>UTC</zone></invoke></minimax:tool_call>";
        assert_eq!(calls(broken), vec![]);
        assert_eq!(warnings(broken), ["expected <parameter name=\"KEY\"> or </invoke> in the call to `now`; it is not a call"]);
        assert_eq!(parse(broken).content, "", "the section's tokens are no prose");
    }

    #[test]
    fn minimax_invokes_whose_section_tags_were_stripped() {
        // vLLM tests/tool_parsers/test_minimax_m2_tool_parser.py (two
        // invokes in a row, `days` as text), with the special tokens around
        // them left out as a server that skips special tokens leaves them.
        let two = "Let me check.\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Seattle</parameter>\n<parameter name=\"days\">5</parameter>\n</invoke>\n<invoke name='now'>\n</invoke>";
        let both = vec![("get_weather".into(), json!({"city": "Seattle", "days": 5})), ("now".into(), json!({}))];
        assert_eq!(calls(two), both);
        assert_eq!(parse(two).content, "Let me check.");
        let glued = "I will search both.<invoke name=\"search_web\"><parameter name=\"query\">OpenAI</parameter></invoke><invoke name=\"search_web\"><parameter name=\"query\">Gemini</parameter></invoke>";
        assert_eq!(calls(glued).len(), 2, "after a sentence's end on the same line");
        // The section's end kept, its start stripped (earendil-works/pi
        // issue #368 shows the full section from MiniMax M2.1).
        let end_kept =
            "<invoke name=\"bash\">\n<parameter name=\"command\">mb --help</parameter>\n</invoke>\n</minimax:tool_call>";
        assert_eq!(calls(end_kept), one("bash", json!({"command": "mb --help"})));
        assert_eq!(parse(end_kept).content, "");
        // The same tags in Anthropic's <function_calls> (can1357/oh-my-pi
        // issue #2759).
        let anthropic =
            "<function_calls>\n<invoke name=\"now\">\n<parameter name=\"zone\">UTC</parameter>\n</invoke>\n</function_calls>";
        assert_eq!(calls(anthropic), one("now", json!({"zone": "UTC"})));
        assert_eq!(parse(anthropic).content, "");
        // A cut-off last invoke: the complete ones stay.
        let cut = "<invoke name=\"now\">\n</invoke>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Sea";
        assert_eq!(calls(cut), one("now", json!({})));
        assert_eq!(warnings(cut), ["a call is cut off before its </invoke>; it is not a call"]);
        assert_eq!(warnings(two), Vec::<String>::new());
    }

    #[test]
    fn invoke_tags_quoted_in_a_sentence_are_not_calls() {
        no_calls(&[
            "Use <invoke name=\"now\"></invoke> to ask for the time.",
            "The tag <invoke name=\"get_weather\"><parameter name=\"city\">Paris</parameter></invoke> calls it, then more.",
            "]<]minimax[>[<invoke name=\"now\">]<]minimax[>[</invoke>",
            "<think>\n<invoke name=\"now\">\n</invoke>\n</think>",
            "`<invoke name=\"now\"></invoke>`",
        ]);
        prose("Write it as\n<invoke name=\"delete_all\"></invoke> and so on.");
    }

    #[test]
    fn minimax_tokens_in_prose_or_code_are_not_calls() {
        no_calls(&[
            "MiniMax wraps its calls in <minimax:tool_call> and </minimax:tool_call>.",
            "e.g. `<minimax:tool_call><invoke name=\"delete_all\"></invoke></minimax:tool_call>`",
            "`<minimax:tool_call><invoke name=\"now\"></invoke></minimax:tool_call>`",
            "```xml\n<minimax:tool_call>\n<invoke name=\"delete_all\">\n</invoke>\n</minimax:tool_call>\n```",
            "<think><minimax:tool_call><invoke name=\"now\"></invoke></minimax:tool_call></think>",
            "An <invoke name=\"now\"></invoke> tag alone is no call.",
        ]);
        prose("It opens with <minimax:tool_call> first.");
        let fenced = "```xml\n<minimax:tool_call>\n<invoke name=\"now\">\n</invoke>\n</minimax:tool_call>\n```";
        assert_eq!(calls(fenced).len(), 1, "a declared tool's call in a fenced block counts, as fenced JSON does");
    }
}
