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
use super::super::markup_value;
use super::super::scan::{Collector, Forward, find};
use super::attribute::attribute;
use super::section::{self, CallTokens};
use super::{Scope, attribute_name, starts_apart};
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
/// The answer's tokens, and the stop token that ends the message.
const RESPONSE: [&str; 3] = ["<|open|>response<|sep|>", "<|close|>response<|sep|>", "<|close|>message<|sep|>"];
/// Opens a call, up to its attributes.
const CALL_OPEN: &str = "<|open|>call ";
/// Closes a call.
const CALL_CLOSE: &str = "<|close|>call<|sep|>";
/// Opens an argument, up to its attributes.
const ARGUMENT_OPEN: &str = "<|open|>argument ";
/// Closes an argument.
const ARGUMENT_CLOSE: &str = "<|close|>argument<|sep|>";
/// Opens the arguments written as one JSON object
/// (`<|open|>json type="object"<|sep|>{…}`), up to its attributes.
const JSON_OPEN: &str = "<|open|>json ";
/// Closes them.
const JSON_CLOSE: &str = "<|close|>json<|sep|>";
/// Every marker this module reads.
pub(crate) const MARKERS: [&str; 3] = [OPEN, CLOSE, SEP];
/// How far a header's attributes are looked for their `<|sep|>`.
const MAX_HEADER: usize = 512;

/// Reads K3's channels where the chat-token scan finds them.
pub(super) struct Reader<'a> {
    argument_close: Forward<'a>,
    json_close: Forward<'a>,
}

impl<'a> Reader<'a> {
    pub(super) fn new(reply: &'a str) -> Self {
        Reader { argument_close: Forward::new(reply, ARGUMENT_CLOSE), json_close: Forward::new(reply, JSON_CLOSE) }
    }

    /// The tools channel or response token at `found`, if one stands
    /// there, or calls without their channel standing apart from the
    /// prose (a server that skips special tokens may drop the channel's):
    /// where reading stopped.
    pub(super) fn read(&mut self, scope: &Scope<'_>, found: usize, out: &mut Collector<'_>) -> Option<usize> {
        let rest = &scope.reply[found..];
        if let Some(token) = RESPONSE.into_iter().find(|token| rest.starts_with(token)) {
            if scope.markup_trust(found).is_some() {
                out.markup(found..found + token.len());
            }
            return Some(found + token.len());
        }
        if rest.starts_with(CALL_OPEN) {
            let apart = starts_apart(scope.reply, found) && scope.markup_trust(found).is_some();
            let stopped = if apart { section::read_bare(scope, found, found, self, out) } else { found };
            return Some(stopped.max(found + CALL_OPEN.len()));
        }
        rest.starts_with(TOOLS_OPEN).then_some(())?;
        let after = found + TOOLS_OPEN.len();
        if scope.markup_trust(found).is_none() {
            return Some(after);
        }
        Some(section::read(scope, found, after, self, out))
    }

    /// The arguments written as one JSON object in the block at `at`, and
    /// where the block ends; else what is wrong.
    fn json_arguments(&mut self, reply: &str, at: usize) -> Result<(Map<String, Value>, usize), &'static str> {
        let (_, body) = header(reply, at + JSON_OPEN.len()).ok_or("a JSON block's header has no <|sep|>")?;
        let close = self.json_close.next(body).ok_or("a JSON block is not closed")?;
        match lenient_json::parse(reply[body..close].trim()) {
            Ok((Value::Object(object), _)) => Ok((object, close + JSON_CLOSE.len())),
            _ => Err("the JSON block is not a JSON object"),
        }
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
            if rest.starts_with(JSON_OPEN) {
                match self.json_arguments(reply, p) {
                    Ok((object, end)) => {
                        arguments.extend(object);
                        p = end;
                        continue;
                    }
                    Err(what) => return cut_off_or(reply, at, out, &format!("{what} in the call to `{name}`")),
                }
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
                Some(_) => markup_value::tagged_json(raw),
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

/// Past the call at `at`: after its closing token, or the reply's end.
fn skip_call(reply: &str, at: usize) -> (Option<ParsedCall>, usize) {
    (None, find(reply, at, CALL_CLOSE).map_or(reply.len(), |close| close + CALL_CLOSE.len()))
}

/// A call that cannot be read, warned of: where reading stopped.
fn cut_off_or(reply: &str, at: usize, out: &mut Collector<'_>, what: &str) -> (Option<ParsedCall>, usize) {
    (None, section::unreadable(reply, at, CALL_CLOSE, what, out))
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
    fn kimi_k3_think_channel_json_block_and_calls_without_their_channel() {
        // Shaped like public K3 tests: a renderer's
        // `test_parser_marks_malformed_tool_calls` and
        // `test_required_tool_call_uses_xtml_constraint_and_http_response`
        // (a reply opening with the prompt-opened think's close, a
        // `<|open|>json type="object"` block for the arguments, the
        // `<|close|>message<|sep|>` stop token), and a `kimi_k3` tool
        // parser's `test_kimi_k3_xtml_reasoning_response_and_tools` (the
        // think channel before the response).
        let thought = format!(
            "<|open|>think<|sep|>The weather.<|close|>think<|sep|><|open|>response<|sep|>On it.<|close|>response<|sep|>{TWO_CALLS}<|close|>message<|sep|>"
        );
        assert_eq!(calls(&thought), both());
        assert_eq!(parse(&thought).content, "<|open|>think<|sep|>The weather.<|close|>think<|sep|>On it.");
        let json = "<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|><|open|>json type=\"object\"<|sep|>{\"city\":\"杭州\"}<|close|>json<|sep|><|close|>call<|sep|><|close|>tools<|sep|>";
        assert_eq!(calls(json), one("get_weather", json!({"city": "杭州"})));
        let broken = json.replace("{\"city\":\"杭州\"}", "{broken");
        assert_eq!(calls(&broken), vec![], "a JSON block that is no object");
        let in_thought = "<|open|>think<|sep|><|open|>tools<|sep|><|open|>call tool=\"now\" index=\"1\"<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>think<|sep|>";
        assert_eq!(calls(in_thought), vec![], "a call in the think channel is reasoning");
        // The channel's tokens dropped: the calls stand on their own line.
        let bare = "Sure, one moment.\n<|open|>call tool=\"get_weather\" index=\"1\"<|sep|><|open|>argument key=\"city\" type=\"string\"<|sep|>Paris<|close|>argument<|sep|><|close|>call<|sep|>\n<|open|>call tool=\"now\" index=\"2\"<|sep|><|close|>call<|sep|>";
        assert_eq!(calls(bare), both());
        assert_eq!(parse(bare).content, "Sure, one moment.");
        no_calls(&[
            "Write <|open|>call tool=\"now\" index=\"1\"<|sep|><|close|>call<|sep|> to call it.",
            "<|open|>call tool=\"now\" index=\"1\"<|sep|><|close|>call<|sep|> is a call's shape.",
        ]);
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
