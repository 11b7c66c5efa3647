//! Kimi K2: `<|tool_calls_section_begin|>`, then for each call
//! `<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{…}<|tool_call_end|>`,
//! then `<|tool_calls_section_end|>`. The `functions.NAME:IDX` string is
//! the call's id, which the result must answer; some outputs leave out the
//! `functions.` part, or the section tokens' `s`.

use super::super::ParsedCall;
use super::super::json_call;
use super::super::lenient_json;
use super::super::scan::{Collector, Forward};
use super::section::{self, CallTokenSearch, CallTokens};
use super::{Scope, markup_name};
use serde_json::Map;

/// Opens the calls.
pub(crate) use crate::section_tokens::KIMI_SECTION_BEGIN as SECTION_BEGIN;
/// Closes them.
pub(crate) const SECTION_END: &str = "<|tool_calls_section_end|>";
/// The section tokens as some outputs write them, without the `s`.
pub(crate) use crate::section_tokens::KIMI_SECTION_BEGIN_SINGULAR as SECTION_BEGIN_SINGULAR;
const SECTION_END_SINGULAR: &str = "<|tool_call_section_end|>";
/// Opens one call.
pub(crate) use crate::section_tokens::KIMI_CALL_BEGIN as CALL_BEGIN;
/// Between a call's id and its arguments.
pub(crate) const ARGUMENT_BEGIN: &str = "<|tool_call_argument_begin|>";
/// Closes one call.
pub(crate) const CALL_END: &str = "<|tool_call_end|>";
/// Every marker this module reads.
pub(crate) const MARKERS: [&str; 7] =
    [SECTION_BEGIN, SECTION_END, SECTION_BEGIN_SINGULAR, SECTION_END_SINGULAR, CALL_BEGIN, ARGUMENT_BEGIN, CALL_END];
/// The namespace K2 writes before a tool's name in a call's id.
const NAMESPACE: &str = "functions.";

/// Reads Kimi's tokens where the chat-token scan finds them.
pub(super) struct Reader<'a> {
    tokens: CallTokenSearch<'a>,
    /// What ends a call whose closing token is left out: the next call,
    /// or a section's end (either spelling).
    boundaries: [Forward<'a>; 3],
}

impl<'a> Reader<'a> {
    pub(super) fn new(reply: &'a str) -> Self {
        Reader {
            tokens: CallTokenSearch::new(reply, ARGUMENT_BEGIN, CALL_END),
            boundaries: [CALL_BEGIN, SECTION_END, SECTION_END_SINGULAR].map(|token| Forward::new(reply, token)),
        }
    }

    /// The section or lone call at `found`, if a Kimi token stands there:
    /// where reading it stopped.
    pub(super) fn read(&mut self, scope: &Scope<'_>, found: usize, out: &mut Collector<'_>) -> Option<usize> {
        let rest = &scope.reply[found..];
        if rest.starts_with(CALL_BEGIN) {
            let (call, end) = self.call(scope, found, out);
            out.calls(found..end, call.into_iter().collect());
            return Some(end);
        }
        let begin = [SECTION_BEGIN, SECTION_BEGIN_SINGULAR].into_iter().find(|token| rest.starts_with(token))?;
        Some(section::read(scope, found, found + begin.len(), self, out))
    }
}

impl CallTokens for Reader<'_> {
    fn section_end(&self, rest: &str) -> Option<usize> {
        [SECTION_END, SECTION_END_SINGULAR].into_iter().find(|token| rest.starts_with(token)).map(str::len)
    }

    fn opens_call(&self, rest: &str) -> bool {
        rest.starts_with(CALL_BEGIN)
    }

    /// The call whose `<|tool_call_begin|>` is at `at`, if it is one, and
    /// where reading it stopped. Its `<|tool_call_end|>` may be left out
    /// (llama.cpp reads such replies of Kimi K2): it then runs to the next
    /// call, the section's end or the reply's end, if its arguments are one
    /// whole JSON object.
    fn call(&mut self, scope: &Scope<'_>, at: usize, out: &mut Collector<'_>) -> (Option<ParsedCall>, usize) {
        let reply = scope.reply;
        let id_at = at + CALL_BEGIN.len();
        let boundary = self.boundaries.iter_mut().filter_map(|tokens| tokens.next(id_at)).min().unwrap_or(scope.turn_end());
        let whole = |separator: usize, end: usize| whole_object(&reply[separator + ARGUMENT_BEGIN.len()..end]);
        let (arguments_at, end, closed) = match self.tokens.find_within(at, id_at, boundary, whole, out) {
            Ok(found) => found,
            Err(stopped) => return (None, stopped),
        };
        let after = if closed { end + CALL_END.len() } else { end };
        let id = reply[id_at..arguments_at].trim();
        let Some(name) = name_of(id) else {
            out.warn(id_at, format!("`{id}` is not a call id of the form functions.NAME:INDEX; it is not a call"));
            return (None, after);
        };
        if !scope.markup_calls(at, name) {
            return (None, after);
        }
        let text = reply[arguments_at + ARGUMENT_BEGIN.len()..end].trim();
        let arguments = match text {
            "" => Map::new(),
            text => match lenient_json::parse(text).ok().and_then(|(value, _)| json_call::arguments_of(value, arguments_at, out))
            {
                Some(arguments) => arguments,
                None => {
                    out.warn(arguments_at, format!("the arguments of `{id}` are not a JSON object; it is not a call"));
                    return (None, after);
                }
            },
        };
        let call =
            ParsedCall { id: Some(id.to_owned()), name: name.to_owned(), arguments, reserved: Map::new(), span: at..after };
        (Some(call), after)
    }
}

/// Whether `text` is one JSON object and nothing more, as written: no
/// bracket left out.
fn whole_object(text: &str) -> bool {
    matches!(lenient_json::parse_prefix(text), Ok((serde_json::Value::Object(_), used, repairs)) if repairs.is_empty() && text[used..].trim().is_empty())
}

/// The tool's name in a call id `functions.NAME:INDEX` (or `NAME:INDEX`).
fn name_of(id: &str) -> Option<&str> {
    let (name, index) = id.rsplit_once(':')?;
    let name = name.strip_prefix(NAMESPACE).unwrap_or(name);
    (!index.is_empty() && index.bytes().all(|b| b.is_ascii_digit())).then_some(())?;
    markup_name(name)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, checked, no_calls, parse, warnings};
    use serde_json::{Value, json};

    const TWO_CALLS: &str = "I'll help you check the weather. <|tool_calls_section_begin|> <|tool_call_begin|>\nfunctions.get_weather:0 <|tool_call_argument_begin|> {\"city\": \"Beijing\"} <|tool_call_end|> <|tool_call_begin|>\nfunctions.now:1 <|tool_call_argument_begin|> {} <|tool_call_end|> <|tool_calls_section_end|>";

    fn ids(reply: &str) -> Vec<Option<String>> {
        parse(reply).calls.into_iter().map(|c| c.id).collect()
    }

    #[test]
    fn kimi_calls_keep_their_ids() {
        assert_eq!(calls(TWO_CALLS), vec![("get_weather".into(), json!({"city": "Beijing"})), ("now".into(), json!({}))]);
        assert_eq!(ids(TWO_CALLS), [Some("functions.get_weather:0".into()), Some("functions.now:1".into())]);
        let parsed = parse(TWO_CALLS);
        assert_eq!(parsed.content, "I'll help you check the weather.");
        assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
        let tool_calls = crate::call::ToolCall::from_reply(TWO_CALLS, &parsed.calls);
        assert_eq!(tool_calls[0].id, "functions.get_weather:0", "the id the result answers");
        assert!(tool_calls[1].raw.starts_with("<|tool_call_begin|>\nfunctions.now:1"), "{}", tool_calls[1].raw);
    }

    #[test]
    fn a_kimi_call_without_its_end_token_runs_to_the_next() {
        // llama.cpp's test-chat.cpp ("real life" execute_command, and calls
        // in thinking without section or end tokens); dynamo's test of a
        // middle call missing its end.
        let bare = "<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\", \"days\": 10}";
        assert_eq!(calls(bare), vec![("get_weather".into(), json!({"city": "Paris", "days": 10}))]);
        assert_eq!(parse(bare).content, "");
        let thinking = "<think>I need two<|tool_call_begin|>functions.now:0<|tool_call_argument_begin|>{\"zone\": 1}<|tool_call_begin|>functions.calculate:1<|tool_call_argument_begin|>{\"code\": \"print('hey')\"}";
        assert_eq!(
            calls(thinking),
            vec![("now".into(), json!({"zone": 1})), ("calculate".into(), json!({"code": "print('hey')"}))]
        );
        // A token quoted in a value of a closed call is the value's.
        let quoted = "<|tool_calls_section_begin|><|tool_call_begin|>functions.calculate:0<|tool_call_argument_begin|>{\"code\": \"Kimi emits <|tool_call_begin|> before each call\"}<|tool_call_end|><|tool_calls_section_end|>";
        assert_eq!(calls(quoted), vec![("calculate".into(), json!({"code": "Kimi emits <|tool_call_begin|> before each call"}))]);
        let middle = "<|tool_calls_section_begin|><|tool_call_begin|>functions.now:0<|tool_call_argument_begin|>{\"x\":\"1\"}<|tool_call_end|><|tool_call_begin|>functions.get_weather:1<|tool_call_argument_begin|>{\"y\":\"2\"}<|tool_call_begin|>functions.calculate:2<|tool_call_argument_begin|>{\"z\":\"3\"}<|tool_call_end|><|tool_calls_section_end|>";
        assert_eq!(
            ids(middle),
            [Some("functions.now:0".into()), Some("functions.get_weather:1".into()), Some("functions.calculate:2".into())]
        );
        assert_eq!(parse(middle).content, "");
        let turn_ended = format!("{bare}<|im_end|>");
        assert_eq!(calls(&turn_ended).len(), 1, "before the tokens that end the turn");
        // Cut off inside its arguments: no call.
        let cut = "<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Par";
        assert_eq!(calls(cut), vec![]);
        assert_eq!(warnings(cut), ["a call is cut off before its <|tool_call_end|>; it is not a call"]);
    }

    #[test]
    fn kimi_arguments_encoded_twice_are_decoded() {
        // MoonshotAI/Kimi-K2 issue 26: the arguments as a JSON string.
        let reply = "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:1<|tool_call_argument_begin|>\"{\\\"city\\\": \\\"Paris\\\"}\"<|tool_call_end|><|tool_calls_section_end|>";
        assert_eq!(calls(reply), vec![("get_weather".into(), json!({"city": "Paris"}))]);
        assert_eq!(parse(reply).warnings.len(), 1, "the repair is reported");
        let deepseek = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n\"{\\\"city\\\": \\\"Paris\\\"}\"\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
        assert_eq!(calls(deepseek), vec![("get_weather".into(), json!({"city": "Paris"}))]);
        let not_json = "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:1<|tool_call_argument_begin|>\"Paris\"<|tool_call_end|><|tool_calls_section_end|>";
        assert_eq!(calls(not_json), vec![]);
    }

    #[test]
    fn kimi_calls_after_a_think_that_is_never_closed() {
        let reply = "<think>The user wants the weather, so I call the tool.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Oslo\"}<|tool_call_end|><|tool_calls_section_end|>";
        assert_eq!(calls(reply), vec![("get_weather".into(), json!({"city": "Oslo"}))], "the section ends the thinking");
        assert_eq!(parse(reply).content, "<think>The user wants the weather, so I call the tool.");
        // Its call token alone, the section left out, ends it too.
        let no_section = "<think>Need the weather. <|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|>";
        assert_eq!(calls(no_section), vec![("get_weather".into(), json!({"city": "Paris"}))], "{no_section}");
        let example = "<think>I could write <tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call> but no tool is needed.";
        assert_eq!(calls(example), vec![], "markup that is no special token stays reasoning");
    }

    #[test]
    fn kimi_one_call_after_reasoning_and_compact_forms() {
        let reply = "<think>Need the weather.</think><|tool_calls_section_begin|><|tool_call_begin|>get_weather:3<|tool_call_argument_begin|>{\n  \"city\": \"Oslo\"\n}<|tool_call_end|><|tool_calls_section_end|>";
        assert_eq!(calls(reply), vec![("get_weather".into(), json!({"city": "Oslo"}))]);
        assert_eq!(ids(reply), [Some("get_weather:3".into())], "the id as written");
        assert_eq!(parse(reply).content, "<think>Need the weather.</think>");
        let singular = "<|tool_call_section_begin|><|tool_call_begin|>functions.now:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_call_section_end|>";
        assert_eq!(calls(singular), vec![("now".into(), json!({}))]);
        let no_section_end =
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.now:0<|tool_call_argument_begin|>{}<|tool_call_end|>";
        assert_eq!(calls(no_section_end).len(), 1, "the section's end may be the stop token");
        assert_eq!(parse(no_section_end).content, "");
    }

    #[test]
    fn kimi_arguments_are_json_and_typed_by_the_declaration() {
        let reply = "<|tool_calls_section_begin|><|tool_call_begin|>functions.forecast:0<|tool_call_argument_begin|>{\"city\": \"Lima\", \"days\": \"2\", \"metric\": true, \"options\": {\"html\": \"<div>x</div>\"}}<|tool_call_end|><|tool_calls_section_end|>";
        assert_eq!(
            Value::Object(checked(reply)),
            json!({"city": "Lima", "days": 2, "metric": true, "options": {"html": "<div>x</div>"}})
        );
    }

    #[test]
    fn a_broken_or_cut_off_kimi_call_is_a_warning_not_a_call() {
        let broken = "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather.0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|><|tool_call_begin|>functions.now:1<|tool_call_argument_begin|>{\"zone\": <|tool_call_end|><|tool_calls_section_end|>";
        assert_eq!(calls(broken), vec![]);
        assert_eq!(
            warnings(broken),
            [
                "`functions.get_weather.0` is not a call id of the form functions.NAME:INDEX; it is not a call",
                "the arguments of `functions.now:1` are not a JSON object; it is not a call",
            ]
        );
        assert_eq!(parse(broken).content, "", "the section's tokens are no prose");
        let cut = &TWO_CALLS[..TWO_CALLS.len() - " {} <|tool_call_end|> <|tool_calls_section_end|>".len()];
        assert_eq!(calls(cut), vec![("get_weather".into(), json!({"city": "Beijing"}))], "only the complete call");
        assert_eq!(warnings(cut), ["a call is cut off before its <|tool_call_end|>; it is not a call"]);
    }

    #[test]
    fn kimi_tokens_in_prose_or_code_are_not_calls() {
        no_calls(&[
            "K2 wraps calls in <|tool_calls_section_begin|> and <|tool_calls_section_end|>.",
            "Each starts with `<|tool_call_begin|>functions.delete_all:0<|tool_call_argument_begin|>{}<|tool_call_end|>`.",
            "`<|tool_call_begin|>functions.now:0<|tool_call_argument_begin|>{}<|tool_call_end|>`",
            "<think><|tool_call_begin|>functions.now:0<|tool_call_argument_begin|>{}<|tool_call_end|></think>",
        ]);
    }
}
