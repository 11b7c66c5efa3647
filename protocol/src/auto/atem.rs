//! Muse Glimmer's ATEM markup, in a Harmony-like message addressed to the
//! tool:
//!
//! ```text
//! <|start|>assistant to=NAME<|message|><atem:function_calls>
//! <atem:invoke name="NAME">
//! <atem:parameter name="KEY">value</atem:parameter>
//! </atem:invoke>
//! </atem:function_calls><|eot|>
//! ```
//!
//! The invokes are MiniMax's behind `atem:` ([`invoke`](super::invoke)),
//! their values trimmed text typed as the engines type them without a
//! schema; the header is [`harmony`](super::harmony)'s to read, which
//! leaves the body here. A run of invokes standing apart from the prose is
//! read without its section's tags too.

use super::super::scan::Collector;
use super::invoke::{ATEM, InvokeSection};
use super::section::{self, CallTokens};
use super::{Scope, harmony};

/// Opens the calls.
pub(crate) const SECTION_BEGIN: &str = "<atem:function_calls>";
/// Closes them.
pub(crate) const SECTION_END: &str = "</atem:function_calls>";
/// Every marker this module reads.
pub(crate) const MARKERS: [&str; 6] = {
    let [invoke_open, invoke_close, parameter_open, parameter_close] = ATEM.markers();
    [SECTION_BEGIN, SECTION_END, invoke_open, invoke_close, parameter_open, parameter_close]
};
/// What every ATEM tag starts with, searched for once for all.
pub(crate) use crate::section_tokens::ATEM_NAMESPACE as NAMESPACE;

/// Every ATEM section outside reasoning, and every run of invokes without
/// it that stands apart from the prose. In a reply of messages (Glimmer's
/// headers, `to=RECIPIENT<|message|>`), only a section that is the body of
/// a message to a tool: one in an answer to the user is quoted (as
/// llama.cpp reads it).
pub(super) fn scan(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let reply = scope.reply;
    let mut calls = InvokeSection::new(reply, &ATEM, &[SECTION_END]);
    if scope.markers.find(0, harmony::MESSAGE).is_none() {
        section::scan(scope, NAMESPACE, SECTION_BEGIN, &mut calls, out);
        return;
    }
    let mut at = 0;
    while let Some(found) = scope.markers.find(at, NAMESPACE) {
        let rest = &reply[found..];
        let a_call = || harmony::body_of_a_call(reply, found) == Some(true) && scope.markup_trust(found).is_some();
        at = match scope.reasoning.skip(found) {
            Some(end) => end,
            None if rest.starts_with(SECTION_BEGIN) && a_call() => {
                section::read(scope, found, found + SECTION_BEGIN.len(), &mut calls, out)
            }
            None if calls.opens_call(rest) && a_call() => section::read_bare(scope, found, found, &mut calls, out),
            None => found,
        }
        .max(found + NAMESPACE.len());
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, checked, no_calls, one, parse, warnings};
    use serde_json::{Value, json};

    /// A call as the Muse Glimmer harness renders a tool turn (its
    /// `<|start|>assistant to={tool}<|message|><atem:function_calls>…`
    /// transcript format, and the `atem`/`muse_glimmer` tool parser that
    /// reads it).
    const CALL: &str = "<|start|>assistant to=get_weather<|message|><atem:function_calls>\n<atem:invoke name=\"get_weather\">\n<atem:parameter name=\"city\">Paris</atem:parameter>\n</atem:invoke>\n</atem:function_calls><|eot|>";

    #[test]
    fn atem_calls_in_their_harmony_like_message() {
        assert_eq!(calls(CALL), one("get_weather", json!({"city": "Paris"})));
        let parsed = parse(CALL);
        assert_eq!((parsed.content.as_str(), parsed.warnings.len()), ("", 0), "{:?}", parsed.warnings);
        let after_reasoning = format!("<|start|>assistant to=self<|message|>The user wants Paris.<|eom|>\n{CALL}");
        assert_eq!(calls(&after_reasoning), one("get_weather", json!({"city": "Paris"})));
        assert!(parse(&after_reasoning).warnings.is_empty(), "{:?}", parse(&after_reasoning).warnings);
        let bare = "Checking.\n<atem:function_calls><atem:invoke name=\"now\"></atem:invoke><atem:invoke name=\"get_weather\"><atem:parameter name=\"city\">Oslo</atem:parameter></atem:invoke></atem:function_calls>";
        assert_eq!(calls(bare), vec![("now".into(), json!({})), ("get_weather".into(), json!({"city": "Oslo"}))]);
        assert_eq!(parse(bare).content, "Checking.");
        let no_section = "<|start|>assistant to=now<|message|><atem:invoke name=\"now\">\n</atem:invoke>";
        assert_eq!(calls(no_section), one("now", json!({})), "the section's tags left out");
    }

    #[test]
    fn glimmer_channels_answer_and_reason_without_calling() {
        // llama.cpp's test-chat.cpp for Muse Glimmer: a message to the user
        // is the answer, one to itself its reasoning; markup in either is
        // quoted, and only a message to a tool calls.
        let act = " to=user<|message|>Hello, world!\nWhat's up?<|eom|><|start|>assistant to=get_weather<|message|><atem:function_calls>\n<atem:invoke name=\"get_weather\">\n<atem:parameter name=\"city\">Paris</atem:parameter>\n</atem:invoke>\n</atem:function_calls>";
        assert_eq!(calls(act), one("get_weather", json!({"city": "Paris"})));
        let parsed = parse(act);
        assert_eq!((parsed.content.as_str(), parsed.warnings.len()), ("Hello, world!\nWhat's up?", 0), "{:?}", parsed.warnings);
        let markup = "<atem:function_calls>\n<atem:invoke name=\"get_weather\">\n<atem:parameter name=\"city\">Paris</atem:parameter>\n</atem:invoke>\n</atem:function_calls>";
        let quoted = format!(" to=user<|message|>You invoke it like this:\n{markup}<|eot|>");
        assert_eq!(calls(&quoted), vec![]);
        assert_eq!(parse(&quoted).content, format!("You invoke it like this:\n{markup}"));
        let reasoned =
            format!(" to=self<|message|>I could use {markup} here<|eom|><|start|>assistant to=user<|message|>Hello!<|eot|>");
        assert_eq!(calls(&reasoned), vec![]);
        assert!(parse(&reasoned).content.ends_with("Hello!"), "{}", parse(&reasoned).content);
        assert!(parse(&reasoned).warnings.is_empty(), "{:?}", parse(&reasoned).warnings);
    }

    #[test]
    fn atem_values_are_typed_and_a_cut_off_call_is_warned_of() {
        // The parser's docstring: booleans as true/false, None as null,
        // mappings and lists as JSON, other scalars raw.
        let typed = "<atem:function_calls><atem:invoke name=\"forecast\"><atem:parameter name=\"city\">7</atem:parameter><atem:parameter name=\"days\">3</atem:parameter><atem:parameter name=\"metric\">true</atem:parameter><atem:parameter name=\"options\">{\"a\": null}</atem:parameter></atem:invoke></atem:function_calls>";
        assert_eq!(Value::Object(checked(typed)), json!({"city": "7", "days": 3, "metric": true, "options": {"a": null}}));
        let cut = "<atem:function_calls><atem:invoke name=\"get_weather\"><atem:parameter name=\"city\">Par";
        assert_eq!(calls(cut), vec![]);
        assert_eq!(warnings(cut), ["a call is cut off before its </atem:invoke>; it is not a call"]);
    }

    #[test]
    fn atem_tags_in_prose_or_code_are_not_calls() {
        no_calls(&[
            "Muse writes <atem:function_calls> around its calls.",
            "Use <atem:invoke name=\"delete_all\"></atem:invoke> to call it.",
            "`<atem:function_calls><atem:invoke name=\"delete_all\"></atem:invoke></atem:function_calls>`",
            "<think><atem:function_calls><atem:invoke name=\"now\"></atem:invoke></atem:function_calls></think>",
        ]);
    }
}
