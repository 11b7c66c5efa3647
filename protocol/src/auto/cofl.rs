//! Cohere Command A Reasoning's cofl markup (its `cmd5` template), after
//! the reasoning's `<|END_THINKING|>`:
//!
//! ```text
//! <cofl:tool_calls>
//! <cofl:tool_call id="0" name="NAME">
//! <cofl:value name="KEY" type="raw">text</cofl:value>
//! <cofl:value name="KEY" type="dict"><cofl:value name="K" type="json">true</cofl:value></cofl:value>
//! <cofl:value name="KEY" type="list"><cofl:value type="raw">item</cofl:value></cofl:value>
//! </cofl:tool_call>
//! </cofl:tool_calls>
//! ```
//!
//! The model types each value: `raw` is text, `json` is JSON, a `dict`
//! holds named values and a `list` unnamed ones. The template's flat form
//! writes `<cofl:tool_param name="KEY" string="true|false">` instead, text
//! or JSON. Text and attributes are XML-escaped, unescaped here; `id` is
//! the call's id. The section's tags are special tokens: a call standing
//! apart from the prose without them is read too.

use super::super::ParsedCall;
use super::super::lenient_json::MAX_DEPTH;
use super::super::markup_value;
use super::super::scan::{Collector, Forward};
use super::attribute::{attribute, unescaped};
use super::function_tag::tag_end;
use super::section::{self, CallTokens};
use super::{Scope, attribute_name};
use serde_json::{Map, Value};

/// Opens the calls.
pub(crate) const SECTION_BEGIN: &str = "<cofl:tool_calls>";
/// Closes them.
pub(crate) const SECTION_END: &str = "</cofl:tool_calls>";
/// Opens a call, up to its attributes.
const CALL_OPEN: &str = "<cofl:tool_call ";
/// Closes a call.
const CALL_CLOSE: &str = "</cofl:tool_call>";
/// Opens a typed value, up to its attributes.
const VALUE_OPEN: &str = "<cofl:value ";
/// Closes it.
const VALUE_CLOSE: &str = "</cofl:value>";
/// Opens an argument of the flat form, up to its attributes.
const PARAM_OPEN: &str = "<cofl:tool_param ";
/// Closes it.
const PARAM_CLOSE: &str = "</cofl:tool_param>";
/// What the section's and a call's opening tags start with, searched for
/// once for both.
const CALL_PREFIX: &str = "<cofl:tool_call";
/// Every marker this module reads.
pub(crate) const MARKERS: [&str; 8] =
    [SECTION_BEGIN, SECTION_END, CALL_OPEN, CALL_CLOSE, VALUE_OPEN, VALUE_CLOSE, PARAM_OPEN, PARAM_CLOSE];

/// Every cofl section outside reasoning, and every run of calls whose
/// section tags were left out that stands apart from the prose.
pub(super) fn scan(scope: &Scope<'_>, out: &mut Collector<'_>) {
    section::scan(scope, CALL_PREFIX, SECTION_BEGIN, &mut Calls::new(scope.reply), out);
}

/// Reads the calls of a section, its searches for closing tags linear over
/// the whole reply however many values it holds.
struct Calls<'a> {
    value_close: Forward<'a>,
    param_close: Forward<'a>,
}

impl<'a> Calls<'a> {
    fn new(reply: &'a str) -> Self {
        Calls { value_close: Forward::new(reply, VALUE_CLOSE), param_close: Forward::new(reply, PARAM_CLOSE) }
    }

    /// The value whose tag opens at `at`, `depth` values deep: its name if
    /// it has one, the value, and where it ends; else what is wrong.
    fn value(&mut self, reply: &str, at: usize, depth: usize) -> Result<(Option<String>, Value, usize), String> {
        let rest = &reply[at..];
        let flat = rest.starts_with(PARAM_OPEN);
        if !flat && !rest.starts_with(VALUE_OPEN) {
            return Err(format!("expected {VALUE_OPEN}…> or {CALL_CLOSE}"));
        }
        let head = at + if flat { PARAM_OPEN.len() } else { VALUE_OPEN.len() };
        let tag = tag_end(reply, head).ok_or("a value's tag is not closed")?;
        let attributes = &reply[head..tag];
        let key = attribute(attributes, "name");
        let kind = match flat {
            true if attribute(attributes, "string").as_deref() == Some("false") => "json".to_owned(),
            true => "raw".to_owned(),
            false => attribute(attributes, "type").unwrap_or_default(),
        };
        let body = tag + 1;
        if matches!(kind.as_str(), "dict" | "list") {
            if depth >= MAX_DEPTH {
                return Err(format!("values nest deeper than {MAX_DEPTH}"));
            }
            let (value, end) = self.container(reply, body, depth, kind == "dict")?;
            return Ok((key, value, end));
        }
        let (closes, close_tag) = if flat { (&mut self.param_close, PARAM_CLOSE) } else { (&mut self.value_close, VALUE_CLOSE) };
        let close = closes.next(body).ok_or_else(|| format!("a value has no {close_tag}"))?;
        let text = unescaped(&reply[body..close]);
        let value = if kind == "json" { markup_value::tagged_json(&text) } else { Value::String(text.into_owned()) };
        Ok((key, value, close + close_tag.len()))
    }

    /// The values of a `dict` (named) or a `list` whose body starts at
    /// `body`, as one value, and where its closing tag ends.
    fn container(&mut self, reply: &str, body: usize, depth: usize, named: bool) -> Result<(Value, usize), String> {
        let (mut object, mut items) = (Map::new(), Vec::new());
        let mut p = body;
        loop {
            p += reply[p..].len() - reply[p..].trim_start().len();
            if reply[p..].starts_with(VALUE_CLOSE) {
                let value = if named { Value::Object(object) } else { Value::Array(items) };
                return Ok((value, p + VALUE_CLOSE.len()));
            }
            if !reply[p..].starts_with(VALUE_OPEN) {
                return Err(format!("expected {VALUE_OPEN}…> or {VALUE_CLOSE}"));
            }
            let (key, value, end) = self.value(reply, p, depth + 1)?;
            match (named, key) {
                (true, Some(key)) => {
                    object.insert(key, value);
                }
                (true, None) => return Err("a value in a dict has no name".to_owned()),
                (false, _) => items.push(value),
            }
            p = end;
        }
    }
}

impl CallTokens for Calls<'_> {
    fn section_end(&self, rest: &str) -> Option<usize> {
        rest.starts_with(SECTION_END).then_some(SECTION_END.len())
    }

    fn opens_call(&self, rest: &str) -> bool {
        rest.starts_with(CALL_OPEN)
    }

    /// The call whose `<cofl:tool_call` is at `at`, if it is one, and where
    /// reading it stopped.
    fn call(&mut self, scope: &Scope<'_>, at: usize, out: &mut Collector<'_>) -> (Option<ParsedCall>, usize) {
        let reply = scope.reply;
        let unreadable = |what: &str, out: &mut Collector<'_>| (None, section::unreadable(reply, at, CALL_CLOSE, what, out));
        let head = at + CALL_OPEN.len();
        let Some(tag) = tag_end(reply, head) else {
            return unreadable("a call's tag is not closed", out);
        };
        let attributes = &reply[head..tag];
        let tool = attribute(attributes, "name");
        let Some(name) = tool.as_deref().and_then(attribute_name) else {
            return unreadable(&format!("`{}` is not a tool's name", tool.unwrap_or_default()), out);
        };
        let mut arguments = Map::new();
        let mut p = tag + 1;
        loop {
            p += reply[p..].len() - reply[p..].trim_start().len();
            if reply[p..].starts_with(CALL_CLOSE) {
                p += CALL_CLOSE.len();
                break;
            }
            match self.value(reply, p, 0) {
                Ok((Some(key), value, end)) => {
                    arguments.insert(key, value);
                    p = end;
                }
                Ok((None, ..)) => return unreadable(&format!("an argument of `{name}` has no name"), out),
                Err(what) => return unreadable(&format!("{what} in the call to `{name}`"), out),
            }
        }
        if !scope.markup_calls(at, name) {
            return (None, p);
        }
        let id = attribute(attributes, "id");
        (Some(ParsedCall { id, name: name.to_owned(), arguments, reserved: Map::new(), span: at..p }), p)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, checked, no_calls, one, parse, prose, warnings};
    use serde_json::{Value, json};

    /// Two calls as Command A Reasoning writes them after its thinking,
    /// shaped like cohere-ai/melody's `src/parsing` tests of the cmd5
    /// template (`test_process_full_text_cmd5_nested_xml`).
    const TWO_CALLS: &str = "<|START_THINKING|>I should check the weather, then the time.<|END_THINKING|><cofl:tool_calls><cofl:tool_call id=\"0\" name=\"get_weather\"><cofl:value name=\"city\" type=\"raw\">Paris</cofl:value></cofl:tool_call><cofl:tool_call id=\"1\" name=\"now\"></cofl:tool_call></cofl:tool_calls>";

    fn both() -> Vec<(String, Value)> {
        vec![("get_weather".into(), json!({"city": "Paris"})), ("now".into(), json!({}))]
    }

    #[test]
    fn cofl_calls_after_reasoning_with_their_ids() {
        assert_eq!(calls(TWO_CALLS), both());
        let parsed = parse(TWO_CALLS);
        assert_eq!(parsed.warnings, vec![]);
        assert_eq!(parsed.calls.iter().map(|c| c.id.as_deref()).collect::<Vec<_>>(), [Some("0"), Some("1")]);
        assert_eq!(parsed.content, "<|START_THINKING|>I should check the weather, then the time.<|END_THINKING|>");
        // melody's test_process_full_text_cmd5_implicit_reasoning_then_tool_call:
        // the prompt opens the thinking, so the reply holds only its end.
        let implicit = TWO_CALLS.replace("<|START_THINKING|>", "");
        assert_eq!(calls(&implicit), both());
        let spaced = TWO_CALLS.replace("><cofl", ">\n<cofl").replace("></cofl", ">\n</cofl");
        assert_eq!(calls(&spaced), both(), "line breaks between the tags");
        let unclosed = TWO_CALLS.strip_suffix("</cofl:tool_calls>").unwrap();
        assert_eq!(calls(unclosed), both(), "the section's end left out");
        let stripped = "I will check.\n<cofl:tool_call id=\"0\" name=\"now\"></cofl:tool_call>";
        assert_eq!(calls(stripped), one("now", json!({})), "the section's tokens stripped");
        assert_eq!(parse(stripped).content, "I will check.");
    }

    #[test]
    fn cofl_values_are_typed_as_tagged_and_unescaped() {
        // melody's nested-xml test: raw text with quotes and `&&` as
        // written, JSON numbers, null, and nested dicts and lists, empty
        // ones too; xgrammar's Cohere XML converter writes the same tags.
        let nested = "<cofl:tool_calls><cofl:tool_call id=\"0\" name=\"calculate\"><cofl:value name=\"code\" type=\"raw\">echo \"hi\" &gt;&gt; out.txt && a &lt; b</cofl:value><cofl:value name=\"limit\" type=\"json\">3</cofl:value><cofl:value name=\"ratio\" type=\"json\">2.5</cofl:value><cofl:value name=\"filters\" type=\"dict\"><cofl:value name=\"fresh\" type=\"json\">true</cofl:value><cofl:value name=\"tags\" type=\"list\"><cofl:value type=\"raw\">music</cofl:value><cofl:value type=\"raw\">42</cofl:value></cofl:value></cofl:value><cofl:value name=\"missing\" type=\"json\">null</cofl:value><cofl:value name=\"empty\" type=\"dict\"></cofl:value><cofl:value name=\"none\" type=\"list\"></cofl:value></cofl:tool_call></cofl:tool_calls>";
        assert_eq!(
            calls(nested),
            one(
                "calculate",
                json!({"code": "echo \"hi\" >> out.txt && a < b", "limit": 3, "ratio": 2.5, "filters": {"fresh": true, "tags": ["music", "42"]}, "missing": null, "empty": {}, "none": []})
            )
        );
        // The flat form, melody's test_process_full_text_cmd5_tool_call_with_string_param.
        let flat = "<|START_THINKING|>Search.<|END_THINKING|><cofl:tool_calls><cofl:tool_call id=\"call_0\" name=\"forecast\"><cofl:tool_param name=\"city\" string=\"true\">42</cofl:tool_param><cofl:tool_param name=\"days\" string=\"false\">3</cofl:tool_param><cofl:tool_param name=\"options\" string=\"false\">{\"hourly\": true}</cofl:tool_param></cofl:tool_call></cofl:tool_calls>";
        assert_eq!(Value::Object(checked(flat)), json!({"city": "42", "days": 3, "options": {"hourly": true}}));
        let text_kept = "<cofl:tool_calls><cofl:tool_call id=\"0\" name=\"calculate\"><cofl:value name=\"code\" type=\"raw\">  {\"a\": 1}\n</cofl:value></cofl:tool_call></cofl:tool_calls>";
        assert_eq!(calls(text_kept), one("calculate", json!({"code": "  {\"a\": 1}\n"})), "raw text kept exactly");
    }

    #[test]
    fn a_cut_off_cofl_call_is_a_warning_not_a_call() {
        let cut = TWO_CALLS.strip_suffix("</cofl:tool_call></cofl:tool_calls>").unwrap();
        assert_eq!(calls(cut), one("get_weather", json!({"city": "Paris"})));
        assert_eq!(warnings(cut), ["a call is cut off before its </cofl:tool_call>; it is not a call"]);
        let mid_value =
            "<cofl:tool_calls><cofl:tool_call id=\"0\" name=\"get_weather\"><cofl:value name=\"city\" type=\"raw\">Par";
        assert_eq!((calls(mid_value), warnings(mid_value).len()), (vec![], 1));
        let broken = "<cofl:tool_calls><cofl:tool_call id=\"0\" name=\"now\"><zone>UTC</zone></cofl:tool_call></cofl:tool_calls>";
        assert_eq!(calls(broken), vec![]);
        assert_eq!(warnings(broken), ["expected <cofl:value …> or </cofl:tool_call> in the call to `now`; it is not a call"]);
        let deep = format!(
            "<cofl:tool_calls><cofl:tool_call id=\"0\" name=\"now\"><cofl:value name=\"a\" type=\"list\">{}",
            "<cofl:value type=\"list\">".repeat(200)
        );
        assert_eq!(calls(&deep), vec![], "nesting is bounded");
    }

    #[test]
    fn cofl_tags_in_prose_code_or_reasoning_are_not_calls() {
        no_calls(&[
            "Command A wraps calls in <cofl:tool_calls> and </cofl:tool_calls>.",
            "Use <cofl:tool_call id=\"0\" name=\"delete_all\"></cofl:tool_call> to call it.",
            "<cofl:tool_call id=\"0\" name=\"delete_all\"></cofl:tool_call> is how a call looks.",
            "e.g. `<cofl:tool_calls><cofl:tool_call id=\"0\" name=\"delete_all\"></cofl:tool_call></cofl:tool_calls>`",
            "```xml\n<cofl:tool_calls><cofl:tool_call id=\"0\" name=\"delete_all\"></cofl:tool_call></cofl:tool_calls>\n```",
            "<|START_THINKING|><cofl:tool_calls><cofl:tool_call id=\"0\" name=\"now\"></cofl:tool_call></cofl:tool_calls><|END_THINKING|>Done.",
        ]);
        prose("It opens with <cofl:tool_calls> first.");
    }
}
