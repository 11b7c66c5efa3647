//! ReAct's call lines, as LangChain's agent prompt teaches them and Command
//! R and many fine-tunes write them: `Action: NAME` on a line, then
//! `Action Input: {…}` with the JSON arguments, one pair per call, often
//! after a `Thought:` line (which stays in the content).
//!
//! The lines are plain text, not tokens, so a pair is trusted as markup
//! only in a reply written in this form (one with a `Thought:` line before
//! it, or that opens with the pair); elsewhere it is a call only for a
//! declared tool, as bare JSON is.

use super::super::ParsedCall;
use super::super::json_call::Trust;
use super::super::lenient_json;
use super::super::scan::{ACTION, Collector, Forward};
use super::{Scope, markup_name};
use serde_json::{Map, Value};

/// Gives its arguments, on the next line.
const ACTION_INPUT: &str = "Action Input:";
/// The line of reasoning that puts a reply in this form.
const THOUGHT: &str = "Thought:";

/// Every `Action:` / `Action Input:` pair outside reasoning.
pub(super) fn scan(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let reply = scope.reply;
    let mut actions = Forward::indexed(&scope.markers, ACTION);
    let mut thoughts = Forward::new(reply, THOUGHT);
    // Where the reply's text starts: a pair there is in the form.
    let first_text = reply.len() - reply.trim_start().len();
    let mut at = 0;
    while let Some(found) = actions.next(at) {
        at = found + ACTION.len();
        if let Some(end) = scope.reasoning.skip(found) {
            at = end;
            continue;
        }
        if !starts_line(reply, found) {
            continue;
        }
        let in_form =
            found == first_text || thoughts.next(0).is_some_and(|thought| thought < found && starts_line(reply, thought));
        if let Some((call, end)) = read(scope, found, in_form, out) {
            out.call(call);
            at = end;
        }
    }
}

/// The pair whose `Action:` stands at `found`, if it is a call, and where it
/// ends.
fn read(scope: &Scope<'_>, found: usize, in_form: bool, out: &mut Collector<'_>) -> Option<(ParsedCall, usize)> {
    let reply = scope.reply;
    let name_at = found + ACTION.len();
    let line_end = reply[name_at..].find('\n').map_or(reply.len(), |i| name_at + i);
    let name = markup_name(reply[name_at..line_end].trim().trim_matches('`'))?;
    let input = reply[line_end..].trim_start();
    let input_at = reply.len() - input.len();
    let json = input.strip_prefix(ACTION_INPUT)?.trim_start();
    let json_at = reply.len() - json.len();
    let trusted = match scope.markup_trust(found)? {
        Trust::Explicit if in_form => true,
        _ => scope.declared.contains(name),
    };
    let next_line = reply[line_end..input_at].matches('\n').count() <= 1;
    if !trusted || !json.starts_with('{') || !next_line {
        return None;
    }
    let (arguments, end) = match lenient_json::parse_prefix(json) {
        Ok((Value::Object(arguments), used, _)) => (arguments, json_at + used),
        _ => {
            out.warn(json_at, format!("the {ACTION_INPUT} of `{name}` is not a JSON object; it is not a call"));
            return None;
        }
    };
    Some((ParsedCall { id: None, name: name.to_owned(), arguments, reserved: Map::new(), span: found..end }, end))
}

/// Whether only white space stands before `at` on its line.
fn starts_line(reply: &str, at: usize) -> bool {
    let before = reply[..at].trim_end_matches([' ', '\t']);
    before.is_empty() || before.ends_with('\n')
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, checked, no_calls, one, parse, warnings};
    use serde_json::{Value, json};

    #[test]
    fn langchain_json_agent_actions_in_a_fence() {
        // LangChain's structured chat agent's format instructions.
        let reply = "Thought: I need the weather.\nAction:\n```json\n{\n  \"action\": \"get_weather\",\n  \"action_input\": {\"city\": \"Paris\"}\n}\n```";
        assert_eq!(calls(reply), one("get_weather", json!({"city": "Paris"})));
        assert_eq!(parse(reply).content, "Thought: I need the weather.");
        let as_string =
            "Action:\n```json\n{\"action\": \"get_weather\", \"action_input\": \"{\\\"city\\\": \\\"Paris\\\"}\"}\n```";
        assert_eq!(calls(as_string), one("get_weather", json!({"city": "Paris"})));
        // Its answer, an undeclared tool, and a label over prose are no call.
        let answer = "Action:\n```json\n{\"action\": \"Final Answer\", \"action_input\": \"It is sunny.\"}\n```";
        let undeclared = "Action:\n```json\n{\"action\": \"delete_all\", \"action_input\": {}}\n```";
        no_calls(&[answer, undeclared]);
        assert_eq!(parse(undeclared).content, undeclared, "a block that is no call keeps its label");
        // In json-block's own shape, `arguments` comes first.
        let named = "```json\n{\"action\": \"tool_call\", \"name\": \"now\", \"action_input\": {\"zone\": \"UTC\"}}\n```";
        assert_eq!(calls(named), one("now", json!({"zone": "UTC"})));
        let both = "```json\n{\"action\": \"tool_call\", \"name\": \"now\", \"arguments\": {}, \"action_input\": {\"zone\": \"UTC\"}}\n```";
        assert_eq!(calls(both), one("now", json!({})));
    }

    #[test]
    fn command_rs_action_label_before_its_block_is_no_content() {
        let reply = "Plan: I will look it up.\nAction: ```json\n[{\"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}]\n```";
        assert_eq!(calls(reply), one("get_weather", json!({"city": "Paris"})));
        assert_eq!(parse(reply).content, "Plan: I will look it up.");
        // Not a label: prose before it on its line.
        let inline = "Next Action: ```json\n[{\"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}]\n```";
        assert_eq!(parse(inline).content, "Next Action:");
    }

    #[test]
    fn react_actions_after_a_thought() {
        // LangChain's ReAct agent prompt (langchain hub hwchase17/react):
        // Thought, then Action and Action Input lines; two in a row.
        let reply = "Thought: I need the weather in Paris, then the time.\nAction: get_weather\nAction Input: {\"city\": \"Paris\"}\nAction: lookup_time\nAction Input: {\"zone\": \"CET\"}";
        assert_eq!(
            calls(reply),
            vec![("get_weather".into(), json!({"city": "Paris"})), ("lookup_time".into(), json!({"zone": "CET"}))]
        );
        assert_eq!(parse(reply).content, "Thought: I need the weather in Paris, then the time.");
        let opening = "Action: search_web\nAction Input: {\"query\": \"Rust 2024 edition\"}\n";
        assert_eq!(calls(opening), one("search_web", json!({"query": "Rust 2024 edition"})), "a reply that opens with it");
        let typed = "Thought: x\nAction: forecast\nAction Input: {\"days\": \"3\", \"metric\": \"true\"}";
        assert_eq!(Value::Object(checked(typed)), json!({"days": 3, "metric": true}));
        let bad = "Thought: x\nAction: now\nAction Input: {\"zone\": ";
        assert_eq!(calls(bad), vec![]);
        assert_eq!(warnings(bad), ["the Action Input: of `now` is not a JSON object; it is not a call"]);
    }

    #[test]
    fn react_lines_in_prose_are_not_calls() {
        no_calls(&[
            // The prompt's own explanation of the form.
            "Use the following format:\nAction: the action to take, should be one of [get_weather]\nAction Input: the input to the action",
            "To call a tool, write\nAction: delete_all\nAction Input: {\"path\": \"/\"}",
            "The next step. Action: now\nAction Input: {}",
            "<think>\nThought: maybe\nAction: now\nAction Input: {}\n</think>",
            "```\nThought: x\nAction: delete_all\nAction Input: {}\n```",
            "Thought: done.\nAction: now\nAction Input: none needed",
        ]);
        let declared = "To call it, write\nAction: now\nAction Input: {}";
        assert_eq!(calls(declared), one("now", json!({})), "a declared tool, as bare JSON is");
    }
}
