//! Calls written as an element named after the tool, one child element per
//! argument, as Cline's and Roo Code's system prompts teach and models
//! trained on their traces write:
//!
//! ```text
//! <read_file>
//! <path>src/main.rs</path>
//! </read_file>
//! ```
//!
//! No family's token marks them, so such an element is a call only of a
//! declared tool, only when it holds nothing but its arguments' elements,
//! each key once, and is closed, and never in reasoning (Cline's
//! `<thinking>` too) or code. A value is its
//! text, the line break on each side left out, typed as other markup's
//! values are ([`markup_value`]).

use super::super::ParsedCall;
use super::super::json_call::Trust;
use super::super::markup_value;
use super::super::scan::{Collector, find, skip_ws};
use super::function_tag::template_value;
use super::{Scope, markup_name};
use serde_json::Map;
use std::collections::HashMap;

/// Every element named after a declared tool that holds a call. After one
/// that does not, the scan resumes where reading it stopped, and each
/// tool's closing tag is searched for once past each place, so the time
/// stays linear.
pub(super) fn scan(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let reply = scope.reply;
    let mut close_tags = CloseTags::new();
    let mut at = 0;
    while let Some(open) = scope.markers.find(at, "<") {
        at = open + 1;
        let Some((name, body)) = open_tag(reply, open).filter(|(name, _)| scope.declared.contains(name)) else { continue };
        // In code, fenced or inline, such an element is shown (HTML has a
        // `<search>` element), not called.
        if scope.reasoning.contains(open) || scope.markup_trust(open) != Some(Trust::Explicit) {
            continue;
        }
        let (close_tag, cached) = close_tags.entry(name).or_insert_with(|| (format!("</{name}>"), None));
        let close = match *cached {
            Some((asked, found)) if asked <= body && found.is_none_or(|f| f >= body) => found,
            _ => find(reply, body, close_tag),
        };
        *cached = Some((body, close));
        let Some(close) = close else { continue };
        match arguments(reply, body, close) {
            Ok(arguments) => {
                let end = close + close_tag.len();
                out.call(ParsedCall { id: None, name: name.to_owned(), arguments, reserved: Map::new(), span: open..end });
                at = end;
            }
            Err(stopped) => at = at.max(stopped),
        }
    }
}

/// Per tool, its closing tag and the last search for it: from where, and
/// where it found the tag.
type CloseTags<'a> = HashMap<&'a str, (String, Option<(usize, Option<usize>)>)>;

/// `<NAME>` at `at`: the name and where the element's body starts.
fn open_tag(reply: &str, at: usize) -> Option<(&str, usize)> {
    let rest = reply.get(at + 1..)?;
    let len = rest.bytes().take_while(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-').count();
    (rest.as_bytes().get(len) == Some(&b'>')).then_some(())?;
    Some((markup_name(&rest[..len])?, at + 1 + len + 1))
}

/// The arguments between `body` and the element's close at `close`: child
/// elements apart by white space and nothing else. On anything else, where
/// reading stopped.
fn arguments(reply: &str, body: usize, close: usize) -> Result<Map<String, serde_json::Value>, usize> {
    let mut arguments = Map::new();
    let mut at = body;
    loop {
        at = skip_ws(reply.as_bytes(), at);
        if at >= close {
            return Ok(arguments);
        }
        let (key, value) = open_tag(reply, at).filter(|&(_, value)| value <= close).ok_or(at)?;
        let key_close = format!("</{key}>");
        let value_end = find(&reply[..close], value, &key_close).ok_or(close)?;
        // A key written twice leaves its value in doubt.
        if arguments.insert(key.to_owned(), markup_value::decode(template_value(&reply[value..value_end]))).is_some() {
            return Err(close);
        }
        at = value_end + key_close.len();
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, checked, no_calls, one, parse};
    use serde_json::{Value, json};

    #[test]
    fn elements_named_after_a_declared_tool_as_cline_writes_them() {
        let reply = "I'll check the weather.\n\n<get_weather>\n<city>Paris</city>\n</get_weather>";
        assert_eq!(calls(reply), one("get_weather", json!({"city": "Paris"})));
        assert_eq!(parse(reply).content, "I'll check the weather.");
        let two = "<now>\n</now>\n<get_weather><city>\nSão Paulo\n</city></get_weather>";
        assert_eq!(calls(two), vec![("now".to_owned(), json!({})), ("get_weather".to_owned(), json!({"city": "São Paulo"}))]);
        // Markup in a value is its text, up to its own close.
        let code = "<calculate>\n<code>\nif a < b && c > d { x(\"<b>\") }\n</code>\n</calculate>";
        assert_eq!(calls(code), one("calculate", json!({"code": "if a < b && c > d { x(\"<b>\") }"})));
        let typed = "<forecast>\n<city>Rome</city>\n<days>3</days>\n<metric>true</metric>\n</forecast>";
        assert_eq!(Value::Object(checked(typed)), json!({"city": "Rome", "days": 3, "metric": true}));
    }

    #[test]
    fn other_elements_are_not_calls() {
        no_calls(&[
            // An undeclared tool, prose in the element, no close.
            "<delete_all>\n<path>/</path>\n</delete_all>",
            "<get_weather>It is sunny in <city>Paris</city>.</get_weather>",
            "<get_weather>\n<city>Paris</city>",
            "<get_weather>\n<city>Paris\n</get_weather>",
            // Quoted as code, or in reasoning.
            "Write `<get_weather><city>Paris</city></get_weather>` to call it.",
            "<think>\n<get_weather><city>Paris</city></get_weather>\n</think>",
        ]);
        no_calls(&[
            // HTML's own `<search>`-like elements shown in code, Cline's
            // reasoning, a key written twice.
            "```html\n<get_weather>\n  <form>\n    <input name=\"q\">\n  </form>\n</get_weather>\n```",
            "<thinking>\n<get_weather>\n<city>Paris</city>\n</get_weather>\n</thinking>",
            "<get_weather>\n<city>Paris</city>\n<city>Rome</city>\n</get_weather>",
        ]);
        // After one that is not a call, the next one still is.
        let after = "<get_weather>Paris?</get_weather> <get_weather><city>Paris</city></get_weather>";
        assert_eq!(calls(after), one("get_weather", json!({"city": "Paris"})));
    }
}
