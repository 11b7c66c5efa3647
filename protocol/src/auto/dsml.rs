//! DeepSeek V3.2 and V4: `<｜DSML｜function_calls>` (V4:
//! `<｜DSML｜tool_calls>`; V4.1 `<｜DSML｜ calls>`, a space after `｜DSML｜`
//! in every tag), then for each call
//! `<｜DSML｜invoke name="NAME">` with
//! `<｜DSML｜parameter name="KEY" string="true|false">value</｜DSML｜parameter>`
//! for each argument and `</｜DSML｜invoke>`, then the section's closing tag
//! (which may be left out: the stop token can follow the last call).
//! Reasoning is `<think>…</think>`. GigaChat 3.5 writes the same markup
//! behind `｜GCML｜` (`<｜GCML｜tool_calls>`, `<｜GCML｜invoke name="NAME">`…).
//!
//! The model tags each value: `string="true"` is text, kept exactly (a
//! JSON-looking string stays a string), `string="false"` is JSON, decoded
//! here; the check step then types both by the declaration. The calls'
//! markup is read by [`invoke`](super::invoke).

use super::super::ParsedCall;
use super::super::scan::Collector;
use super::Scope;
use super::invoke::{DSML, DSML_SPACED, Dialect, GCML, Invoke};
use super::section::{self, CallTokens};

/// Opens V3.2's calls.
pub(crate) use crate::section_tokens::DSML_FUNCTION_CALLS_BEGIN as FUNCTION_CALLS_BEGIN;
/// Closes them.
pub(crate) const FUNCTION_CALLS_END: &str = "</｜DSML｜function_calls>";
/// Opens V4's calls.
pub(crate) use crate::section_tokens::DSML_TOOL_CALLS_BEGIN as TOOL_CALLS_BEGIN;
/// Closes them.
pub(crate) const TOOL_CALLS_END: &str = "</｜DSML｜tool_calls>";
/// Opens V4.1's calls.
pub(crate) use crate::section_tokens::DSML_SPACED_CALLS_BEGIN as SPACED_CALLS_BEGIN;
/// Closes them.
pub(crate) const SPACED_CALLS_END: &str = "</｜DSML｜ calls>";
/// Opens GigaChat 3.5's calls.
pub(crate) const GCML_BEGIN: &str = "<｜GCML｜tool_calls>";
/// Closes them.
pub(crate) const GCML_END: &str = "</｜GCML｜tool_calls>";
/// Every marker this module reads.
pub(crate) const MARKERS: [&str; 20] = {
    let [invoke_open, invoke_close, parameter_open, parameter_close] = DSML.markers();
    let [spaced_invoke_open, spaced_invoke_close, spaced_parameter_open, spaced_parameter_close] = DSML_SPACED.markers();
    let [gcml_invoke_open, gcml_invoke_close, gcml_parameter_open, gcml_parameter_close] = GCML.markers();
    [
        FUNCTION_CALLS_BEGIN,
        FUNCTION_CALLS_END,
        TOOL_CALLS_BEGIN,
        TOOL_CALLS_END,
        invoke_open,
        invoke_close,
        parameter_open,
        parameter_close,
        SPACED_CALLS_BEGIN,
        SPACED_CALLS_END,
        spaced_invoke_open,
        spaced_invoke_close,
        spaced_parameter_open,
        spaced_parameter_close,
        GCML_BEGIN,
        GCML_END,
        gcml_invoke_open,
        gcml_invoke_close,
        gcml_parameter_open,
        gcml_parameter_close,
    ]
};
/// Each section's opening and closing tags, and the dialect of its calls.
const SECTIONS: [(&str, &str, &Dialect); 4] = [
    (FUNCTION_CALLS_BEGIN, FUNCTION_CALLS_END, &DSML),
    (TOOL_CALLS_BEGIN, TOOL_CALLS_END, &DSML),
    (SPACED_CALLS_BEGIN, SPACED_CALLS_END, &DSML_SPACED),
    (GCML_BEGIN, GCML_END, &GCML),
];

/// Reads DSML and GCML sections where DeepSeek's token scan finds them.
pub(super) struct Reader<'a> {
    /// Per dialect, its calls.
    dialects: [Invoke<'a>; 3],
    /// The closing tag of the section being read.
    end: &'static str,
    /// The dialect of that section's calls.
    current: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(reply: &'a str) -> Self {
        let dialects = [Invoke::new(reply, &DSML), Invoke::new(reply, &DSML_SPACED), Invoke::new(reply, &GCML)];
        Reader { dialects, end: FUNCTION_CALLS_END, current: 0 }
    }

    /// The section at `found`, if a DSML or GCML section opens there: where
    /// reading it stopped.
    pub(super) fn read(&mut self, scope: &Scope<'_>, found: usize, out: &mut Collector<'_>) -> Option<usize> {
        let (begin, end, dialect) = SECTIONS.into_iter().find(|(begin, _, _)| scope.reply[found..].starts_with(begin))?;
        let after = found + begin.len();
        if scope.markup_trust(found).is_none() {
            return Some(after);
        }
        self.end = end;
        self.current = self.dialects.iter().position(|invoke| invoke.reads(dialect)).unwrap_or(0);
        Some(section::read(scope, found, after, self, out))
    }
}

impl CallTokens for Reader<'_> {
    fn section_end(&self, rest: &str) -> Option<usize> {
        rest.starts_with(self.end).then_some(self.end.len())
    }

    fn opens_call(&self, rest: &str) -> bool {
        self.dialects[self.current].opens_call(rest)
    }

    fn call(&mut self, scope: &Scope<'_>, at: usize, out: &mut Collector<'_>) -> (Option<ParsedCall>, usize) {
        self.dialects[self.current].call(scope, at, out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, checked, no_calls, one, parse, prose, warnings};
    use serde_json::{Value, json};

    /// Two calls as V3.2's template writes them.
    const TWO_CALLS: &str = "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" string=\"true\">杭州</｜DSML｜parameter>\n<｜DSML｜parameter name=\"date\" string=\"true\">2024-01-16</｜DSML｜parameter>\n</｜DSML｜invoke>\n<｜DSML｜invoke name=\"now\">\n</｜DSML｜invoke>\n</｜DSML｜function_calls>";

    fn both() -> Vec<(String, Value)> {
        vec![("get_weather".into(), json!({"city": "杭州", "date": "2024-01-16"})), ("now".into(), json!({}))]
    }

    #[test]
    fn deepseek_v4_1_writes_a_space_after_dsml() {
        // SGLang's DeepSeek V4.1 detector and its tests.
        let spaced = TWO_CALLS
            .replace("｜DSML｜function_calls>", "｜DSML｜ calls>")
            .replace("｜DSML｜invoke", "｜DSML｜ invoke")
            .replace("｜DSML｜parameter", "｜DSML｜ parameter");
        let reply = format!("<think>need weather</think>\n\nLet me check.\n\n{spaced}");
        assert_eq!(calls(&reply), both());
        assert_eq!(parse(&reply).content, "<think>need weather</think>\n\nLet me check.");
        let unclosed_think = format!("<think>need weather\n{spaced}");
        assert_eq!(calls(&unclosed_think), both(), "its section ends an unclosed <think>");
        // One dialect's tags do not close another's.
        let mixed = spaced.replace("</｜DSML｜ invoke>", "</｜DSML｜invoke>");
        assert_eq!(calls(&mixed), vec![]);
    }

    #[test]
    fn dsml_calls_alone_after_prose_and_after_reasoning() {
        assert_eq!(calls(TWO_CALLS), both());
        let parsed = parse(TWO_CALLS);
        assert_eq!(parsed.content, "");
        assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
        let reply = format!("<think>\nThe user wants the weather.\n</think>\n\nLet me check.\n\n{TWO_CALLS}");
        assert_eq!(calls(&reply), both());
        assert_eq!(parse(&reply).content, "<think>\nThe user wants the weather.\n</think>\n\nLet me check.");
        let forced_open = format!("The user wants the weather.</think>{TWO_CALLS}");
        assert_eq!(calls(&forced_open), both(), "the template wrote the <think>");
        let v4 = TWO_CALLS.replace("function_calls>", "tool_calls>");
        assert_eq!(calls(&v4), both(), "V4 names the section tool_calls");
        let unclosed = &TWO_CALLS[..TWO_CALLS.len() - "</｜DSML｜function_calls>".len()];
        assert_eq!(calls(unclosed), both(), "the section's end left out");
    }

    #[test]
    fn dsml_values_are_text_or_json_as_tagged() {
        let reply = "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"forecast\">\n<｜DSML｜parameter name=\"city\" string=\"true\">{\"a\": 1}</｜DSML｜parameter>\n<｜DSML｜parameter name=\"days\" string=\"false\">3</｜DSML｜parameter>\n<｜DSML｜parameter name=\"ratio\" string=\"false\">0.5</｜DSML｜parameter>\n<｜DSML｜parameter name=\"metric\" string=\"false\">true</｜DSML｜parameter>\n<｜DSML｜parameter name=\"options\" string=\"false\">{\"hourly\": true, \"fields\": [\"rain\"], \"x\": null}</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>";
        let typed = json!({"city": "{\"a\": 1}", "days": 3, "ratio": 0.5, "metric": true, "options": {"hourly": true, "fields": ["rain"], "x": null}});
        assert_eq!(calls(reply), one("forecast", typed.clone()), "typed as tagged, before any declaration");
        assert_eq!(Value::Object(checked(reply)), typed);
        let spaced = "<｜DSML｜function_calls><｜DSML｜invoke name=\"calculate\"><｜DSML｜parameter name=\"code\" string=\"true\">  a < b\n</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>";
        assert_eq!(calls(spaced), one("calculate", json!({"code": "  a < b\n"})), "text is kept exactly");
    }

    #[test]
    fn a_cut_off_dsml_call_is_a_warning_not_a_call() {
        let cut = &TWO_CALLS[..TWO_CALLS.len() - "</｜DSML｜invoke>\n</｜DSML｜function_calls>".len()];
        assert_eq!(calls(cut), one("get_weather", json!({"city": "杭州", "date": "2024-01-16"})), "only the complete call");
        assert_eq!(warnings(cut), ["a call is cut off before its </｜DSML｜invoke>; it is not a call"]);
        let mid_value = "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" string=\"true\">Hang";
        assert_eq!(calls(mid_value), vec![]);
        assert_eq!(warnings(mid_value), ["a call is cut off before its </｜DSML｜invoke>; it is not a call"]);
    }

    #[test]
    fn a_closing_invoke_tag_cut_short_still_closes_the_call() {
        // Quantized DeepSeek V4 models write `</｜DSML｜inv>` (mlx-lm's
        // tests); every length down to `inv` closes, and nothing shorter.
        let v4 = TWO_CALLS.replace("function_calls>", "tool_calls>");
        for cut in ["inv", "invo", "invok"] {
            let reply = v4.replace("</｜DSML｜invoke>", &format!("</｜DSML｜{cut}>"));
            assert_eq!(calls(&reply), both(), "{cut}");
            assert_eq!(parse(&reply).content, "", "{cut}");
        }
        let json_body = "<｜DSML｜tool_calls><｜DSML｜invoke name=\"now\">{\"zone\": \"UTC\"}</｜DSML｜inv></｜DSML｜tool_calls>";
        assert_eq!(calls(json_body), one("now", json!({"zone": "UTC"})));
        for not_a_close in ["in", "invite", "inv x", "invokes"] {
            let reply = v4.replace("</｜DSML｜invoke>", &format!("</｜DSML｜{not_a_close}>"));
            assert_eq!(calls(&reply), vec![], "{not_a_close}");
        }
    }

    #[test]
    fn a_dsml_call_may_hold_its_arguments_as_one_json_object() {
        // SGLang python/sglang/srt/function_call/deepseekv32_detector.py
        // reads an invoke's body either as parameter tags or as one JSON
        // object ("Format 2"); issue 33's held-out replies mix the two in
        // one block, the second call's body JSON.
        let mixed = "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" string=\"true\">Oslo</｜DSML｜parameter>\n</｜DSML｜invoke>\n<｜DSML｜invoke name=\"forecast\">\n{\"city\": \"Bergen\", \"days\": 2, \"options\": {\"hourly\": true}}\n</｜DSML｜invoke>\n</｜DSML｜function_calls>";
        let both = vec![
            ("get_weather".into(), json!({"city": "Oslo"})),
            ("forecast".into(), json!({"city": "Bergen", "days": 2, "options": {"hourly": true}})),
        ];
        assert_eq!(calls(mixed), both);
        assert_eq!((parse(mixed).content.as_str(), parse(mixed).warnings.len()), ("", 0));
        let v4_json_only = "Checking.<｜DSML｜tool_calls><｜DSML｜invoke name=\"now\">{ }</｜DSML｜invoke><｜DSML｜invoke name=\"calculate\">  {\"expression\": \"2*3\"}  </｜DSML｜invoke></｜DSML｜tool_calls>";
        assert_eq!(calls(v4_json_only), vec![("now".into(), json!({})), ("calculate".into(), json!({"expression": "2*3"}))]);
        assert_eq!(parse(v4_json_only).content, "Checking.");
        // JSON followed by anything but the call's end, or no object at
        // all, is no call.
        let trailing = "<｜DSML｜function_calls><｜DSML｜invoke name=\"now\">{\"zone\": \"UTC\"} and more</｜DSML｜invoke></｜DSML｜function_calls>";
        assert_eq!(calls(trailing), vec![]);
        assert_eq!(warnings(trailing), ["text follows the arguments of `now` before </｜DSML｜invoke>; it is not a call"]);
        let cut = "<｜DSML｜function_calls><｜DSML｜invoke name=\"now\">{\"zone\": \"UT";
        assert_eq!(calls(cut), vec![]);
        no_calls(&[
            "A body may be JSON: `<｜DSML｜invoke name=\"delete_all\">{}</｜DSML｜invoke>`.",
            "<think><｜DSML｜function_calls><｜DSML｜invoke name=\"now\">{}</｜DSML｜invoke></｜DSML｜function_calls></think>",
        ]);
    }

    /// Two calls as GigaChat 3.5 writes them.
    const GCML_TWO_CALLS: &str = "<｜GCML｜tool_calls><｜GCML｜invoke name=\"get_weather\"><｜GCML｜parameter name=\"city\" string=\"true\">Tokyo</｜GCML｜parameter></｜GCML｜invoke><｜GCML｜invoke name=\"now\"></｜GCML｜invoke></｜GCML｜tool_calls>";

    #[test]
    fn gigachat_gcml_calls_read_as_dsml() {
        let two = vec![("get_weather".into(), json!({"city": "Tokyo"})), ("now".into(), json!({}))];
        assert_eq!(calls(GCML_TWO_CALLS), two);
        assert_eq!((parse(GCML_TWO_CALLS).content.as_str(), parse(GCML_TWO_CALLS).warnings.len()), ("", 0));
        let after = format!("<think>Tokyo first.</think>I will check.{GCML_TWO_CALLS}");
        assert_eq!(calls(&after), two);
        assert_eq!(parse(&after).content, "<think>Tokyo first.</think>I will check.");
        let typed = "<｜GCML｜tool_calls><｜GCML｜invoke name=\"forecast\"><｜GCML｜parameter name=\"city\" string=\"false\">\"Rome\"</｜GCML｜parameter><｜GCML｜parameter name=\"days\" string=\"false\">7</｜GCML｜parameter><｜GCML｜parameter name=\"ratio\" string=\"false\">3.5</｜GCML｜parameter><｜GCML｜parameter name=\"metric\" string=\"false\">true</｜GCML｜parameter><｜GCML｜parameter name=\"options\" string=\"false\">{\"nested\": true, \"x\": null}</｜GCML｜parameter></｜GCML｜invoke></｜GCML｜tool_calls>";
        assert_eq!(
            Value::Object(checked(typed)),
            json!({"city": "Rome", "days": 7, "ratio": 3.5, "metric": true, "options": {"nested": true, "x": null}})
        );
        let cut = "<｜GCML｜tool_calls><｜GCML｜invoke name=\"broken\">";
        assert_eq!(
            (calls(cut), warnings(cut)),
            (vec![], vec!["a call is cut off before its </｜GCML｜invoke>; it is not a call".to_owned()])
        );
        no_calls(&[
            "GigaChat 3.5 writes `<｜GCML｜tool_calls><｜GCML｜invoke name=\"delete_all\"></｜GCML｜invoke></｜GCML｜tool_calls>`.",
            "<｜GCML｜tool_calls><｜DSML｜invoke name=\"now\"></｜DSML｜invoke></｜GCML｜tool_calls>",
        ]);
        prose("It opens with <｜GCML｜tool_calls> first.");
    }

    #[test]
    fn dsml_tokens_in_prose_or_code_are_not_calls() {
        no_calls(&[
            "DeepSeek V3.2 wraps calls in <｜DSML｜function_calls> and </｜DSML｜function_calls>.",
            "e.g. `<｜DSML｜function_calls><｜DSML｜invoke name=\"delete_all\"></｜DSML｜invoke></｜DSML｜function_calls>`",
            "```xml\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"delete_all\">\n</｜DSML｜invoke>\n</｜DSML｜function_calls>\n```",
            "<think><｜DSML｜function_calls><｜DSML｜invoke name=\"now\"></｜DSML｜invoke></｜DSML｜function_calls></think>",
            "An <｜DSML｜invoke name=\"now\"></｜DSML｜invoke> tag alone is no call.",
        ]);
        prose("It opens with <｜DSML｜tool_calls> first.");
    }
}
