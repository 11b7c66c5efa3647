//! Command R7B: `<|START_ACTION|>[{"tool_call_id", "tool_name",
//! "parameters"}, …]<|END_ACTION|>`, after its reasoning in
//! `<|START_THINKING|>…<|END_THINKING|>` (which [`Reasoning`] knows), its
//! prose in `<|START_RESPONSE|>…<|END_RESPONSE|>`. The `tool_call_id` is the
//! call's id.
//!
//! [`Reasoning`]: super::super::scan::Reasoning

use super::super::json_call;
use super::super::scan::{Collector, Forward};
use super::Scope;

/// Opens the calls.
pub(crate) const ACTION_OPEN: &str = "<|START_ACTION|>";
/// Closes them.
pub(crate) const ACTION_CLOSE: &str = "<|END_ACTION|>";
/// Opens the prose.
pub(crate) const RESPONSE_OPEN: &str = "<|START_RESPONSE|>";
/// Closes it.
pub(crate) const RESPONSE_CLOSE: &str = "<|END_RESPONSE|>";
/// Opens the prose in Cohere2 MoE's replies (North), as llama.cpp reads
/// them.
const TEXT_OPEN: &str = "<|START_TEXT|>";
/// Closes it.
const TEXT_CLOSE: &str = "<|END_TEXT|>";
/// The tokens around the prose, which are structure.
const PROSE_TOKENS: [&str; 4] = [RESPONSE_OPEN, RESPONSE_CLOSE, TEXT_OPEN, TEXT_CLOSE];
/// Every marker this module reads (the reasoning's are the scanner's).
pub(crate) const MARKERS: [&str; 6] = [ACTION_OPEN, ACTION_CLOSE, RESPONSE_OPEN, RESPONSE_CLOSE, TEXT_OPEN, TEXT_CLOSE];

/// Reads Command R's tokens where the chat-token scan finds them.
pub(super) struct Reader<'a> {
    closes: Forward<'a>,
}

impl<'a> Reader<'a> {
    pub(super) fn new(reply: &'a str) -> Self {
        Reader { closes: Forward::new(reply, ACTION_CLOSE) }
    }

    /// The action or response token at `found`, if one stands there: where
    /// reading it stopped.
    pub(super) fn read(&mut self, scope: &Scope<'_>, found: usize, out: &mut Collector<'_>) -> Option<usize> {
        let reply = scope.reply;
        let rest = &reply[found..];
        if let Some(token) = PROSE_TOKENS.into_iter().find(|token| rest.starts_with(token)) {
            // Structure, not prose; left in place where it is quoted.
            if scope.markup_trust(found).is_some_and(|trust| trust == json_call::Trust::Explicit) {
                out.markup(found..found + token.len());
            }
            return Some(found + token.len());
        }
        if !rest.starts_with(ACTION_OPEN) {
            return None;
        }
        let body = found + ACTION_OPEN.len();
        let Some(close) = self.closes.next(body) else {
            out.warn(found, format!("{ACTION_OPEN} is cut off before its {ACTION_CLOSE}; it is not a call"));
            return Some(reply.len());
        };
        let end = close + ACTION_CLOSE.len();
        if let Some(trust) = scope.markup_trust(found) {
            json_call::collect_text(&reply[body..close], body, found..end, trust, scope.declared, out);
        }
        Some(end)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, checked, no_calls, parse, prose, warnings};
    use serde_json::{Value, json};

    const R7B: &str = "<|START_THINKING|>I will look up the weather, then the time.<|END_THINKING|><|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}},\n    {\"tool_call_id\": \"1\", \"tool_name\": \"now\", \"parameters\": {}}\n]<|END_ACTION|>";

    #[test]
    fn command_r_calls_keep_their_ids_after_reasoning() {
        assert_eq!(calls(R7B), vec![("get_weather".into(), json!({"city": "Paris"})), ("now".into(), json!({}))]);
        let parsed = parse(R7B);
        let ids: Vec<Option<String>> = parsed.calls.iter().map(|c| c.id.clone()).collect();
        assert_eq!(ids, [Some("0".into()), Some("1".into())]);
        assert_eq!(parsed.content, "<|START_THINKING|>I will look up the weather, then the time.<|END_THINKING|>");
        assert_eq!(crate::call::ToolCall::from_reply(R7B, &parsed.calls)[1].id, "1");
    }

    #[test]
    fn command_r_single_call_after_prose_and_the_response_tokens() {
        let reply = "<|START_RESPONSE|>Let me check.<|END_RESPONSE|><|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": \"now\", \"parameters\": {\"zone\": \"UTC\"}}]<|END_ACTION|>";
        assert_eq!(calls(reply), vec![("now".into(), json!({"zone": "UTC"}))]);
        assert_eq!(parse(reply).content, "Let me check.");
        assert_eq!(parse("<|START_RESPONSE|>Hello, world!<|END_RESPONSE|>").content, "Hello, world!");
    }

    #[test]
    fn command_r_arguments_are_typed_by_the_declaration() {
        let reply = "<|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": \"forecast\", \"parameters\": {\"days\": \"4\", \"ratio\": 1, \"metric\": \"yes\", \"options\": \"[1, 2]\"}}]<|END_ACTION|>";
        assert_eq!(Value::Object(checked(reply)), json!({"days": 4, "ratio": 1, "metric": true, "options": [1, 2]}));
    }

    #[test]
    fn calls_in_command_r_thinking_are_not_calls() {
        let reply = "<|START_THINKING|>Maybe <|START_ACTION|>[{\"tool_name\": \"now\", \"parameters\": {}}]<|END_ACTION|>? No.<|END_THINKING|><|START_RESPONSE|>No tool is needed.<|END_RESPONSE|>";
        assert_eq!(calls(reply), vec![]);
    }

    #[test]
    fn a_cut_off_command_r_action_is_a_warning_not_a_call() {
        let cut = &R7B[..R7B.len() - "}\n]<|END_ACTION|>".len()];
        assert_eq!(calls(cut), vec![]);
        assert_eq!(warnings(cut), ["<|START_ACTION|> is cut off before its <|END_ACTION|>; it is not a call"]);
    }

    #[test]
    fn command_r_tokens_in_prose_or_code_are_not_calls() {
        no_calls(&[
            "Command R7B writes its calls between <|START_ACTION|> and <|END_ACTION|> tokens.",
            "e.g. `<|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": \"delete_all\", \"parameters\": {}}]<|END_ACTION|>`",
            "`<|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": \"now\", \"parameters\": {}}]<|END_ACTION|>`",
            "```\n<|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": \"delete_all\", \"parameters\": {}}]<|END_ACTION|>\n```",
        ]);
        prose("Write `<|START_RESPONSE|>` before prose.");
    }
}
