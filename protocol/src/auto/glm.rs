//! GLM-4.5, 4.6 and 4.7: `<tool_call>NAME` and, for each argument,
//! `<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>`, then
//! `</tool_call>` (4.5 and 4.6 put line breaks between them, 4.7 does not).
//! Tencent's Hunyuan (HY) V3 writes the same calls with `<tool_sep>` after
//! the name, inside `<tool_calls>…</tool_calls>` (left out of the content),
//! and its shipped tokenizer every one of those tokens with a suffix,
//! `<tool_call:opensource>` ([`HY3`], read by [`envelope`](super::envelope));
//! Meituan's LongCat with `longcat_` tags ([`LONGCAT`]); K2 Horizon with
//! `ifm|` tags and a value's type between its key and its value ([`IFM`]).
//!
//! The template writes a string value as it is and any other value as JSON;
//! the value is typed here as the engines type it without a schema
//! ([`markup_value`](super::super::markup_value)), and the check step types
//! it by the declaration (so `{"a": 1}` is an object for a json parameter
//! and its text for a string one).

use super::super::ParsedCall;
use super::super::markup_value;
use super::super::scan::{Collector, find};
use super::super::xml_tag;
use super::{Scope, attribute_name, markup_name};
use serde_json::Map;
use std::ops::Range;

/// The tags around an argument's key and its value, open and close, the
/// separator that may follow the tool's name, and the tags around the type
/// a family may write between key and value (empty when none).
pub(crate) struct ArgTags {
    pub(crate) key: (&'static str, &'static str),
    pub(crate) value: (&'static str, &'static str),
    pub(crate) sep: &'static str,
    pub(crate) kind: (&'static str, &'static str),
}

/// No tags around a type.
const NO_KIND: (&str, &str) = ("", "");

/// Between Hunyuan's name and arguments.
pub(crate) const TOOL_SEP: &str = "<tool_sep>";
/// GLM's (and Hunyuan's) argument tags.
pub(crate) const GLM: ArgTags =
    ArgTags { key: ("<arg_key>", "</arg_key>"), value: ("<arg_value>", "</arg_value>"), sep: TOOL_SEP, kind: NO_KIND };
/// LongCat's, in `<longcat_tool_call>` ([`envelope`](super::envelope)).
pub(crate) const LONGCAT: ArgTags = ArgTags {
    key: ("<longcat_arg_key>", "</longcat_arg_key>"),
    value: ("<longcat_arg_value>", "</longcat_arg_value>"),
    sep: TOOL_SEP,
    kind: NO_KIND,
};
/// Hunyuan V3's as its shipped tokenizer writes them, each token with the
/// `:opensource` suffix (the same tokens without it are not in its vocabulary).
pub(crate) const HY3: ArgTags = ArgTags {
    key: ("<arg_key:opensource>", "</arg_key:opensource>"),
    value: ("<arg_value:opensource>", "</arg_value:opensource>"),
    sep: "<tool_sep:opensource>",
    kind: NO_KIND,
};
/// K2 Horizon's, in `<ifm|tool_call>` elements ([`envelope`](super::envelope)),
/// a value's type tagged between its key and its value (read by the check
/// step from the declaration instead).
pub(crate) const IFM: ArgTags = ArgTags {
    key: ("<ifm|arg_key>", "</ifm|arg_key>"),
    value: ("<ifm|arg_value>", "</ifm|arg_value>"),
    sep: "<ifm|tool_sep>",
    kind: ("<ifm|arg_type>", "</ifm|arg_type>"),
};
/// Every marker this module reads (besides `<tool_call>`).
pub(crate) const MARKERS: [&str; 20] = [
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
    IFM.key.0,
    IFM.key.1,
    IFM.value.0,
    IFM.value.1,
    IFM.kind.0,
    IFM.kind.1,
];

/// Whether the `<tool_call>` body `text` starts like a GLM call: a tool's
/// name, then an argument, a line break or nothing (or one of the slips
/// [`read`] forgives).
pub(super) fn opens_call(text: &str, tags: &ArgTags) -> bool {
    let name_end = text.find(['\n', '<']).unwrap_or(text.len());
    let rest = text[name_end..].trim_start();
    let rest = rest.strip_prefix(tags.sep).unwrap_or(rest).trim_start();
    let head = &text[..name_end];
    if rest.starts_with(tags.key.1) {
        return head.split(' ').next().and_then(markup_name).is_some();
    }
    let arguments_follow = rest.starts_with(tags.key.0);
    let named = markup_name(head).is_some() || (arguments_follow && attribute_name(head).is_some());
    named && (rest.is_empty() || arguments_follow || rest.starts_with(tags.value.1))
}

/// The tool's name in `head`: a name, or words a declared tool's name is
/// written as (Poolside's `get weather`, vLLM reads it so), when arguments
/// follow, so that prose in the tag is never a name.
fn call_name<'a>(head: &'a str, arguments_follow: bool, scope: &Scope<'_>) -> Option<&'a str> {
    markup_name(head).or_else(|| attribute_name(head).filter(|name| arguments_follow && scope.declared.meant(name).is_some()))
}

/// Laguna's `<user>` element, written at times in place of `<tool_call>`
/// around a GLM call (Ollama's Laguna parser reads it so).
const USER_ALIAS: (&str, &str) = ("<user>", "</user>");

/// Every closed `<user>` element holding a GLM call with arguments to a
/// declared tool: a `<user>` tag is otherwise prose (a role quoted in a
/// transcript), so nothing less is a call.
pub(super) fn scan_user_alias(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let reply = scope.reply;
    for element in xml_tag::elements(&scope.markers, &scope.reasoning, USER_ALIAS) {
        let Some(end) = element.end else { continue };
        let body = &reply[element.body.clone()];
        let text = body.trim_start();
        let name_end = text.find(['\n', '<']).unwrap_or(text.len());
        let declared = |name: &str| scope.declared.contains(name) || scope.declared.meant(name).is_some();
        let arguments_follow = text[name_end..].trim_start().starts_with(GLM.key.0);
        if !(arguments_follow && attribute_name(&text[..name_end]).is_some_and(declared)) {
            continue;
        }
        let text_at = element.body.start + (body.len() - text.len());
        read(scope, text_at, element.body.end, element.open..end, &GLM, out);
    }
}

/// The GLM call in the `<tool_call>` body `at..end`; the call spans `span`.
/// A name alone is a call only for a declared tool: prose such as "wrap it
/// in <tool_call>search</tool_call>" names a tool without calling it.
///
/// GLM-4.7 and 5 slip at times, and the slips are forgiven as the engines'
/// fixes forgive them: the first `<arg_key>` left out, its key glued to
/// the tool's name (`run_shellcommand</arg_key>`, read when a declared
/// tool's name starts it, or after a space); an `<arg_value>` left out
/// before its text; a tag written twice; a stray closing tag after the name
/// (`now</arg_value>`).
pub(super) fn read(scope: &Scope<'_>, at: usize, end: usize, span: Range<usize>, tags: &ArgTags, out: &mut Collector<'_>) {
    let body = &scope.reply[..end];
    let name_end = body[at..].find(['\n', '<']).map_or(end, |i| at + i);
    let head = &body[at..name_end];
    let mut p = name_end + (body[name_end..].len() - body[name_end..].trim_start().len());
    let glued = body[p..].starts_with(tags.key.1).then(|| glued_key(head, scope)).flatten();
    let arguments_follow = body[p..].starts_with(tags.key.0);
    let Some(name) = glued.map(|(name, _)| name).or_else(|| call_name(head, arguments_follow, scope)) else { return };
    if !scope.markup_calls(span.start, name) {
        return;
    }
    let mut arguments = Map::new();
    if let Some((_, key)) = glued {
        p += tags.key.1.len();
        match value(body, p, name, key, tags) {
            Ok((value, after)) => {
                arguments.insert(key.to_owned(), value);
                p = after;
            }
            Err(what) => return out.warn(p, what),
        }
    } else if body[p..].starts_with(tags.sep) {
        p += tags.sep.len();
    }
    loop {
        p += body[p..].len() - body[p..].trim_start().len();
        if p >= end {
            break;
        }
        if let Some(stray) = [tags.key.1, tags.value.1].into_iter().find(|tag| body[p..].starts_with(tag)) {
            p += stray.len();
            continue;
        }
        let key = element(body, p, tags.key);
        let Ok((key, after_key)) = key else {
            out.warn(p, format!("{} in the call to `{name}`; it is not a call", key.unwrap_err()));
            return;
        };
        match value(body, after_key, name, key.trim(), tags) {
            Ok((value, after)) => {
                arguments.insert(key.trim().to_owned(), value);
                p = after;
            }
            Err(what) => return out.warn(after_key, what),
        }
    }
    if arguments.is_empty() && !scope.declared.contains(name) {
        return;
    }
    out.call(ParsedCall { id: None, name: name.to_owned(), arguments, reserved: Map::new(), span });
}

/// The tool's name and the first key glued to it, when its `<arg_key>` was
/// left out: after a space, or after a declared tool's name.
fn glued_key<'a>(head: &'a str, scope: &Scope<'_>) -> Option<(&'a str, &'a str)> {
    let (name, key) = match head.trim().split_once(' ') {
        Some((name, key)) => (name, key.trim()),
        None => {
            let split = scope.declared.longest_prefix_of(head.trim())?.len();
            head.trim().split_at(split)
        }
    };
    Some((markup_name(name)?, markup_name(key)?))
}

/// Past every `tag` standing at `p`, one after another: a tag written
/// twice (`<arg_key><arg_key>city`) is read as once.
fn past(body: &str, mut p: usize, tag: &str) -> usize {
    while body[p..].starts_with(tag) {
        p += tag.len();
    }
    p
}

/// The value of `key` after its key's closing tag, which ends at `p`
/// (white space between them), decoded, and where it ends; or the warning
/// that says what is wrong. Its opening tag may be left out, when its
/// closing tag comes before the next key.
fn value(body: &str, p: usize, name: &str, key: &str, tags: &ArgTags) -> Result<(serde_json::Value, usize), String> {
    let mut value_at = p + (body[p..].len() - body[p..].trim_start().len());
    if !tags.kind.0.is_empty() && body[value_at..].starts_with(tags.kind.0) {
        let (_, after) = element(body, value_at, tags.kind)?;
        value_at = after + (body[after..].len() - body[after..].trim_start().len());
    }
    let (text, after) = if body[value_at..].starts_with(tags.value.0) {
        element(body, value_at, tags.value)
    } else {
        let close = find(body, value_at, tags.value.1).filter(|&c| !body[value_at..c].contains(tags.key.0));
        close.map(|c| (&body[value_at..c], past(body, c, tags.value.1))).ok_or_else(|| format!("expected {}", tags.value.0))
    }
    .map_err(|what| format!("{what} after `{key}` in the call to `{name}`; it is not a call"))?;
    Ok((markup_value::decode(text), after))
}

/// The text of the `(open, close)` element at `p` of `body` and where it
/// ends (either tag may be written twice), or what is wrong.
fn element<'a>(body: &'a str, p: usize, (open, close): (&str, &str)) -> Result<(&'a str, usize), String> {
    if !body[p..].starts_with(open) {
        return Err(format!("expected {open}"));
    }
    let text = past(body, p, open);
    let close_at = find(body, text, close).ok_or_else(|| format!("{open} is not closed by {close}"))?;
    Ok((&body[text..close_at], past(body, close_at, close)))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, checked, no_calls, one, parse, warnings};
    use serde_json::json;

    #[test]
    fn a_close_of_reasoning_in_a_value_is_the_values() {
        // No reasoning opened: the `</think>` is text the call sends (it
        // had been read as the end of reasoning the prompt opened, and the
        // call lost in it).
        for reply in [
            "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>a </think> b</arg_value>\n</tool_call>",
            "<tool_call>\n<function=get_weather>\n<parameter=city>\na </think> b\n</parameter>\n</function>\n</tool_call>",
            "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"a </think> b\"}}</tool_call>",
        ] {
            assert_eq!(calls(reply), one("get_weather", json!({"city": "a </think> b"})), "{reply}");
        }
    }

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
    fn k2_horizon_calls_in_ifm_tags() {
        // vLLM's K2 Horizon parser tests: GLM-like tags behind `ifm|`, a
        // value's type at times between its key and its value, or JSON.
        let two = "Before <ifm|tool_calls><ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key><ifm|arg_value>Paris</ifm|arg_value></ifm|tool_call>\n<ifm|tool_call>now</ifm|tool_call></ifm|tool_calls> after.";
        assert_eq!(calls(two), vec![("get_weather".into(), json!({"city": "Paris"})), ("now".into(), json!({}))]);
        assert_eq!(parse(two).content, "Before  after.");
        let typed = "<ifm|tool_calls><ifm|tool_call>forecast<ifm|arg_key>city</ifm|arg_key><ifm|arg_type>string</ifm|arg_type><ifm|arg_value>42</ifm|arg_value><ifm|arg_key>days</ifm|arg_key><ifm|arg_type>integer</ifm|arg_type><ifm|arg_value>3</ifm|arg_value></ifm|tool_call></ifm|tool_calls>";
        assert_eq!(serde_json::Value::Object(checked(typed)), json!({"city": "42", "days": 3}));
        let as_json = "<ifm|tool_calls><ifm|tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</ifm|tool_call></ifm|tool_calls>";
        assert_eq!(calls(as_json), one("get_weather", json!({"city": "Paris"})));
        assert_eq!(parse(as_json).content, "");
        no_calls(&["`<ifm|tool_calls><ifm|tool_call>now</ifm|tool_call></ifm|tool_calls>`"]);
        // Fenced, an undeclared tool's call is shown, whole.
        let shown = "```\n<ifm|tool_calls><ifm|tool_call>delete_all</ifm|tool_call></ifm|tool_calls>\n```";
        assert_eq!((calls(shown), parse(shown).content.as_str()), (vec![], shown));
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
    fn laguna_user_element_and_poolside_names_with_spaces() {
        // Ollama's Laguna parser: `<user>` in place of `<tool_call>`.
        let user = "I'll check it for you.\n<user>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</user>";
        assert_eq!(calls(user), one("get_weather", json!({"city": "Paris"})));
        assert_eq!(parse(user).content, "I'll check it for you.");
        // Else a `<user>` tag is prose: a transcript, an undeclared tool,
        // a name alone, one unclosed.
        no_calls(&[
            "<user>What is the weather?</user>",
            "<user>delete_all\n<arg_key>path</arg_key>\n<arg_value>/</arg_value>\n</user>",
            "<user>now</user>",
            "<user>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>",
        ]);
        // vLLM's Poolside parser: a declared tool's name written as words.
        let spaced = "<tool_call>  get weather  <arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>";
        assert_eq!(calls(spaced), one("get_weather", json!({"city": "Paris"})));
        assert_eq!(parse(spaced).content, "");
        no_calls(&[
            "<tool_call>delete all <arg_key>path</arg_key><arg_value>/</arg_value></tool_call>",
            "<tool_call>get weather</tool_call>",
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
    fn glm_slips_in_its_argument_tags_are_forgiven() {
        // vllm-project/vllm issue #49248 (GLM-5.2 leaves out <arg_value>).
        let no_value_open = "<tool_call>get_weather<arg_key>city</arg_key>Beijing</arg_value></tool_call>";
        assert_eq!(calls(no_value_open), one("get_weather", json!({"city": "Beijing"})));
        // vllm-project/vllm PR #47190 (the first <arg_key> left out, the key
        // glued to the name, or after a space).
        let glued = "<tool_call>calculateexpression</arg_key><arg_value>1+1</arg_value></tool_call>";
        assert_eq!(calls(glued), one("calculate", json!({"expression": "1+1"})));
        let spaced = "<tool_call>get_weather city</arg_key><arg_value>Oslo</arg_value><arg_key>days</arg_key><arg_value>2</arg_value></tool_call>";
        assert_eq!(calls(spaced), one("get_weather", json!({"city": "Oslo", "days": 2})));
        // vllm-project/vllm PR #54971 (a tag written twice).
        let twice = "<tool_call>get_weather<arg_key>city</arg_key></arg_key><arg_value>Rome</arg_value><arg_key><arg_key>days</arg_key><arg_value>3</arg_value></tool_call>";
        assert_eq!(calls(twice), one("get_weather", json!({"city": "Rome", "days": 3})));
        // fw-ai-external/python-sdk issue #119 (GLM 5.2: `</arg_value>` after
        // a name without arguments).
        assert_eq!(calls("<tool_call>now</arg_value></tool_call>"), one("now", json!({})));
        // Still no call: an undeclared glued name, a value that runs into
        // the next key, prose.
        no_calls(&[
            "<tool_call>unknowntoolcity</arg_key><arg_value>x</arg_value></tool_call>",
            "Wrap it as <tool_call>search the web</tool_call>.",
        ]);
        let runs_on =
            "<tool_call>get_weather<arg_key>city</arg_key>Oslo<arg_key>days</arg_key><arg_value>2</arg_value></tool_call>";
        assert_eq!(calls(runs_on), vec![]);
        assert_eq!(warnings(runs_on), ["expected <arg_value> after `city` in the call to `get_weather`; it is not a call"]);
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
