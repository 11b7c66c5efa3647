//! Functionary v3.2: a reply of segments, each `>>>RECIPIENT` on its own
//! line and what is sent to it. The recipient `all` is the user, so its
//! segment is prose; any other is a tool, sent a JSON object (or, for
//! `python`, raw code, which becomes `{"code": …}`). The template writes the
//! first `>>>` into the prompt, so a reply often starts directly with
//! `all\n` or `NAME\n{…}`.
//!
//! `>>>` is plain text, not a special token, so a segment is trusted as
//! markup only in a reply written in this form (one that starts with a
//! segment); elsewhere it is a call only for a declared tool, as bare JSON
//! is.

use super::super::ParsedCall;
use super::super::json_call::Trust;
use super::super::lenient_json;
use super::super::scan::{Collector, find, skip_ws};
use super::Scope;
use crate::manifest::MAX_TOOL_NAME_LEN;
use serde_json::{Map, Value};

/// Opens a segment, before its recipient.
const SEGMENT_OPEN: &str = ">>>";
/// The recipient of prose for the user.
const PROSE_RECIPIENT: &str = "all";
/// The recipient that may be sent raw code.
const CODE_RECIPIENT: &str = "python";
/// The argument raw code is passed in.
const CODE_ARGUMENT: &str = "code";

/// Every segment outside reasoning.
pub(super) fn scan(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let reply = scope.reply;
    let first = skip_ws(reply.as_bytes(), 0);
    let first = skip_ws(reply.as_bytes(), scope.reasoning.skip(first).unwrap_or(first));
    let mut reader = Reader { scope, in_form: false };
    let mut at = first;
    if let Some((name, content)) = recipient(reply, first) {
        if name == PROSE_RECIPIENT || scope.declared.contains(name) {
            reader.in_form = true;
            at = reader.segment(first, name, content, out);
        }
    } else {
        reader.in_form = header(reply, first).is_some();
    }
    while let Some(found) = scope.markers.find(at, SEGMENT_OPEN) {
        if let Some(end) = scope.reasoning.skip(found) {
            at = end;
            continue;
        }
        at = match header(reply, found) {
            Some((name, content)) => reader.segment(found, name, content, out),
            None => found + SEGMENT_OPEN.len(),
        };
    }
}

/// Reads segments.
struct Reader<'s, 'a> {
    scope: &'s Scope<'a>,
    /// Whether the reply is written in segments, which makes them markup.
    in_form: bool,
}

impl Reader<'_, '_> {
    /// The segment whose header (its `>>>`, if written, and recipient line)
    /// starts at `at`, its content at `content`: where reading stopped.
    fn segment(&mut self, at: usize, name: &str, content: usize, out: &mut Collector<'_>) -> usize {
        let reply = self.scope.reply;
        if name == PROSE_RECIPIENT {
            if self.in_form && self.scope.markup_trust(at) == Some(Trust::Explicit) {
                out.markup(at..content);
            }
            return content;
        }
        let trusted = match self.scope.markup_trust(at) {
            None => false,
            Some(Trust::Explicit) if self.in_form => true,
            Some(_) => self.scope.declared.contains(name),
        };
        if !trusted {
            return content;
        }
        let start = skip_ws(reply.as_bytes(), content);
        let (arguments, end) = if reply[start..].starts_with('{') {
            match lenient_json::parse_prefix(&reply[start..]) {
                Ok((Value::Object(arguments), used, _)) => (arguments, start + used),
                _ => {
                    out.warn(start, format!("the arguments of `{name}` are cut off or not a JSON object; it is not a call"));
                    return content;
                }
            }
        } else if name == CODE_RECIPIENT {
            let end = next_segment(reply, content).unwrap_or(reply.len());
            let code = reply[content..end].trim_end();
            (Map::from_iter([(CODE_ARGUMENT.to_owned(), Value::String(code.to_owned()))]), content + code.len())
        } else {
            out.warn(start, format!("`{name}` is sent no JSON object; it is not a call"));
            return content;
        };
        // Outside a reply in segments, a segment the prose goes on after is
        // an example in an explanation, not a call.
        let rest = reply[end..].trim_start();
        if !(self.in_form || rest.is_empty() || rest.starts_with(SEGMENT_OPEN)) {
            return end;
        }
        out.call(ParsedCall { id: None, name: name.to_owned(), arguments, reserved: Map::new(), span: at..end });
        end
    }
}

/// The recipient line at `at`: a name, then a line break; the name and
/// where the content starts.
fn recipient(reply: &str, at: usize) -> Option<(&str, usize)> {
    let bytes = reply.as_bytes();
    let length = bytes[at..]
        .iter()
        .take(MAX_TOOL_NAME_LEN + 1)
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        .count();
    let name_end = at + length;
    if length == 0 || length > MAX_TOOL_NAME_LEN {
        return None;
    }
    let line_break = match &bytes[name_end..] {
        [b'\n', ..] => 1,
        [b'\r', b'\n', ..] => 2,
        _ => return None,
    };
    Some((&reply[at..name_end], name_end + line_break))
}

/// The segment header at `at`, `>>>` and a recipient line: the recipient
/// and where the content starts. A `>>>` after `]` closes a VCP marker
/// (`<<<[TOOL_REQUEST]>>>`) instead.
fn header(reply: &str, at: usize) -> Option<(&str, usize)> {
    let after_vcp_marker = at > 0 && reply.as_bytes()[at - 1] == b']';
    if after_vcp_marker || !reply[at..].starts_with(SEGMENT_OPEN) {
        return None;
    }
    recipient(reply, at + SEGMENT_OPEN.len())
}

/// Where the next segment header stands at or after `from`.
pub(crate) fn next_segment(reply: &str, mut from: usize) -> Option<usize> {
    while let Some(found) = find(reply, from, SEGMENT_OPEN) {
        if header(reply, found).is_some() {
            return Some(found);
        }
        from = found + SEGMENT_OPEN.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, checked, no_calls, one, parse, prose, warnings};
    use serde_json::{Value, json};

    #[test]
    fn a_reply_that_starts_with_a_call() {
        assert_eq!(calls("get_weather\n{\"city\": \"Paris\"}"), one("get_weather", json!({"city": "Paris"})));
        assert_eq!(calls(">>>get_weather\n{\"city\": \"Paris\"}\n "), one("get_weather", json!({"city": "Paris"})));
        assert_eq!(parse("now\n{} \n     ").content, "");
        assert_eq!(calls("delete_all\n{}"), vec![], "an undeclared name starts no segment");
        assert_eq!(calls(">>>lookup\n{\"q\": \"x\"}"), one("lookup", json!({"q": "x"})), "after >>>, any tool");
    }

    #[test]
    fn prose_segments_then_calls() {
        let reply = "all\nHello, world!\nnono\nWhat's up?>>>get_weather\n{\"city\": \"Oslo\"}\n>>>now\n{}";
        assert_eq!(calls(reply), vec![("get_weather".into(), json!({"city": "Oslo"})), ("now".into(), json!({}))]);
        assert_eq!(parse(reply).content, "Hello, world!\nnono\nWhat's up?");
        let parsed = parse(">>>all\nHello, world!\nWhat's up?");
        assert_eq!((parsed.calls.len(), parsed.content.as_str()), (0, "Hello, world!\nWhat's up?"));
        let undeclared = "all\nLet me look.\n>>>lookup\n{\"q\": \"x\"}";
        assert_eq!(calls(undeclared), one("lookup", json!({"q": "x"})), "a reply in segments calls any tool");
    }

    #[test]
    fn calls_after_prose_and_after_reasoning() {
        let after_prose = "I'll check the weather.\n>>>get_weather\n{\"city\": \"Lima\"}";
        assert_eq!(calls(after_prose), one("get_weather", json!({"city": "Lima"})));
        assert_eq!(parse(after_prose).content, "I'll check the weather.");
        let reasoned = "<think>The user wants the time.</think>\nnow\n{\"zone\": \"UTC\"}";
        assert_eq!(calls(reasoned), one("now", json!({"zone": "UTC"})));
        assert_eq!(parse(reasoned).content, "<think>The user wants the time.</think>");
    }

    #[test]
    fn python_takes_raw_code() {
        let reply = ">>>python\n# This is a program:\nprint('hey')\n>>>all\nDone.";
        assert_eq!(calls(reply), one("python", json!({"code": "# This is a program:\nprint('hey')"})));
        assert_eq!(parse(reply).content, "Done.");
    }

    #[test]
    fn functionary_arguments_are_typed_by_the_declaration() {
        let reply = "forecast\n{\"city\": \"Rome\", \"days\": \"2\", \"ratio\": \"0.5\", \"metric\": \"no\", \"options\": \"{\\\"a\\\": [1]}\"}";
        assert_eq!(
            Value::Object(checked(reply)),
            json!({"city": "Rome", "days": 2, "ratio": 0.5, "metric": false, "options": {"a": [1]}})
        );
    }

    #[test]
    fn a_cut_off_functionary_call_is_a_warning_not_a_call() {
        let cut = "all\nChecking both.>>>now\n{}>>>get_weather\n{\"city\": \"Pa";
        assert_eq!(calls(cut), one("now", json!({})));
        assert_eq!(warnings(cut), ["the arguments of `get_weather` are cut off or not a JSON object; it is not a call"]);
        assert_eq!(calls(">>>get_weather\nParis"), vec![]);
        assert_eq!(warnings(">>>get_weather\nParis"), ["`get_weather` is sent no JSON object; it is not a call"]);
    }

    #[test]
    fn functionary_markers_in_prose_or_code_are_not_calls() {
        no_calls(&[
            "Functionary writes >>>NAME and then the JSON arguments.",
            "In the REPL:\n>>> print('hi')\nhi",
            "An example:\n>>>delete_all\n{\"path\": \"/\"}",
            "```\n>>>delete_all\n{}\n```",
            "<think>\n>>>now\n{}\n</think>",
            "all the best\n{\"a\": 1}",
        ]);
        prose(">>>> quoted three times\n>>>all\nnot a reply in segments");
        // An example in an explanation, the prose going on after it, even
        // for a declared tool (llama.cpp's functionary v3.2 template writes
        // `>>>` before each recipient; explanations quote it).
        prose("To get the time, the model writes\n>>>now\n{}\nand the server runs it.");
        prose("Here is an example:\n>>>get_weather\n{\"city\": \"Paris\"}\nThat is all it takes.");
        prose("All\nHello");
        assert_eq!(calls("<<<[TOOL_REQUEST]>>>now\n{}"), vec![], "the close of a VCP marker opens no segment");
    }
}
