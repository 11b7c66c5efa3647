//! Kimi K3's XTML channels: a reply is `<|open|>NAME<|sep|>…<|close|>NAME<|sep|>`
//! blocks, the answer in the `response` channel and the calls in the
//! `tools` channel:
//!
//! ```text
//! <|open|>tools<|sep|>
//! <|open|>call tool="NAME" index="1"<|sep|>
//! <|open|>argument key="KEY" type="string"<|sep|>VALUE<|close|>argument<|sep|>
//! <|close|>call<|sep|>
//! <|close|>tools<|sep|>
//! ```
//!
//! The model tags each value with its type: a `string` is the raw text,
//! kept exactly; any other type is JSON, decoded here (text that does not
//! parse stays text, for the check step to judge). Attribute values escape
//! `"` and `&` as `&quot;` and `&amp;`. The response channel's tokens are
//! no part of the content.

use super::super::ParsedCall;
use super::super::lenient_json;
use super::super::scan::{Collector, Forward, find};
use super::section::{self, CallTokens};
use super::{Scope, attribute_name};
use serde_json::{Map, Value};

/// Opens a block; its name and attributes follow, then [`SEP`].
pub(crate) const OPEN: &str = "<|open|>";
/// Closes a block; its name follows, then [`SEP`].
pub(crate) const CLOSE: &str = "<|close|>";
/// Ends a block's header or closing token.
pub(crate) const SEP: &str = "<|sep|>";
/// Opens the calls.
pub(crate) const TOOLS_OPEN: &str = "<|open|>tools<|sep|>";
/// Closes them.
pub(crate) const TOOLS_CLOSE: &str = "<|close|>tools<|sep|>";
/// The answer's tokens.
const RESPONSE: [&str; 2] = ["<|open|>response<|sep|>", "<|close|>response<|sep|>"];
/// Opens a call, up to its attributes.
const CALL_OPEN: &str = "<|open|>call ";
/// Closes a call.
const CALL_CLOSE: &str = "<|close|>call<|sep|>";
/// Opens an argument, up to its attributes.
const ARGUMENT_OPEN: &str = "<|open|>argument ";
/// Closes an argument.
const ARGUMENT_CLOSE: &str = "<|close|>argument<|sep|>";
/// Every marker this module reads.
pub(crate) const MARKERS: [&str; 3] = [OPEN, CLOSE, SEP];
/// How far a header's attributes are looked for their `<|sep|>`.
const MAX_HEADER: usize = 512;

/// Reads K3's channels where the chat-token scan finds them.
pub(super) struct Reader<'a> {
    argument_close: Forward<'a>,
}

impl<'a> Reader<'a> {
    pub(super) fn new(reply: &'a str) -> Self {
        Reader { argument_close: Forward::new(reply, ARGUMENT_CLOSE) }
    }

    /// The tools channel or response token at `found`, if one stands
    /// there: where reading it stopped.
    pub(super) fn read(&mut self, scope: &Scope<'_>, found: usize, out: &mut Collector<'_>) -> Option<usize> {
        let rest = &scope.reply[found..];
        if let Some(token) = RESPONSE.into_iter().find(|token| rest.starts_with(token)) {
            if scope.markup_trust(found).is_some() {
                out.markup(found..found + token.len());
            }
            return Some(found + token.len());
        }
        rest.starts_with(TOOLS_OPEN).then_some(())?;
        let after = found + TOOLS_OPEN.len();
        if scope.markup_trust(found).is_none() {
            return Some(after);
        }
        Some(section::read(scope, found, after, self, out))
    }
}

impl CallTokens for Reader<'_> {
    fn section_end(&self, rest: &str) -> Option<usize> {
        rest.starts_with(TOOLS_CLOSE).then_some(TOOLS_CLOSE.len())
    }

    fn opens_call(&self, rest: &str) -> bool {
        rest.starts_with(CALL_OPEN)
    }

    /// The call whose `<|open|>call` is at `at`, if it is one, and where
    /// reading it stopped.
    fn call(&mut self, scope: &Scope<'_>, at: usize, out: &mut Collector<'_>) -> (Option<ParsedCall>, usize) {
        let reply = scope.reply;
        let Some((attributes, mut p)) = header(reply, at + CALL_OPEN.len()) else {
            return cut_off_or(reply, at, out, "a call's header has no <|sep|>");
        };
        let tool = attribute(attributes, "tool");
        let Some(name) = tool.as_deref().and_then(attribute_name) else {
            out.warn(at, format!("`{}` is not a tool's name; it is not a call", tool.unwrap_or_default()));
            return skip_call(reply, at);
        };
        let name = name.to_owned();
        let mut arguments = Map::new();
        loop {
            p += reply[p..].len() - reply[p..].trim_start().len();
            let rest = &reply[p..];
            if rest.starts_with(CALL_CLOSE) {
                p += CALL_CLOSE.len();
                break;
            }
            let argument = rest.strip_prefix(ARGUMENT_OPEN).and_then(|_| header(reply, p + ARGUMENT_OPEN.len()));
            let Some((attributes, value_start)) = argument else {
                return cut_off_or(reply, at, out, &format!("expected an argument or {CALL_CLOSE} in the call to `{name}`"));
            };
            let Some(key) = attribute(attributes, "key") else {
                return cut_off_or(reply, at, out, &format!("an argument of `{name}` has no key"));
            };
            let Some(close) = self.argument_close.next(value_start) else {
                return cut_off_or(reply, at, out, &format!("`{key}` in the call to `{name}` is not closed"));
            };
            let raw = &reply[value_start..close];
            let value = match attribute(attributes, "type").as_deref() {
                None | Some("string") => Value::String(raw.to_owned()),
                Some(_) => lenient_json::parse(raw).map_or_else(|_| Value::String(raw.to_owned()), |(value, _)| value),
            };
            arguments.insert(key, value);
            p = close + ARGUMENT_CLOSE.len();
        }
        if !scope.markup_calls(at, &name) {
            return (None, p);
        }
        (Some(ParsedCall { id: None, name, arguments, reserved: Map::new(), span: at..p }), p)
    }
}

/// A header's attributes from `start` to its `<|sep|>`, and where its body
/// starts.
fn header(reply: &str, start: usize) -> Option<(&str, usize)> {
    let mut limit = (start + MAX_HEADER).min(reply.len());
    while !reply.is_char_boundary(limit) {
        limit -= 1;
    }
    let sep = find(&reply[..limit], start, SEP)?;
    let attributes = &reply[start..sep];
    (!attributes.contains(OPEN) && !attributes.contains(CLOSE)).then_some((attributes, sep + SEP.len()))
}

/// The value of `key="…"` among `attributes`, unescaped.
fn attribute(attributes: &str, key: &str) -> Option<String> {
    let mut rest = attributes;
    while let Some(i) = rest.find(key) {
        let before_ok = i == 0 || rest.as_bytes()[i - 1].is_ascii_whitespace();
        let after = &rest[i + key.len()..];
        if before_ok && let Some(value) = after.strip_prefix("=\"") {
            let value = &value[..value.find('"')?];
            return Some(value.replace("&quot;", "\"").replace("&amp;", "&"));
        }
        rest = after;
    }
    None
}

/// Past the call at `at`: after its closing token, or the reply's end.
fn skip_call(reply: &str, at: usize) -> (Option<ParsedCall>, usize) {
    (None, find(reply, at, CALL_CLOSE).map_or(reply.len(), |close| close + CALL_CLOSE.len()))
}

/// A call that cannot be read: cut off when the reply ends inside it, else
/// `what` is wrong; a warning either way, and where reading stopped.
fn cut_off_or(reply: &str, at: usize, out: &mut Collector<'_>, what: &str) -> (Option<ParsedCall>, usize) {
    match find(reply, at, CALL_CLOSE) {
        None => out.warn(at, format!("a call is cut off before its {CALL_CLOSE}; it is not a call")),
        Some(_) => out.warn(at, format!("{what}; it is not a call")),
    }
    skip_call(reply, at)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, checked, no_calls, one, parse, warnings};
    use serde_json::{Value, json};

    /// Two calls as K3's template writes them.
    const TWO_CALLS: &str = "<|open|>tools<|sep|>\n<|open|>call tool=\"get_weather\" index=\"1\"<|sep|>\n<|open|>argument key=\"city\" type=\"string\"<|sep|>Paris<|close|>argument<|sep|>\n<|close|>call<|sep|>\n<|open|>call tool=\"now\" index=\"2\"<|sep|>\n<|close|>call<|sep|>\n<|close|>tools<|sep|>";

    fn both() -> Vec<(String, Value)> {
        vec![("get_weather".into(), json!({"city": "Paris"})), ("now".into(), json!({}))]
    }

    #[test]
    fn kimi_k3_calls_after_the_response_and_after_reasoning() {
        assert_eq!(calls(TWO_CALLS), both());
        let parsed = parse(TWO_CALLS);
        assert_eq!((parsed.content.as_str(), parsed.warnings.len()), ("", 0), "{:?}", parsed.warnings);
        let reply = format!("<think>The weather.</think><|open|>response<|sep|>Let me check.<|close|>response<|sep|>{TWO_CALLS}");
        assert_eq!(calls(&reply), both());
        assert_eq!(parse(&reply).content, "<think>The weather.</think>Let me check.");
        let prefix_in_prompt = format!("Let me check.<|close|>response<|sep|>{TWO_CALLS}");
        assert_eq!(parse(&prefix_in_prompt).content, "Let me check.", "the prompt wrote the response's opening");
        let unclosed = &TWO_CALLS[..TWO_CALLS.len() - "<|close|>tools<|sep|>".len()];
        assert_eq!(calls(unclosed), both(), "the channel's end left out");
    }

    #[test]
    fn kimi_k3_values_are_typed_as_tagged() {
        let reply = "<|open|>tools<|sep|><|open|>call tool=\"forecast\" index=\"1\"<|sep|><|open|>argument key=\"city\" type=\"string\"<|sep|>{\"a\": 1}<|close|>argument<|sep|><|open|>argument key=\"days\" type=\"integer\"<|sep|>3<|close|>argument<|sep|><|open|>argument key=\"ratio\" type=\"number\"<|sep|>0.5<|close|>argument<|sep|><|open|>argument key=\"metric\" type=\"boolean\"<|sep|>true<|close|>argument<|sep|><|open|>argument key=\"options\" type=\"object\"<|sep|>{\"x\": null, \"y\": [1]}<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>";
        let typed = json!({"city": "{\"a\": 1}", "days": 3, "ratio": 0.5, "metric": true, "options": {"x": null, "y": [1]}});
        assert_eq!(calls(reply), one("forecast", typed.clone()));
        assert_eq!(Value::Object(checked(reply)), typed);
        let escaped = "<|open|>tools<|sep|><|open|>call tool=\"calculate\" index=\"1\"<|sep|><|open|>argument key=\"code\" type=\"string\"<|sep|> a < \"b\"\n<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>";
        assert_eq!(calls(escaped), one("calculate", json!({"code": " a < \"b\"\n"})), "text kept exactly");
    }

    #[test]
    fn a_cut_off_kimi_k3_call_is_a_warning_not_a_call() {
        let cut = &TWO_CALLS[..TWO_CALLS.len() - "<|close|>call<|sep|>\n<|close|>tools<|sep|>".len()];
        assert_eq!(calls(cut), one("get_weather", json!({"city": "Paris"})));
        assert_eq!(warnings(cut), ["a call is cut off before its <|close|>call<|sep|>; it is not a call"]);
        let mid_value = "<|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|><|open|>argument key=\"city\" type=\"string\"<|sep|>Par";
        assert_eq!(calls(mid_value), vec![]);
        assert_eq!(warnings(mid_value), ["a call is cut off before its <|close|>call<|sep|>; it is not a call"]);
    }

    #[test]
    fn kimi_k3_tokens_in_prose_or_code_are_not_calls() {
        no_calls(&[
            "K3 opens its calls with <|open|>tools<|sep|> and closes them with <|close|>tools<|sep|>.",
            "`<|open|>tools<|sep|><|open|>call tool=\"delete_all\" index=\"1\"<|sep|><|close|>call<|sep|>`",
            "<think><|open|>tools<|sep|><|open|>call tool=\"now\" index=\"1\"<|sep|><|close|>call<|sep|></think>",
        ]);
    }
}
