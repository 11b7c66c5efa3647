//! A reply that ends in a LangChain agent's answer written as JSON,
//! `{"action": "Final Answer", "action_input": "…"}`: as the whole reply
//! (in a fenced block or not), or fenced after an `Action:` label and the
//! agent's thought. The content shows the answer's text, not its JSON. A
//! fenced one after other prose is an example, and stays as written.

use super::super::json_block::action_label;
use super::super::json_call::{ACTION_INPUT_KEY, FINAL_ANSWER};
use super::super::lenient_json;
use super::super::scan::{Collector, FENCE};
use super::Scope;
use serde_json::Value;

/// The answer the reply ends in, if any: its text in the content in place
/// of its JSON.
pub(super) fn scan(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let reply = scope.reply;
    let std::ops::Range { start, end } = scope.said();
    let text = &reply[start..end];
    let (span, json) = match fenced_at_end(reply, start, end) {
        Some((open, body)) => match action_label(reply, open).filter(|&label| label >= start) {
            Some(label) => (label..end, &reply[body]),
            None if open == start => (start..end, &reply[body]),
            None => return, // an example after prose
        },
        None => (start..end, text),
    };
    // Most replies say no such thing: no parse for them.
    if !json.contains(FINAL_ANSWER) {
        return;
    }
    let Ok((Value::Object(mut object), _)) = lenient_json::parse(json) else { return };
    let answer = match (object.remove("action"), object.remove(ACTION_INPUT_KEY)) {
        (Some(Value::String(action)), Some(Value::String(answer))) if action == FINAL_ANSWER && object.is_empty() => answer,
        _ => return,
    };
    out.answer(span, answer);
}

/// The fenced block (its language `json` or none) that `start..end` ends
/// in: where its opening fence stands, and its body.
fn fenced_at_end(reply: &str, start: usize, end: usize) -> Option<(usize, std::ops::Range<usize>)> {
    let close = start + reply[start..end].strip_suffix(FENCE)?.len();
    let open = start + reply[start..close].rfind(FENCE)?;
    let info_end = open + FENCE.len() + reply[open + FENCE.len()..close].find('\n')?;
    let language = reply[open + FENCE.len()..info_end].trim();
    (language.is_empty() || language.eq_ignore_ascii_case("json")).then_some((open, info_end + 1..close))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, parse};

    #[test]
    fn an_answer_written_as_json_shows_its_text() {
        for reply in [
            "{\"action\": \"Final Answer\", \"action_input\": \"It is sunny in Paris.\"}",
            "<think>Done.</think>\n```json\n{\"action\": \"Final Answer\", \"action_input\": \"It is sunny in Paris.\"}\n```",
        ] {
            let parsed = parse(reply);
            assert!(parsed.calls.is_empty(), "{reply}");
            assert!(
                parsed.content.ends_with("It is sunny in Paris.") && !parsed.content.contains('{'),
                "{reply}: {}",
                parsed.content
            );
        }
        // LangChain's structured chat agent: its thought stays.
        let reply = "Thought: I know what to say.\nAction:\n```\n{\n  \"action\": \"Final Answer\",\n  \"action_input\": \"Sunny.\"\n}\n```";
        assert_eq!(parse(reply).content, "Thought: I know what to say.\nSunny.");
    }

    #[test]
    fn a_reply_ending_in_a_fence_after_wide_characters_is_read_safely() {
        // Three bytes before the end stand inside a character.
        for reply in ["a ｜>", "｜é", "<｜tool▁call▁end｜>```"] {
            assert_eq!(parse(reply).content, reply);
        }
    }

    #[test]
    fn json_that_is_no_answer_stays_as_written() {
        for reply in [
            // JSON a model was asked for is its answer as written.
            "{\"response\": \"ok\"}",
            "To finish, a LangChain agent writes:\n```json\n{\"action\": \"Final Answer\", \"action_input\": \"your answer\"}\n```",
            "{\"action\": \"Final Answer\", \"action_input\": {\"a\": 1}}",
            "```python\n{\"action\": \"Final Answer\", \"action_input\": \"x\"}\n```",
        ] {
            assert_eq!(parse(reply).content, reply, "{reply}");
        }
        // A call is still a call.
        let call = "```json\n{\"action\": \"get_weather\", \"action_input\": {\"city\": \"Paris\"}}\n```";
        assert_eq!(calls(call).len(), 1);
    }
}
