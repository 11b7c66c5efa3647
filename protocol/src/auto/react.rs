//! Calls written as labelled lines, one pair per call:
//!
//! - ReAct, as LangChain's agent prompt teaches it and Command R and many
//!   fine-tunes write it: `Action: NAME` on a line, then `Action Input:
//!   {…}` with the JSON arguments, often after a `Thought:` line (which
//!   stays in the content). An input that is no JSON (`Action Input:
//!   Paris`, LangChain's tools of one input) is one text, up to the next
//!   label, for the tool's one parameter;
//! - Qwen-Agent's function-calling prompt: `✿FUNCTION✿: NAME`, then
//!   `✿ARGS✿: {…}`, its stop word `✿RESULT✿` kept at times.
//!
//! The labels are plain text, not tokens, so a pair is trusted as markup
//! only in a reply written in this form (one with a `Thought:` line before
//! it, or that opens with the pair); elsewhere it is a call only for a
//! declared tool, as bare JSON is.

use super::super::ParsedCall;
use super::super::call::text_input;
use super::super::json_call::Trust;
use super::super::lenient_json;
use super::super::scan::{ACTION, Collector, Forward};
use super::{Scope, markup_name, starts_line};
use serde_json::{Map, Value};

/// One family's labels.
struct Form {
    /// Names the tool, on a line of its own.
    name: &'static str,
    /// Gives its arguments, on the next line.
    input: &'static str,
    /// What may follow the arguments, taken with them when the reply ends
    /// there (the stop word a server did not strip).
    stop: &'static str,
    /// What a line starts with that ends an input given as text rather
    /// than JSON: the next label of the form.
    text_ends: &'static [&'static str],
    /// Whether its labels are found from the `{` of the arguments, which
    /// the reply's marker index lists, rather than searched for: a label
    /// that starts with no listed byte would cost a pass over the reply.
    by_arguments: bool,
}

/// ReAct's labels.
const REACT: Form = Form {
    name: ACTION,
    input: "Action Input:",
    stop: "Observation:",
    text_ends: &["Observation", THOUGHT, ACTION, "Final Answer:"],
    by_arguments: false,
};
/// Qwen-Agent's labels.
const QWEN_AGENT: Form = Form {
    name: "✿FUNCTION✿:",
    input: "✿ARGS✿:",
    stop: "✿RESULT✿",
    text_ends: &["✿RESULT✿", "✿FUNCTION✿:", "✿RETURN✿:", "✿THOUGHT✿:"],
    by_arguments: true,
};
/// The most line breaks between a name label and its input label.
const MAX_LINES_TO_INPUT: usize = 3;
/// The line of reasoning that puts a reply in ReAct's form.
const THOUGHT: &str = "Thought:";

/// Every labelled pair outside reasoning.
pub(super) fn scan(scope: &Scope<'_>, out: &mut Collector<'_>) {
    for form in [&REACT, &QWEN_AGENT] {
        scan_form(scope, form, out);
    }
}

/// Every pair of `form`'s labels outside reasoning.
fn scan_form(scope: &Scope<'_>, form: &Form, out: &mut Collector<'_>) {
    let reply = scope.reply;
    let mut names = Forward::indexed(&scope.markers, form.name);
    let mut thoughts = Forward::new(reply, THOUGHT);
    // Where the reply's own text starts, after its reasoning: a pair there
    // is in the form, and so is one right after a pair read as a call.
    let first_text = scope.said().start;
    let mut form_run_end = None;
    let mut at = 0;
    while let Some(found) = next_label(scope, form, &mut names, at) {
        at = found + form.name.len();
        if let Some(end) = scope.reasoning.skip(found) {
            at = end;
            continue;
        }
        if !starts_line(reply, found) {
            continue;
        }
        let in_form = found == first_text
            || form_run_end.is_some_and(|end: usize| reply[end..found].trim().is_empty())
            || thoughts.next(0).is_some_and(|thought| thought < found && starts_line(reply, thought));
        if let Some((call, end)) = read(scope, form, found, in_form, out) {
            out.call(call);
            at = end;
            form_run_end = Some(end);
        }
    }
}

/// Where the next name label of `form` at or after `at` stands.
fn next_label(scope: &Scope<'_>, form: &Form, names: &mut Forward<'_>, at: usize) -> Option<usize> {
    if !form.by_arguments {
        return names.next(at);
    }
    let reply = scope.reply;
    let mut from = at;
    while let Some(brace) = scope.markers.find(from, "{") {
        from = brace + 1;
        // `LABEL NAME`, a line break, `INPUT {`.
        let Some(input) = reply[..brace].trim_end_matches([' ', '\t']).strip_suffix(form.input) else { continue };
        let Some(name_line) = reply[..input.len()].trim_end_matches([' ', '\t']).strip_suffix('\n') else { continue };
        let name_line = name_line.strip_suffix('\r').unwrap_or(name_line);
        let line_start = name_line.rfind('\n').map_or(0, |i| i + 1);
        let label = line_start + (name_line[line_start..].len() - name_line[line_start..].trim_start().len());
        if label >= at && reply[label..].starts_with(form.name) {
            return Some(label);
        }
    }
    None
}

/// The pair whose name label stands at `found`, if it is a call, and where
/// it ends.
fn read(scope: &Scope<'_>, form: &Form, found: usize, in_form: bool, out: &mut Collector<'_>) -> Option<(ParsedCall, usize)> {
    let reply = scope.reply;
    let name_at = found + form.name.len();
    let line_end = reply[name_at..].find('\n').map_or(reply.len(), |i| name_at + i);
    let name = markup_name(reply[name_at..line_end].trim().trim_matches('`'))?;
    let input = reply[line_end..].trim_start();
    let input_at = reply.len() - input.len();
    let json = input.strip_prefix(form.input)?.trim_start();
    let json_at = reply.len() - json.len();
    let trusted = match scope.markup_trust(found)? {
        Trust::Explicit if in_form => true,
        _ => scope.declared.contains(name),
    };
    // On the next line, or after a blank line or two, as LangChain reads it.
    let next_line = reply[line_end..input_at].matches('\n').count() <= MAX_LINES_TO_INPUT;
    if !trusted || !next_line {
        return None;
    }
    let (arguments, reserved, end) = if json.starts_with('{') {
        match lenient_json::parse_prefix(json) {
            Ok((Value::Object(arguments), used, _)) => (arguments, Map::new(), json_at + used),
            _ => {
                out.warn(json_at, format!("the {} of `{name}` is not a JSON object; it is not a call", form.input));
                return None;
            }
        }
    } else {
        // `Action Input: Paris`, as LangChain's ReAct agent gives a tool of
        // one input: the text up to the form's next label.
        let end = text_end(reply, form, json_at);
        (Map::new(), text_input(&reply[json_at..end]), end)
    };
    let after = reply[end..].trim_start();
    let end = match after.strip_prefix(form.stop) {
        Some(rest) if rest.trim_start_matches(':').trim().is_empty() => reply.len(),
        _ => end,
    };
    Some((ParsedCall { id: None, name: name.to_owned(), arguments, reserved, span: found..end }, end))
}

/// Where an input given as text from `at` ends: at the first later line
/// that opens with one of `form`'s labels, else at the reply's end.
fn text_end(reply: &str, form: &Form, at: usize) -> usize {
    let mut line_start = at;
    while let Some(break_at) = reply[line_start..].find('\n') {
        line_start += break_at + 1;
        let line = reply[line_start..].trim_start_matches([' ', '\t']);
        if form.text_ends.iter().any(|label| line.starts_with(label)) {
            return line_start;
        }
    }
    reply.len()
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
    fn json_inputs_given_as_text_are_one_input() {
        // LangChain's JSON chat agent with a tool of one input, and a
        // Hermes call whose arguments are a bare text: no warning.
        let fenced = "Action:\n```json\n{\"action\": \"get_weather\", \"action_input\": \"Paris\"}\n```";
        let tagged = "<tool_call>\n{\"name\": \"calculate\", \"arguments\": \"6*7\"}\n</tool_call>";
        let number = "<tool_call>\n{\"name\": \"forecast\", \"arguments\": 3}\n</tool_call>";
        for (reply, input) in [(fenced, "Paris"), (tagged, "6*7"), (number, "3")] {
            assert_eq!(input_of(reply), (Some(json!(input)), json!({})), "{reply}");
            assert_eq!(warnings(reply), Vec::<String>::new());
        }
        // A string meant as JSON is decoded, or dropped with a warning, as
        // before.
        let broken = "<tool_call>\n{\"name\": \"calculate\", \"arguments\": \"{\\\"expression\\\": \"}\n</tool_call>";
        assert_eq!(calls(broken), vec![]);
        let said = warnings(broken);
        assert_eq!(said.len(), 1, "warned of once, not again as bare JSON: {said:?}");
        assert!(said[0].starts_with("the arguments string is not JSON"), "{said:?}");
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
    fn qwen_agent_function_and_args_labels() {
        // Qwen-Agent's function-calling prompt; parallel calls one pair
        // after another, its stop word left in at times.
        let reply = "I will check both.\n✿FUNCTION✿: get_weather\n✿ARGS✿: {\"city\": \"Paris\"}\n✿FUNCTION✿: now\n✿ARGS✿: {\"zone\": \"CET\"}\n✿RESULT✿";
        assert_eq!(calls(reply), vec![("get_weather".into(), json!({"city": "Paris"})), ("now".into(), json!({"zone": "CET"}))]);
        assert_eq!(parse(reply).content, "I will check both.");
        // Its labels are plain text: quoted as code, in reasoning, or
        // shown after prose for an undeclared tool, no call.
        no_calls(&[
            "`✿FUNCTION✿: now\n✿ARGS✿: {}`",
            "<think>\n✿FUNCTION✿: now\n✿ARGS✿: {}\n</think>",
            "It answers like this:\n\n✿FUNCTION✿: delete_files\n✿ARGS✿: {\"path\": \"/\"}\n\nand waits.",
        ]);
        let hallucinated = "✿FUNCTION✿: now\n✿ARGS✿: {}\n✿RESULT✿: 12:00\n✿RETURN✿: It is noon.";
        assert_eq!(calls(hallucinated), one("now", json!({})));
        assert_eq!(parse(hallucinated).content, "✿RESULT✿: 12:00\n✿RETURN✿: It is noon.", "a result it made up stays in view");
        // After reasoning the reply's own text starts with them; a pair
        // right after one read as a call is in the form too.
        assert_eq!(calls("<think>x</think>\n✿FUNCTION✿: lookup\n✿ARGS✿: {\"q\": 1}"), one("lookup", json!({"q": 1})));
        let run = "Checking.\n✿FUNCTION✿: now\n✿ARGS✿: {}\n✿FUNCTION✿: lookup\n✿ARGS✿: {\"q\": 1}";
        assert_eq!(calls(run), vec![("now".into(), json!({})), ("lookup".into(), json!({"q": 1}))]);
        assert_eq!(parse(run).content, "Checking.");
        // ReAct's stop word, left at the reply's end, goes with the call.
        assert_eq!(parse("Thought: x\nAction: now\nAction Input: {}\nObservation:").content, "Thought: x");
    }

    /// The text input of the only call in `reply`, and its arguments.
    fn input_of(reply: &str) -> (Option<Value>, Value) {
        let parsed = parse(reply);
        assert_eq!(parsed.calls.len(), 1, "{reply}: {:?}", parsed.warnings);
        let call = &parsed.calls[0];
        (call.reserved.get(crate::call::TEXT_INPUT_KEY).cloned(), Value::Object(call.arguments.clone()))
    }

    #[test]
    fn react_inputs_given_as_text_are_one_input() {
        // LangChain's ReAct agent gives a tool of one input the text after
        // the label, quotes and spaces taken off.
        let reply = "Thought: I need the weather.\nAction: get_weather\nAction Input: \"Paris\"\nObservation:";
        assert_eq!(input_of(reply), (Some(json!("Paris")), json!({})));
        assert_eq!(parse(reply).content, "Thought: I need the weather.", "the stop word goes with the call");
        let none = "Thought: done.\nAction: now\nAction Input: none needed";
        assert_eq!(input_of(none), (Some(json!("none needed")), json!({})));
        // Up to the next label: several lines of it, a made-up observation
        // left in view; a fence around it is taken off.
        let code = "Thought: run it\nAction: calculate\nAction Input: ```python\nx = 2\n\nprint(x * 21)\n```\nObservation: 42\nThought: done";
        assert_eq!(input_of(code).0, Some(json!("x = 2\n\nprint(x * 21)")));
        assert_eq!(parse(code).content, "Thought: run it\nObservation: 42\nThought: done");
        let blank = "Thought: x\nAction: get_weather\n\nAction Input: Paris";
        assert_eq!(input_of(blank).0, Some(json!("Paris")), "a blank line between");
        let two = "Thought: both\nAction: get_weather\nAction Input: Paris\nAction: now\nAction Input: CET";
        let parsed = parse(two);
        let inputs: Vec<_> = parsed.calls.iter().map(|call| call.reserved[crate::call::TEXT_INPUT_KEY].clone()).collect();
        assert_eq!(inputs, [json!("Paris"), json!("CET")]);
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
            "To call a tool, write\nAction: delete_all\nAction Input: the path",
        ]);
        let declared = "To call it, write\nAction: now\nAction Input: {}";
        assert_eq!(calls(declared), one("now", json!({})), "a declared tool, as bare JSON is");
    }
}
