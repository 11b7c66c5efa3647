//! A model stuck in a loop: the same call (tool and arguments) asked for
//! round after round.

use crate::call::ToolCall;
use crate::transcript::Entry;

/// The rounds in a row the call was made in: this one and, going back
/// from the reply before `current` through the current user turn, each
/// earlier round that made the same call.
pub(super) fn rounds_in_a_row(entries: &[Entry], current: usize, call: &ToolCall) -> u32 {
    let mut rounds = 1;
    for entry in entries[..current].iter().rev() {
        match entry {
            Entry::User { .. } => break,
            Entry::Assistant { calls, .. } if !calls.is_empty() => {
                if calls.iter().any(|earlier| earlier.tool == call.tool && earlier.arguments == call.args) {
                    rounds += 1;
                } else {
                    break;
                }
            }
            _ => {}
        }
    }
    rounds
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::RequestedCall;
    use serde_json::{Map, json};

    fn args(value: serde_json::Value) -> Map<String, serde_json::Value> {
        value.as_object().unwrap().clone()
    }

    fn asked(calls: &[ToolCall]) -> Entry {
        Entry::Assistant {
            content: String::new(),
            reasoning: String::new(),
            calls: calls.iter().map(RequestedCall::from_call).collect(),
        }
    }

    #[test]
    fn counts_the_rounds_back_to_a_different_call_or_the_user() {
        let same = ToolCall::new("x", "search", args(json!({"q": "a"})));
        let other = ToolCall::new("y", "search", args(json!({"q": "b"})));
        let entries = vec![
            asked(std::slice::from_ref(&same)),
            Entry::User { content: "again".into() },
            asked(std::slice::from_ref(&same)),
            asked(std::slice::from_ref(&other)),
            asked(&[same.clone(), other.clone()]),
            asked(std::slice::from_ref(&same)),
            asked(std::slice::from_ref(&same)),
        ];
        assert_eq!(rounds_in_a_row(&entries, 6, &same), 3);
        assert_eq!(rounds_in_a_row(&entries, 5, &same), 2);
        assert_eq!(rounds_in_a_row(&entries, 5, &other), 3, "two rounds before made it too");
        assert_eq!(rounds_in_a_row(&entries, 3, &other), 1);
        assert_eq!(rounds_in_a_row(&entries, 2, &same), 1, "a user message starts over");
    }
}
