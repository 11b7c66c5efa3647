//! GLM-4.5, 4.6 and 4.7: `<tool_call>NAME` and, for each argument,
//! `<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>`, then
//! `</tool_call>` (4.5 and 4.6 put line breaks between them, 4.7 does not).
//! Tencent's Hunyuan (HY) V3 writes the same calls with `<tool_sep>` after
//! the name, inside `<tool_calls>…</tool_calls>` (left out of the content),
//! and its shipped tokenizer every one of those tokens with a suffix,
//! `<tool_call:opensource>` ([`HY3`], read by [`envelope`](super::envelope));
//! Meituan's LongCat with `longcat_` tags ([`LONGCAT`]).
//!
//! The template writes a string value as it is and any other value as JSON;
//! the value is typed here as the engines type it without a schema
//! ([`markup_value`](super::super::markup_value)), and the check step types
//! it by the declaration (so `{"a": 1}` is an object for a json parameter
//! and its text for a string one).

use super::super::ParsedCall;
use super::super::markup_value;
use super::super::scan::{Collector, find};
use super::{Scope, markup_name};
use serde_json::Map;
use std::ops::Range;

/// The tags around an argument's key and its value, open and close, and
/// the separator that may follow the tool's name.
pub(crate) struct ArgTags {
    pub(crate) key: (&'static str, &'static str),
    pub(crate) value: (&'static str, &'static str),
    pub(crate) sep: &'static str,
}

/// Between Hunyuan's name and arguments.
pub(crate) const TOOL_SEP: &str = "<tool_sep>";
/// GLM's (and Hunyuan's) argument tags.
pub(crate) const GLM: ArgTags =
    ArgTags { key: ("<arg_key>", "</arg_key>"), value: ("<arg_value>", "</arg_value>"), sep: TOOL_SEP };
/// LongCat's, in `<longcat_tool_call>` ([`envelope`](super::envelope)).
pub(crate) const LONGCAT: ArgTags = ArgTags {
    key: ("<longcat_arg_key>", "</longcat_arg_key>"),
    value: ("<longcat_arg_value>", "</longcat_arg_value>"),
    sep: TOOL_SEP,
};
/// Hunyuan V3's as its shipped tokenizer writes them, each token with the
/// `:opensource` suffix (the same tokens without it are not in its vocabulary).
pub(crate) const HY3: ArgTags = ArgTags {
    key: ("<arg_key:opensource>", "</arg_key:opensource>"),
    value: ("<arg_value:opensource>", "</arg_value:opensource>"),
    sep: "<tool_sep:opensource>",
};
/// Every marker this module reads (besides `<tool_call>`).
pub(crate) const MARKERS: [&str; 14] = [
    GLM.key.0,
    GLM.key.1,
    GLM.value.0,
    GLM.value.1,
    TOOL_SEP,
    LONGCAT.key.0,
    LONGCAT.key.1,
    LONGCAT.value.0,
    LONGCAT.value.1,
    HY3.key.0,
    HY3.key.1,
    HY3.value.0,
    HY3.value.1,
    HY3.sep,
];

/// Whether the `<tool_call>` body `text` starts like a GLM call: a tool's
/// name, then an argument, a line break or nothing.
pub(super) fn opens_call(text: &str, tags: &ArgTags) -> bool {
    let name_end = text.find(['\n', '<']).unwrap_or(text.len());
    let rest = text[name_end..].trim_start();
    let rest = rest.strip_prefix(tags.sep).unwrap_or(rest).trim_start();
    markup_name(&text[..name_end]).is_some() && (rest.is_empty() || rest.starts_with(tags.key.0))
}

/// The GLM call in the `<tool_call>` body `at..end`; the call spans `span`.
/// A name alone is a call only for a declared tool: prose such as "wrap it
/// in <tool_call>search</tool_call>" names a tool without calling it.
pub(super) fn read(scope: &Scope<'_>, at: usize, end: usize, span: Range<usize>, tags: &ArgTags, out: &mut Collector<'_>) {
    let body = &scope.reply[..end];
    let name_end = body[at..].find(['\n', '<']).map_or(end, |i| at + i);
    let Some(name) = markup_name(&body[at..name_end]) else { return };
    if !scope.markup_calls(span.start, name) {
        return;
    }
    let mut arguments = Map::new();
    let mut p = name_end + (body[name_end..].len() - body[name_end..].trim_start().len());
    if body[p..].starts_with(tags.sep) {
        p += tags.sep.len();
    }
    loop {
        p += body[p..].len() - body[p..].trim_start().len();
        if p >= end {
            break;
        }
        let key = element(body, p, tags.key);
        let Ok((key, after_key)) = key else {
            out.warn(p, format!("{} in the call to `{name}`; it is not a call", key.unwrap_err()));
            return;
        };
        let value_at = after_key + (body[after_key..].len() - body[after_key..].trim_start().len());
        let value = element(body, value_at, tags.value);
        let Ok((value, after_value)) = value else {
            out.warn(
                value_at,
                format!("{} after `{}` in the call to `{name}`; it is not a call", value.unwrap_err(), key.trim()),
            );
            return;
        };
        arguments.insert(key.trim().to_owned(), markup_value::decode(value));
        p = after_value;
    }
    if arguments.is_empty() && !scope.declared.contains(name) {
        return;
    }
    out.call(ParsedCall { id: None, name: name.to_owned(), arguments, reserved: Map::new(), span });
}

/// The text of the `(open, close)` element at `p` of `body` and where it
/// ends, or what is wrong.
fn element<'a>(body: &'a str, p: usize, (open, close): (&str, &str)) -> Result<(&'a str, usize), String> {
    if !body[p..].starts_with(open) {
        return Err(format!("expected {open}"));
    }
    let text = p + open.len();
    let close_at = find(body, text, close).ok_or_else(|| format!("{open} is not closed by {close}"))?;
    Ok((&body[text..close_at], close_at + close.len()))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, checked, no_calls, one, parse, warnings};
    use serde_json::json;

    /// A call as GLM-4.5's template writes it.
    const GLM_CALL: &str = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n<arg_key>date</arg_key>\n<arg_value>2025-08-01</arg_value>\n</tool_call>";

    #[test]
    fn glm_calls_alone_after_prose_and_after_reasoning() {
        let args = json!({"city": "Beijing", "date": "2025-08-01"});
        assert_eq!(calls(GLM_CALL), one("get_weather", args.clone()));
        let reply = format!("<think>I want to get the weather.</think>\n\nI will help you get the weather.\n{GLM_CALL}");
        let parsed = parse(&reply);
        assert_eq!(parsed.calls.len(), 1);
        assert_eq!(parsed.content, "<think>I want to get the weather.</think>\n\nI will help you get the weather.");
        assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    }

    #[test]
    fn glm_several_calls_and_the_4_7_form_without_line_breaks() {
        let reply = format!(
            "I will check both.\n\n{GLM_CALL}\n\nmeanwhile, Shanghai:\n\n<tool_call>get_weather<arg_key>city</arg_key><arg_value>Shanghai</arg_value></tool_call><tool_call>now\n</tool_call>"
        );
        assert_eq!(
            calls(&reply),
            vec![
                ("get_weather".into(), json!({"city": "Beijing", "date": "2025-08-01"})),
                ("get_weather".into(), json!({"city": "Shanghai"})),
                ("now".into(), json!({})),
            ]
        );
        assert_eq!(parse(&reply).content, "I will check both.\n\n\n\nmeanwhile, Shanghai:");
    }

    #[test]
    fn hunyuan_v3_calls_with_a_separator_after_the_name() {
        let reply = "Checking.<tool_calls><tool_call>get_weather<tool_sep><arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call><tool_call>now<tool_sep></tool_call></tool_calls>";
        assert_eq!(calls(reply), vec![("get_weather".into(), json!({"city": "Paris"})), ("now".into(), json!({}))]);
        assert_eq!(parse(reply).content, "Checking.", "the <tool_calls> around them is no content");
        let typed = "<tool_calls><tool_call>forecast<tool_sep><arg_key>days</arg_key><arg_value>3</arg_value><arg_key>options</arg_key><arg_value>{\"a\": [1]}</arg_value></tool_call></tool_calls>";
        assert_eq!(serde_json::Value::Object(checked(typed)), json!({"days": 3, "options": {"a": [1]}}));
        let cut = "<tool_calls><tool_call>get_weather<tool_sep><arg_key>city</arg_key><arg_value>Par";
        assert_eq!(calls(cut), vec![]);
        no_calls(&["`<tool_call>delete_all<tool_sep></tool_call>`"]);
    }

    #[test]
    fn hunyuan_v3_calls_with_the_shipped_tokenizers_suffix() {
        let two = "<tool_calls:opensource>\n<tool_call:opensource>get_weather<tool_sep:opensource>\n<arg_key:opensource>city</arg_key:opensource>\n<arg_value:opensource>Paris</arg_value:opensource>\n</tool_call:opensource>\n<tool_call:opensource>now<tool_sep:opensource>\n</tool_call:opensource>\n</tool_calls:opensource>";
        let both = vec![("get_weather".into(), json!({"city": "Paris"})), ("now".into(), json!({}))];
        assert_eq!(calls(two), both);
        let reasoned = format!("<think:opensource>The weather, then the time.</think:opensource>\nChecking.{two}");
        assert_eq!(calls(&reasoned), both);
        assert_eq!(
            parse(&reasoned).content.trim(),
            "<think:opensource>The weather, then the time.</think:opensource>\nChecking."
        );
        assert!(parse(&reasoned).warnings.is_empty(), "{:?}", parse(&reasoned).warnings);
        let typed = "<tool_calls:opensource><tool_call:opensource>forecast<tool_sep:opensource><arg_key:opensource>days</arg_key:opensource><arg_value:opensource>3</arg_value:opensource><arg_key:opensource>metric</arg_key:opensource><arg_value:opensource>false</arg_value:opensource></tool_call:opensource></tool_calls:opensource>";
        assert_eq!(serde_json::Value::Object(checked(typed)), json!({"days": 3, "metric": false}));
        let unclosed = &two[..two.len() - "\n</tool_calls:opensource>".len()];
        assert_eq!(
            calls(unclosed),
            vec![("get_weather".into(), json!({"city": "Paris"})), ("now".into(), json!({}))],
            "the stop token left out"
        );
        let cut = "<tool_calls:opensource><tool_call:opensource>get_weather<tool_sep:opensource><arg_key:opensource>city</arg_key:opensource><arg_value:opensource>Par";
        assert_eq!(calls(cut), vec![]);
        assert_eq!(warnings(cut), ["<tool_call:opensource> is not closed; it is not a call"]);
        let shown = format!("<think:opensource>I could write {two}.</think:opensource>It is sunny.");
        assert_eq!(calls(&shown), vec![], "a call shown in reasoning is reasoning");
        no_calls(&[
            &format!("Hy3 writes `{typed}`."),
            "Hy3 opens its calls with <tool_calls:opensource> and closes them with </tool_calls:opensource>.",
        ]);
    }

    #[test]
    fn glm_calls_after_a_think_never_closed() {
        // vLLM tests/tool_parsers/test_glm47_moe_tool_parser.py: GLM-4.7
        // calls with the reasoning's `<think>` left open before them.
        let reply = "<think>The user wants Beijing's weather.<tool_call>get_weather<arg_key>city</arg_key><arg_value>Beijing</arg_value></tool_call>";
        assert_eq!(calls(reply), one("get_weather", json!({"city": "Beijing"})));
        assert_eq!(parse(reply).content, "<think>The user wants Beijing's weather.");
        no_calls(&["<think>I could call [get_weather(city=\"x\")] but will not"]);
    }

    #[test]
    fn glm_values_are_typed_by_the_declaration() {
        let reply = "<tool_call>forecast\n<arg_key>city</arg_key>\n<arg_value>7</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n<arg_key>ratio</arg_key>\n<arg_value>2.5</arg_value>\n<arg_key>metric</arg_key>\n<arg_value>false</arg_value>\n<arg_key>options</arg_key>\n<arg_value>{\"hourly\": [1, 2]}</arg_value>\n</tool_call>";
        assert_eq!(
            serde_json::Value::Object(checked(reply)),
            json!({"city": "7", "days": 3, "ratio": 2.5, "metric": false, "options": {"hourly": [1, 2]}})
        );
        let multi_line = "<tool_call>calculate\n<arg_key>code</arg_key>\n<arg_value>a -> b\n  <c>\n</arg_value>\n</tool_call>";
        assert_eq!(calls(multi_line), one("calculate", json!({"code": "a -> b\n  <c>\n"})), "values are kept exactly");
    }

    #[test]
    fn a_cut_off_glm_call_is_a_warning_not_a_call() {
        let cut = &GLM_CALL[..GLM_CALL.len() - "\n</tool_call>".len()];
        assert_eq!(calls(cut), vec![]);
        assert_eq!(warnings(cut), ["<tool_call> is not closed; it is not a call"]);
        let broken = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Seattle</arg_value>\n<arg_key>incomplete\n<arg_value>x</arg_value>\n</tool_call>";
        assert_eq!(calls(broken), vec![]);
        assert_eq!(warnings(broken), ["<arg_key> is not closed by </arg_key> in the call to `get_weather`; it is not a call"]);
    }

    #[test]
    fn glm_markers_in_prose_or_code_are_not_calls() {
        no_calls(&[
            "GLM writes <tool_call>NAME, then <arg_key> and <arg_value> pairs.",
            "Wrap the call in <tool_call>search</tool_call> tags.",
            "For example `<tool_call>delete_all<arg_key>path</arg_key><arg_value>/</arg_value></tool_call>`.",
            "`<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>`",
            "```\n<tool_call>delete_all\n<arg_key>path</arg_key>\n<arg_value>/</arg_value>\n</tool_call>\n```",
        ]);
        assert_eq!(calls("<tool_call>now</tool_call>"), one("now", json!({})), "a declared tool's name alone is a call");
    }
}
