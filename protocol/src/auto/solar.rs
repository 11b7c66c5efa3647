//! Upstage Solar Open 2: `<|tool_call:start|>NAME`, a line break, then for
//! each argument `<|tool_arg:start|>KEY<|tool_arg:value|>VALUE<|tool_arg:end|>`,
//! and `<|tool_call:end|>`, as vLLM's `solar_open2` parser reads it. Its
//! reasoning is `<|think:start|>…<|think:end|>`. A value is text, typed as
//! other markup's values are ([`markup_value`]) and by the declaration in
//! the check step. The closing token may be left out where the reply ends
//! (the stop token can stand in its place).

use super::super::ParsedCall;
use super::super::markup_value;
use super::super::scan::{Collector, Forward};
use super::{Scope, markup_name};
use serde_json::Map;

/// Opens and closes a call.
pub(crate) const CALL: (&str, &str) = (crate::section_tokens::SOLAR_CALL_START, "<|tool_call:end|>");
/// Opens an argument, before its key.
const ARG_START: &str = "<|tool_arg:start|>";
/// Between an argument's key and its value.
const ARG_VALUE: &str = "<|tool_arg:value|>";
/// Ends an argument.
const ARG_END: &str = "<|tool_arg:end|>";
/// Every marker this module reads.
pub(crate) const MARKERS: [&str; 5] = [CALL.0, CALL.1, ARG_START, ARG_VALUE, ARG_END];

/// Reads the calls of a reply; each token is searched for once past each
/// place, so the time stays linear.
pub(super) struct Reader<'a> {
    opens: Forward<'a>,
    closes: Forward<'a>,
}

impl<'a> Reader<'a> {
    pub(super) fn new(reply: &'a str) -> Self {
        Reader { opens: Forward::new(reply, CALL.0), closes: Forward::new(reply, CALL.1) }
    }

    /// The call opened at `found`, outside reasoning: collected if it is
    /// one, and where reading stopped.
    pub(super) fn read(&mut self, scope: &Scope<'_>, found: usize, out: &mut Collector<'_>) -> usize {
        let reply = scope.reply;
        let body = found + CALL.0.len();
        if scope.markup_trust(found).is_none() {
            return body;
        }
        // A call opened again before any close (a retry) ends this one.
        let next_open = self.opens.next(body);
        let close = self.closes.next(body).filter(|&close| next_open.is_none_or(|open| close < open));
        let body_end = close.or(next_open).unwrap_or(reply.len());
        let end = close.map_or(body_end, |close| close + CALL.1.len());
        let text = &reply[body..body_end];
        let name_len = text.find(['\n', '<']).unwrap_or(text.len());
        let Some(name) = markup_name(&text[..name_len]) else {
            out.warn(found, format!("{} is not followed by a tool's name; it is not a call", CALL.0));
            return body;
        };
        let arguments = match arguments(reply, body + name_len, body_end) {
            Ok(arguments) => arguments,
            Err(at) => {
                out.warn(
                    at,
                    format!("the arguments of `{name}` are not {ARG_START}KEY{ARG_VALUE}VALUE{ARG_END}; it is not a call"),
                );
                return end;
            }
        };
        // Opened again before its close: a retry of a call cut off, unless
        // this one is whole and the next one says something else (its
        // close left out).
        if let Some(next) = next_open.filter(|_| close.is_none()) {
            let whole = reply[body..next].trim_end().ends_with(ARG_END) || arguments.is_empty();
            if !whole || self.repeated(reply, next, name, &arguments) {
                out.warn(found, format!("the call to `{name}` is opened again before its {}; it is not a call", CALL.1));
                return body_end;
            }
        }
        if scope.markup_calls(found, name) {
            out.call(ParsedCall { id: None, name: name.to_owned(), arguments, reserved: Map::new(), span: found..end });
        }
        end
    }
}

impl Reader<'_> {
    /// Whether the call opened at `next` names `name` with `arguments`.
    fn repeated(&mut self, reply: &str, next: usize, name: &str, arguments: &Map<String, serde_json::Value>) -> bool {
        let body = next + CALL.0.len();
        let end = [self.closes.next(body), self.opens.next(body)].into_iter().flatten().min().unwrap_or(reply.len());
        let text = &reply[body..end];
        let name_len = text.find(['\n', '<']).unwrap_or(text.len());
        markup_name(&text[..name_len]) == Some(name)
            && self::arguments(reply, body + name_len, end).is_ok_and(|next| next == *arguments)
    }
}

/// The arguments from `at` to `end`: nothing but whole arguments apart by
/// white space; else where reading stopped.
fn arguments(reply: &str, mut at: usize, end: usize) -> Result<Map<String, serde_json::Value>, usize> {
    let within = &reply[..end];
    let mut arguments = Map::new();
    loop {
        at = end - within[at..].trim_start().len();
        if at == end {
            return Ok(arguments);
        }
        let key_at = within[at..].strip_prefix(ARG_START).map(|_| at + ARG_START.len()).ok_or(at)?;
        let value_at = within[key_at..].find(ARG_VALUE).map(|i| key_at + i).ok_or(key_at)?;
        let value_end = within[value_at..].find(ARG_END).map(|i| value_at + i).ok_or(value_at)?;
        let key = within[key_at..value_at].trim();
        let value = &within[value_at + ARG_VALUE.len()..value_end];
        if key.is_empty() || key.contains(ARG_START) || value.contains(ARG_START) {
            return Err(key_at);
        }
        arguments.insert(key.to_owned(), markup_value::decode(value));
        at = value_end + ARG_END.len();
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, checked, no_calls, one, parse, warnings};
    use serde_json::{Value, json};

    const SEOUL: &str =
        "<|tool_call:start|>get_weather\n<|tool_arg:start|>city<|tool_arg:value|>Seoul<|tool_arg:end|>\n<|tool_call:end|>";

    #[test]
    fn solar_open_2_calls_after_prose_and_after_reasoning() {
        assert_eq!(calls(SEOUL), one("get_weather", json!({"city": "Seoul"})));
        assert_eq!(parse(SEOUL).content, "");
        let two = format!("I'll check both.{SEOUL}\n{}", SEOUL.replace("Seoul", "Tokyo"));
        assert_eq!(
            calls(&two),
            vec![("get_weather".into(), json!({"city": "Seoul"})), ("get_weather".into(), json!({"city": "Tokyo"}))]
        );
        assert_eq!(parse(&two).content, "I'll check both.");
        let reasoned = format!("<|think:start|>I should use a tool<|think:end|>Sure, let me help.{SEOUL}");
        assert_eq!(calls(&reasoned), one("get_weather", json!({"city": "Seoul"})));
        assert_eq!(parse(&reasoned).content, "<|think:start|>I should use a tool<|think:end|>Sure, let me help.");
        assert_eq!(calls("<|tool_call:start|>now\n<|tool_call:end|>"), one("now", json!({})));
        let stopped = &SEOUL[..SEOUL.len() - "\n<|tool_call:end|>".len()];
        assert_eq!(calls(stopped), one("get_weather", json!({"city": "Seoul"})), "the stop token in place of the close");
        let typed = "<|tool_call:start|>forecast\n<|tool_arg:start|>days<|tool_arg:value|>3<|tool_arg:end|>\n<|tool_arg:start|>metric<|tool_arg:value|>true<|tool_arg:end|>\n<|tool_call:end|>";
        assert_eq!(Value::Object(checked(typed)), json!({"days": 3, "metric": true}));
    }

    #[test]
    fn solar_open_2_calls_cut_off_in_reasoning_or_quoted_are_not_calls() {
        let cut = "<|tool_call:start|>get_weather\n<|tool_arg:start|>city<|tool_arg:value|>Seo";
        assert_eq!(calls(cut), vec![]);
        assert_eq!(warnings(cut).len(), 1, "{:?}", warnings(cut));
        let retried = format!("<|tool_call:start|>get_weather\n<|tool_arg:start|>city{SEOUL}");
        assert_eq!(calls(&retried), one("get_weather", json!({"city": "Seoul"})), "only the retry");
        // Called before its reasoning is closed, the call ends it.
        let unclosed = format!("<|think:start|>plan {SEOUL}");
        assert_eq!(calls(&unclosed), one("get_weather", json!({"city": "Seoul"})));
        // A whole call whose close is left out, then another: both calls;
        // then the same again: only the retry.
        let no_close = &SEOUL[..SEOUL.len() - "<|tool_call:end|>".len()];
        let two = format!("{no_close}<|tool_call:start|>now\n<|tool_call:end|>");
        assert_eq!(calls(&two), vec![("get_weather".into(), json!({"city": "Seoul"})), ("now".into(), json!({}))]);
        assert_eq!(calls(&format!("{no_close}{SEOUL}")), one("get_weather", json!({"city": "Seoul"})));
        no_calls(&[
            &format!("<|think:start|>{SEOUL}<|think:end|>"),
            "Solar writes `<|tool_call:start|>now<|tool_call:end|>` to call.",
        ]);
    }
}
