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
use super::{Scope, indented_as_code, markup_name, starts_line};
use serde_json::{Map, Value};
use std::ops::Range;

/// One family's labels.
struct Form {
    /// Names the tool, on a line of its own.
    name: &'static str,
    /// Gives its arguments, on the next line.
    input: &'static str,
    /// What may follow the arguments, taken with them when the reply ends
    /// there (the stop word a server did not strip).
    stop: &'static str,
    /// Gives the final answer: a pair after it is part of the answer, and
    /// a reply that gives one calls nothing with a text input (it recounts
    /// what was done).
    answer: &'static str,
    /// Whether its labels are found from the `{` of the arguments, which
    /// the reply's marker index lists, rather than searched for: a label
    /// that starts with no listed byte would cost a pass over the reply.
    /// Its inputs are then never a text.
    by_arguments: bool,
}

impl Form {
    /// Whether `line` opens with one of the form's labels.
    fn opens_label(&self, line: &str) -> bool {
        [self.stop.trim_end_matches(':'), self.name, self.input, self.answer, THOUGHT].iter().any(|label| line.starts_with(label))
    }
}

/// ReAct's labels.
const REACT: Form =
    Form { name: ACTION, input: "Action Input:", stop: "Observation:", answer: "Final Answer:", by_arguments: false };
/// Qwen-Agent's labels.
const QWEN_AGENT: Form =
    Form { name: "✿FUNCTION✿:", input: "✿ARGS✿:", stop: "✿RESULT✿", answer: "✿RETURN✿:", by_arguments: true };
/// The most line breaks between a name label and its input label.
const MAX_LINES_TO_INPUT: usize = 3;
/// The line of reasoning that puts a reply in ReAct's form.
const THOUGHT: &str = "Thought:";
/// A Markdown fence around an input given as text.
const FENCE: &str = "```";

/// Every labelled pair outside reasoning.
pub(super) fn scan(scope: &Scope<'_>, out: &mut Collector<'_>) {
    for form in [&REACT, &QWEN_AGENT] {
        scan_form(scope, form, out);
    }
}

/// Where a pair stands in the reply.
struct Place {
    /// In a reply written in the form: any tool's name counts.
    in_form: bool,
    /// The reply gives a final answer somewhere.
    answered: bool,
    /// Where fences open lines, once a text input needed them.
    fences: Option<Vec<usize>>,
}

/// Every pair of `form`'s labels outside reasoning.
fn scan_form(scope: &Scope<'_>, form: &Form, out: &mut Collector<'_>) {
    let reply = scope.reply;
    let mut names = Forward::indexed(&scope.markers, form.name);
    let mut thoughts = Forward::new(reply, THOUGHT);
    // Looked for once a pair is found: most replies hold none, and the
    // label starts with no byte the marker index lists.
    let mut answer: Option<Option<usize>> = None;
    // Where the reply's own text starts, after its reasoning: a pair there
    // is in the form, and so is one right after a pair read as a call.
    let first_text = scope.said().start;
    let mut form_run_end = None;
    let mut place = Place { in_form: false, answered: false, fences: None };
    let mut at = 0;
    while let Some(found) = next_label(scope, form, &mut names, at) {
        at = found + form.name.len();
        if let Some(end) = scope.reasoning.skip(found) {
            at = end;
            continue;
        }
        let answer = *answer.get_or_insert_with(|| first_label(scope, form.answer));
        place.answered = answer.is_some();
        if !starts_line(reply, found) || answer.is_some_and(|answer| answer < found) {
            continue;
        }
        place.in_form = found == first_text
            || form_run_end.is_some_and(|end: usize| reply[end..found].trim().is_empty())
            || thoughts.next(0).is_some_and(|thought| thought < found && starts_line(reply, thought));
        if let Some((call, end)) = read(scope, form, found, &mut place, out) {
            out.call(call);
            at = end;
            form_run_end = Some(end);
        }
    }
}

/// Where `label` first opens a line outside reasoning, if it does.
fn first_label(scope: &Scope<'_>, label: &str) -> Option<usize> {
    let mut labels = Forward::new(scope.reply, label);
    let mut at = 0;
    while let Some(found) = labels.next(at) {
        at = found + label.len();
        if scope.reasoning.skip(found).is_none() && starts_line(scope.reply, found) {
            return Some(found);
        }
    }
    None
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
fn read(scope: &Scope<'_>, form: &Form, found: usize, place: &mut Place, out: &mut Collector<'_>) -> Option<(ParsedCall, usize)> {
    let reply = scope.reply;
    let name_at = found + form.name.len();
    let line_end = reply[name_at..].find('\n').map_or(reply.len(), |i| name_at + i);
    let name = markup_name(reply[name_at..line_end].trim().trim_matches('`'))?;
    let input = reply[line_end..].trim_start();
    let input_at = reply.len() - input.len();
    let json = input.strip_prefix(form.input)?.trim_start();
    let json_at = reply.len() - json.len();
    let trusted = match scope.markup_trust(found)? {
        Trust::Explicit if place.in_form => true,
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
        // one input. Text is more easily prose than JSON is: not in a reply
        // that gives its final answer, nor in indented code.
        if form.by_arguments || place.answered || indented_as_code(reply, found) {
            return None;
        }
        let text = text_input_after(reply, form, input_at + form.input.len(), &mut place.fences)?;
        (Map::new(), text_input(&reply[text.clone()]), text.end)
    };
    let after = reply[end..].trim_start();
    let end = match after.strip_prefix(form.stop) {
        Some(rest) if rest.trim_start_matches(':').trim().is_empty() => reply.len(),
        _ => end,
    };
    Some((ParsedCall { id: None, name: name.to_owned(), arguments, reserved, span: found..end }, end))
}

/// The input given as text after its label, which ends at `at`: the rest
/// of the label's line, or, when that is empty, the next line unless it is
/// a label; a fence opened there runs to its closing line. What follows it
/// must be the reply's end, the form's stop word (with the observation a
/// model made up) or its next pair, as a reply ends where its call does:
/// prose after it makes the pair an example, and no call.
fn text_input_after(reply: &str, form: &Form, at: usize, fences: &mut Option<Vec<usize>>) -> Option<Range<usize>> {
    let line_end = |from: usize| reply[from..].find('\n').map_or(reply.len(), |i| from + i);
    let mut text = at..line_end(at);
    if reply[text.clone()].trim().is_empty() {
        // The first line that holds something, unless it is a label.
        let next = reply.len() - reply[at..].trim_start().len();
        if !form.opens_label(&reply[next..]) {
            text = next..line_end(next);
        }
    }
    let first = reply[text.clone()].trim_start();
    if first.starts_with(FENCE) && !first[FENCE.len()..].trim_end().ends_with(FENCE) {
        // To the line that closes the fence; a fence never closed is cut off.
        let fences = fences.get_or_insert_with(|| fence_lines(reply));
        let close = fences[fences.partition_point(|&fence| fence <= text.end)..].first()?;
        text.end = line_end(*close);
    } else if opens_code(first, &reply[text.end..]) {
        // Code written without a fence (LangChain's Python agent): its
        // lines up to a blank one, a label or a fence.
        while text.end < reply.len() {
            let next = text.end + 1..line_end(text.end + 1);
            let line = reply[next.clone()].trim_start();
            if line.is_empty() || line.starts_with(FENCE) || form.opens_label(line) {
                break;
            }
            text.end = next.end;
        }
    }
    let rest = reply[text.end..].trim_start();
    let follows =
        rest.is_empty() || [form.stop.trim_end_matches(':'), form.name, THOUGHT].iter().any(|label| rest.starts_with(label));
    // Its line break goes with it.
    text.end += usize::from(reply[text.end..].starts_with('\n'));
    follows.then_some(text)
}

/// Whether an input whose first line is `first`, followed by `after`,
/// goes on as code: that line opens a block (`def f(n):`, `{`) or the
/// next line is indented.
fn opens_code(first: &str, after: &str) -> bool {
    first.trim_end().ends_with([':', '{', '(', '[', '\\', ','])
        || after.strip_prefix('\n').is_some_and(|next| next.starts_with([' ', '\t']))
}

/// Where each fence that opens a line stands: found once, when a text
/// input first needs it, so that looking for a fence's close stays linear
/// however many inputs open one.
fn fence_lines(reply: &str) -> Vec<usize> {
    let mut fences = Forward::new(reply, FENCE);
    let mut lines = Vec::new();
    let mut at = 0;
    while let Some(fence) = fences.next(at) {
        at = fence + FENCE.len();
        if starts_line(reply, fence) {
            lines.push(fence);
        }
    }
    lines
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
        // A quoted phrase is text; a JSON string of text is its text; null
        // is no input.
        let action = |input: &str| format!("Action:\n```json\n{{\"action\": \"get_weather\", \"action_input\": {input}}}\n```");
        assert_eq!(input_of(&action(r#""\"rust wasm\" tutorial""#)).0, Some(json!("\"rust wasm\" tutorial")));
        assert_eq!(input_of(&action(r#""\"rust wasm\"""#)).0, Some(json!("rust wasm")));
        assert_eq!(input_of(&action(r#""null""#)), (None, json!({})));
        // Bare JSON whose arguments are a text is prose about a tool, a
        // log of a step, or a tool's definition: no call.
        // Read in markup, the same call is not warned of again as bare JSON.
        let mistral = "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": \"Paris\"}]";
        assert_eq!((input_of(mistral).0, warnings(mistral)), (Some(json!("Paris")), vec![]));
        no_calls(&[
            "Call it as {\"name\": \"get_weather\", \"arguments\": \"the city\"}.",
            "{\"tool\": \"calculate\", \"tool_input\": \"6*7\", \"log\": \"Thought: multiply\"}",
            "{\"name\": \"get_weather\", \"description\": \"weather\", \"parameters\": \"city: string\"}",
            "<tool_call>{\"name\": \"get_weather\", \"description\": \"weather\", \"arguments\": \"city\"}</tool_call>",
        ]);
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
        // An empty input is none: the next pair is its own call.
        let empty = "Thought: x\nAction: now\nAction Input:\nAction: get_weather\nAction Input: Paris";
        let parsed = parse(empty);
        let found: Vec<_> =
            parsed.calls.iter().map(|call| (call.name.as_str(), call.reserved.get(crate::call::TEXT_INPUT_KEY))).collect();
        assert_eq!(found, [("now", None), ("get_weather", Some(&json!("Paris")))]);
        assert_eq!(input_of("Thought: x\nAction: now\nAction Input:\nObservation:"), (None, json!({})));
        assert_eq!(input_of("Thought: x\nAction: now\nAction Input: None"), (None, json!({})), "LangChain's no input");
        assert_eq!(input_of("Thought: x\nAction: calculate\nAction Input: ```6*7```").0, Some(json!("6*7")));
        assert_eq!(input_of("Thought: x\r\nAction: calculate\r\nAction Input: 6*7\r\n").0, Some(json!("6*7")));
        // Code without a fence (LangChain's Python agent), a blank line
        // after the label, a thought after the input.
        let code = "Thought: x\nAction: calculate\nAction Input: def fib(n):\n    return n if n < 2 else fib(n-1) + fib(n-2)\nprint(fib(10))\nObservation:";
        assert_eq!(input_of(code).0, Some(json!("def fib(n):\n    return n if n < 2 else fib(n-1) + fib(n-2)\nprint(fib(10))")));
        assert_eq!(input_of("Thought: x\nAction: get_weather\nAction Input:\n\n\"Paris\"").0, Some(json!("Paris")));
        assert_eq!(input_of("Thought: x\nAction: get_weather\nAction Input: Paris\nThought: wait").0, Some(json!("Paris")));
    }

    #[test]
    fn a_text_input_followed_by_prose_is_an_example() {
        // A reply ends where its call does (LangChain stops it at
        // `Observation`); prose after the input, a fence or comment
        // closing around it, a final answer before or anywhere, and
        // indented code make the pair an example (a review found each).
        no_calls(&[
            "Thought: I will show you.\n```\nAction: get_weather\nAction Input: Paris\n```\nThat is how a call looks.",
            "<!--\nThought: x\nAction: get_weather\nAction Input: Paris\n-->\nHello",
            "Thought: x\nAction: get_weather\nAction Input: Paris\n\nJust kidding, I would never do that.",
            "Thought: let me explain.\n\nIn LangChain, the agent writes lines like\nAction: get_weather\nAction Input: the city\nand then waits.",
            "To check, you would write\nAction: get_weather\nAction Input: your city here\nand I will run it.",
            "Thought: I now know the final answer.\nFinal Answer: You can ask me again with:\nAction: get_weather\nAction Input: Paris",
            "Here is what I did:\n\nThought: add\nAction: calculate\nAction Input: 6*7\nObservation: 42\nThought: done\nFinal Answer: 42",
            "Example:\n\n    Thought: x\n    Action: get_weather\n    Action Input: Paris\n\nDone.",
            "Thought: x\nAction: calculate\nAction Input: ```python\nprint(1)\n",
        ]);
        // A final answer after a JSON input is the model's made-up ending:
        // the call stands, as Qwen-Agent's does.
        assert_eq!(
            calls("Thought: x\nAction: now\nAction Input: {}\nObservation: 12:00\nFinal Answer: noon"),
            one("now", json!({}))
        );
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
