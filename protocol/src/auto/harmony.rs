//! OpenAI gpt-oss's Harmony: a reply is a run of messages, each a header
//! and a body, `<|start|>assistant<|channel|>CHANNEL HEADER<|message|>BODY`
//! and an end token. A call is a message addressed to a tool:
//! `<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>`,
//! the recipient also written in the role's part of the header
//! (`<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>`).
//!
//! The generation prompt ends with `<|start|>assistant`, so a reply's first
//! message has no `<|start|>` and may open with its recipient; the engines'
//! parsers (openai-harmony, vLLM, SGLang, llama.cpp) read both. Analysis
//! messages are reasoning ([`HARMONY_ANALYSIS_OPEN`]); final and commentary
//! messages without a recipient are the content, their tokens taken out.
//! `<|call|>` is a stop token, which some servers strip: a call whose JSON
//! is complete stands without it. Some strip every special token, leaving
//! `assistantcommentary to=functions.NAME json{…}`: such a call is read
//! for a declared tool ([`scan_stripped`]).
//!
//! [`HARMONY_ANALYSIS_OPEN`]: super::super::scan::HARMONY_ANALYSIS_OPEN

use super::super::ParsedCall;
use super::super::json_call::Trust;
use super::super::lenient_json;
use super::super::scan::{Collector, HARMONY_END, find};
use super::super::xml_tag::TOOL_CALL;
use super::function_tag::wrapped;
use super::{CHAT_TOKEN_OPEN, Scope, markup_name, name_len_before};
use crate::manifest::MAX_TOOL_NAME_LEN;
use serde_json::{Map, Value};

/// Opens a message's header (left out of a reply's first message).
pub(crate) const START: &str = "<|start|>";
/// Opens the channel's part of a header.
pub(crate) const CHANNEL: &str = "<|channel|>";
/// Opens the type the body is constrained to (`json`).
pub(crate) const CONSTRAIN: &str = "<|constrain|>";
/// Ends a header and opens the body: where this module starts reading.
pub(crate) const MESSAGE: &str = "<|message|>";
/// Ends a call (the stop token after a call).
pub(crate) const CALL: &str = "<|call|>";
/// Ends the final message (the stop token after an answer).
pub(crate) const RETURN: &str = "<|return|>";
/// Names a message's recipient in its header.
pub(crate) const RECIPIENT: &str = "to=";
/// Every marker this module reads.
pub(crate) const MARKERS: [&str; 7] = [START, CHANNEL, CONSTRAIN, MESSAGE, CALL, RETURN, HARMONY_END];

/// The recipient of a message the model writes to itself.
const SELF: &str = "self";
/// The recipient of Muse Glimmer's answer to its user.
const USER: &str = "user";
/// The namespace of the functions a developer declares.
const NAMESPACE: &str = "functions.";
/// The words a header holds besides its recipient: the role, the channels
/// and the constraint's types (`code` for gpt-oss's built-in tools, which
/// it also writes for a function at times), in any case.
const HEADER_WORDS: [&str; 6] = ["assistant", "analysis", "commentary", "final", "json", "code"];
/// What gpt-oss at times glues to the recipient: the constraint's type
/// (`to=functions.NAMEjson`), and, once a server strips the tokens, the
/// channel that followed the recipient in the role's part of the header
/// (`assistant to=functions.NAMEcommentary json{…}`).
const GLUED: [&str; 2] = ["json", "commentary"];
/// The recipient of a call, which is all a reply keeps of its header once
/// a server strips the special tokens.
const STRIPPED_RECIPIENT: &str = "to=functions.";
/// The words of a stripped header before its recipient, last first: the
/// channel, the role.
const STRIPPED_LEAD: [&str; 2] = ["commentary", "assistant"];
/// The constraint's types a stripped header may hold before the body.
const STRIPPED_TYPES: [&str; 2] = ["json", "code"];
/// How far before its `<|message|>` a header is looked for.
const MAX_HEADER: usize = 256;
/// The tokens that end a body, and whether they are its own (taken with it)
/// or the next message's (a `<|message|>` too, so that no body is read
/// past another header, and reading stays linear).
const BODY_ENDS: [(&str, bool); 6] =
    [(CALL, true), (HARMONY_END, true), (RETURN, true), (START, false), (CHANNEL, false), (MESSAGE, false)];
/// Muse Glimmer's ends of a message and of the turn, which end only the
/// body of a header of its own (no channel): gpt-oss's bodies may quote
/// them.
const GLIMMER_BODY_ENDS: [&str; 2] = ["<|eom|>", "<|eot|>"];

/// A message's header, read.
struct Header<'a> {
    /// Where it starts in the reply.
    start: usize,
    /// The recipient, `functions.NAME`, if the message is a call.
    recipient: Option<&'a str>,
    /// It names no channel: Muse Glimmer's (`to=NAME` alone).
    glimmer: bool,
}

/// The message whose `<|message|>` is at `found`: a call, or the tokens
/// around the content of a final or commentary message, taken out of the
/// content. `None` when no Harmony header stands before it (prose), else
/// where reading stopped.
pub(super) fn read(scope: &Scope<'_>, found: usize, out: &mut Collector<'_>) -> Option<usize> {
    let reply = scope.reply;
    let header = header(reply, found)?;
    let trust = scope.markup_trust(header.start)?;
    let body = found + MESSAGE.len();
    let (body_end, token_end) = body_end(reply, body, header.glimmer);
    // A message to itself is its reasoning and one to its user its answer
    // (Muse Glimmer's `to=self`, `to=user`, unless a tool is so named); a
    // body of ATEM invokes is the `atem` module's to read.
    let recipient = header.recipient.filter(|to| !is_person(to) || scope.declared.contains(to));
    let atem_body = reply[body..].trim_start().starts_with(crate::section_tokens::ATEM_NAMESPACE);
    let Some(recipient) = recipient.filter(|_| !atem_body) else {
        // Only tokens the model wrote as such, not ones it quotes in code.
        if trust == Trust::Explicit {
            out.markup(header.start..body);
            if token_end > body_end {
                out.markup(body_end..token_end);
            }
        }
        return Some(body);
    };
    let name = unglued(recipient.strip_prefix(NAMESPACE).unwrap_or(recipient), scope);
    let Some(name) = markup_name(name) else {
        out.warn(header.start, format!("`{recipient}` is not a tool's name; it is not a call"));
        return Some(token_end);
    };
    if !scope.markup_calls(header.start, name) {
        return Some(token_end);
    }
    let text = &reply[body..body_end];
    let json_at = body + (text.len() - text.trim_start().len());
    let (arguments, end) = if reply[json_at..body_end].trim_end().is_empty() {
        (Map::new(), token_end)
    } else {
        match lenient_json::parse_prefix(&reply[json_at..body_end]) {
            Ok((Value::Object(arguments), used, _)) => {
                let after = json_at + used;
                (
                    arguments,
                    if reply.get(after..body_end).is_some_and(|rest| rest.trim_start().is_empty()) { token_end } else { after },
                )
            }
            Err(_) if token_end == reply.len() && body_end == reply.len() => {
                out.warn(header.start, format!("the call to `{name}` is cut off before its {CALL}; it is not a call"));
                return Some(reply.len());
            }
            _ => {
                out.warn(body, format!("the arguments of `{name}` are not a JSON object; it is not a call"));
                return Some(token_end);
            }
        }
    };
    let span = wrapped(reply, header.start..end);
    out.call(ParsedCall { id: None, name: name.to_owned(), arguments, reserved: Map::new(), span: span.clone() });
    Some(span.end.max(end))
}

/// Whether `recipient` is no tool: the model itself or its user.
fn is_person(recipient: &str) -> bool {
    recipient == SELF || recipient == USER
}

/// Whether the markup at `at` is the body of a message addressed to a
/// tool (`<|start|>assistant to=NAME<|message|>` right before it): `None`
/// when no message's header stands right before it.
pub(super) fn body_of_a_call(reply: &str, at: usize) -> Option<bool> {
    let message = reply[..at].trim_end().strip_suffix(MESSAGE)?.len();
    let header = header(reply, message)?;
    Some(header.recipient.is_some_and(|to| !is_person(to)))
}

/// `name` without one of [`GLUED`] at its end, when that leaves a declared
/// tool's name and `name` itself is not one.
fn unglued<'a>(name: &'a str, scope: &Scope<'_>) -> &'a str {
    if scope.declared.contains(name) {
        return name;
    }
    GLUED
        .iter()
        .filter_map(|glued| strip_suffix_ignoring_case(name, glued))
        .find(|tool| scope.declared.contains(tool))
        .unwrap_or(name)
}

/// `text` without `suffix` at its end, in any case.
fn strip_suffix_ignoring_case<'a>(text: &'a str, suffix: &str) -> Option<&'a str> {
    let split = text.len().checked_sub(suffix.len())?;
    text.get(split..).filter(|end| end.eq_ignore_ascii_case(suffix)).map(|_| &text[..split])
}

/// `text` without `prefix` at its start, in any case.
fn strip_prefix_ignoring_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.get(..prefix.len()).filter(|start| start.eq_ignore_ascii_case(prefix)).map(|_| &text[prefix.len()..])
}

/// gpt-oss's calls once a server has stripped the special tokens (as some
/// hosted endpoints and MLX servers do):
/// `assistantcommentary to=functions.NAME json{…}`, the header's words run
/// together. With no token to mark them, they are calls only of a declared
/// tool, their JSON object right after the header; the header's words go
/// with the call. What a reply says before them stays content, as the
/// analysis does when its tokens are kept.
///
/// Found from the `{` of their arguments, which the reply's marker index
/// lists already: a search of its own for the recipient cost a third of
/// `auto`'s time on prose.
pub(super) fn scan_stripped(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let mut at = 0;
    while let Some(brace) = scope.markers.find(at, "{") {
        at = brace + 1;
        let Some(found) = stripped_recipient_before(scope.reply, brace) else { continue };
        at = match scope.reasoning.skip(found) {
            Some(end) => end,
            None => stripped_call(scope, found, out).unwrap_or(at),
        };
    }
}

/// Where the recipient of a stripped header ending right before the `{` at
/// `brace` starts: `to=functions.NAME`, the constraint's type and white
/// space between (a look back of bounded length).
fn stripped_recipient_before(reply: &str, brace: usize) -> Option<usize> {
    let mut before = reply[..brace].trim_end_matches([' ', '\t']);
    if let Some(word) = STRIPPED_TYPES.iter().find_map(|word| strip_suffix_ignoring_case(before, word)) {
        before = word.trim_end_matches([' ', '\t']);
    }
    before = before.strip_suffix(CONSTRAIN).unwrap_or(before).trim_end_matches([' ', '\t']);
    // The name, with a glued type or channel (`NAMEjson`, `NAMEcommentary`).
    let name_len = name_len_before(before, NAMESPACE.len() + MAX_TOOL_NAME_LEN + GLUED[1].len() + 1, true);
    let head = &before[..before.len() - name_len];
    // The name's characters take in `functions.` too.
    let recipient = head.strip_suffix(RECIPIENT).map(|_| head.len() - RECIPIENT.len());
    recipient.filter(|&at| reply[at..].starts_with(STRIPPED_RECIPIENT))
}

/// The stripped call whose recipient is at `found`, and where it ends;
/// `None` when none stands there (a Harmony message with its tokens is
/// [`read`]'s).
fn stripped_call(scope: &Scope<'_>, found: usize, out: &mut Collector<'_>) -> Option<usize> {
    let reply = scope.reply;
    let name_at = found + STRIPPED_RECIPIENT.len();
    let name_len = reply[name_at..]
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .unwrap_or(reply.len() - name_at);
    let name = unglued(&reply[name_at..name_at + name_len], scope);
    let mut rest = reply[name_at + name_len..].trim_start();
    rest = rest.strip_prefix(CONSTRAIN).unwrap_or(rest);
    rest = STRIPPED_TYPES.iter().find_map(|word| strip_prefix_ignoring_case(rest, word)).unwrap_or(rest).trim_start();
    let json_at = reply.len() - rest.len();
    let start = stripped_header_start(reply, found)?;
    if !rest.starts_with('{') || !scope.declared.contains(name) || scope.markup_trust(start).is_none() {
        return None;
    }
    let (arguments, used) = match lenient_json::parse_prefix(rest) {
        Ok((Value::Object(arguments), used, _)) => (arguments, used),
        _ => {
            out.warn(json_at, format!("the arguments of `{name}` are not a JSON object; it is not a call"));
            return None;
        }
    };
    let after = &reply[json_at + used..];
    let trimmed = after.trim_start();
    let end = match trimmed.strip_prefix(CALL) {
        Some(past) => reply.len() - past.len(),
        None => json_at + used,
    };
    // The call ends the reply (its stop token stripped) or its line, or
    // the next message follows it.
    let next = reply[end..].trim_start_matches([' ', '\t']);
    let ends = next.is_empty()
        || next.starts_with(['\n', '\r'])
        || next.starts_with(CHAT_TOKEN_OPEN)
        || strip_prefix_ignoring_case(next, STRIPPED_LEAD[1]).is_some();
    if !ends {
        return None;
    }
    out.call(ParsedCall { id: None, name: name.to_owned(), arguments, reserved: Map::new(), span: start..end });
    Some(end)
}

/// Where the stripped header whose recipient is at `found` starts: its
/// role's and channel's words before the recipient, and the tokens a
/// server left before them. `None` when they are not there: the role
/// (`assistant`, which may be glued to the text before it, as the last
/// message's end was), or the channel alone at a line's start.
fn stripped_header_start(reply: &str, found: usize) -> Option<usize> {
    let mut before = reply[..found].trim_end_matches([' ', '\t']);
    let channel = strip_suffix_ignoring_case(before, STRIPPED_LEAD[0]);
    before = channel.map_or(before, |rest| rest.trim_end_matches([' ', '\t']));
    let role = strip_suffix_ignoring_case(before, STRIPPED_LEAD[1]);
    before = role.unwrap_or(before);
    for token in [START, HARMONY_END] {
        before = before.strip_suffix(token).unwrap_or(before);
    }
    let at_line_start = before.trim_end_matches([' ', '\t']).is_empty() || before.ends_with(['\n', '>']);
    (role.is_some() || (channel.is_some() && at_line_start)).then(|| {
        let start = before.len();
        start + (reply[start..found].len() - reply[start..found].trim_start().len())
    })
}

/// Whether a `<tool_call>` body holds a Harmony message, read by [`read`]
/// with the element around it.
pub(crate) fn in_tool_call(body: &str) -> bool {
    body.contains(MESSAGE)
}

/// The header before the `<|message|>` at `message`: from its `<|start|>`,
/// else from the end of the message before, a line break or the reply's
/// start, else from a `<tool_call>` around it or its `<|channel|>` (prose
/// may stand before those).
fn header(reply: &str, message: usize) -> Option<Header<'_>> {
    let mut window = message.saturating_sub(MAX_HEADER);
    while !reply.is_char_boundary(window) {
        window += 1;
    }
    let text = &reply[window..message];
    let after_last = |token: &str| text.rfind(token).map(|i| window + i + token.len());
    let boundary =
        [CALL, HARMONY_END, RETURN, MESSAGE, "\n"].into_iter().filter_map(after_last).chain((window == 0).then_some(0)).max();
    let start = text.rfind(START).map(|i| window + i).filter(|&s| boundary.is_none_or(|b| s >= b));
    let last = |token: &str| text.rfind(token).map(|i| window + i);
    let candidates = [start, boundary, last(TOOL_CALL.0), last(CHANNEL)];
    candidates.into_iter().flatten().filter(|&s| boundary.is_none_or(|b| s >= b)).find_map(|s| {
        let lead = &reply[s..message];
        let trimmed = lead.trim_start();
        let (s, lead) = match trimmed.strip_prefix(TOOL_CALL.0) {
            Some(rest) => (message - rest.len(), rest),
            None => (message - trimmed.len(), trimmed),
        };
        let recipient = header_words(lead)?;
        Some(Header { start: s + (lead.len() - lead.trim_start().len()), recipient, glimmer: !lead.contains(CHANNEL) })
    })
}

/// The recipient a header names, if its text is a Harmony header: the role,
/// channel, recipient and constraint, nothing else. `None` when it is not.
fn header_words(text: &str) -> Option<Option<&str>> {
    let text = text.strip_prefix(START).unwrap_or(text);
    let has_channel = text.contains(CHANNEL);
    let mut recipient = None;
    for part in text.split(CHANNEL).flat_map(|part| part.split(CONSTRAIN)) {
        if part.contains(CHAT_TOKEN_OPEN) {
            return None;
        }
        for word in part.split_ascii_whitespace() {
            match word.strip_prefix(RECIPIENT) {
                Some(to) => recipient = Some(to),
                None if HEADER_WORDS.iter().any(|known| known.eq_ignore_ascii_case(word)) => {}
                None => return None,
            }
        }
    }
    (has_channel || recipient.is_some()).then_some(recipient)
}

/// Where the body starting at `body` ends, and where the token that ends it
/// does when it is the body's own (else the same place); the reply's end
/// when nothing ends it. A `glimmer` message's own ends end it too.
fn body_end(reply: &str, body: usize, glimmer: bool) -> (usize, usize) {
    let mut at = body;
    while let Some(token) = find(reply, at, CHAT_TOKEN_OPEN) {
        if let Some((end, own)) = BODY_ENDS.iter().find(|(end, _)| reply[token..].starts_with(end)) {
            return (token, if *own { token + end.len() } else { token });
        }
        if let Some(end) = GLIMMER_BODY_ENDS.iter().find(|end| glimmer && reply[token..].starts_with(*end)) {
            return (token, token + end.len());
        }
        at = token + CHAT_TOKEN_OPEN.len();
    }
    (reply.len(), reply.len())
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, checked, no_calls, one, parse, prose, warnings};
    use serde_json::{Value, json};

    /// A call as the Harmony spec writes it, the recipient in the channel's
    /// part of the header.
    const CALL: &str = "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Tokyo\"}<|call|>";

    #[test]
    fn harmony_calls_with_and_without_the_leading_tokens() {
        let args = json!({"city": "Tokyo"});
        assert_eq!(calls(CALL), one("get_weather", args.clone()));
        assert_eq!(parse(CALL).content, "");
        assert!(parse(CALL).warnings.is_empty(), "{:?}", parse(CALL).warnings);
        let no_start = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Tokyo\"}<|call|>";
        assert_eq!(calls(no_start), one("get_weather", args.clone()));
        let in_role =
            "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Tokyo\"}<|call|>";
        assert_eq!(calls(in_role), one("get_weather", args.clone()));
        let first_message = " to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Tokyo\"}<|call|>";
        assert_eq!(calls(first_message), one("get_weather", args.clone()), "the prompt wrote `<|start|>assistant`");
        assert_eq!(parse(first_message).content, "");
        let no_constrain = "<|channel|>commentary to=functions.get_weather<|message|>{\"city\": \"Tokyo\"}";
        assert_eq!(calls(no_constrain), one("get_weather", args.clone()), "the stop token stripped");
        let on_analysis = "<|channel|>analysis to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Tokyo\"}<|end|>";
        assert_eq!(calls(on_analysis), one("get_weather", args), "addressed to a tool, an analysis message is a call");
        assert_eq!(parse(on_analysis).content, "");
    }

    #[test]
    fn an_analysis_message_ends_where_the_next_one_starts_its_end_left_out() {
        // As llama.cpp's Harmony tests write it: no `<|end|>` before `<|start|>`.
        let reply = "<|channel|>analysis<|message|>Let me think about this...<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>";
        assert_eq!(calls(reply), one("get_weather", json!({"city": "Paris"})));
        let answer = "<|channel|>analysis<|message|>Need a place<|start|>assistant<|channel|>final<|message|>Which city?";
        assert!(parse(answer).content.ends_with("Need a placeWhich city?"), "{}", parse(answer).content);
        // A call written inside the analysis, before any next message, is reasoning.
        let thought = "<|channel|>analysis<|message|>I could write <|channel|>commentary to=functions.now<|message|>{}<|call|>";
        assert_eq!(calls(thought), vec![]);
    }

    #[test]
    fn several_harmony_calls_after_reasoning_and_prose() {
        let second = CALL.replace("get_weather", "now").replace("{\"city\": \"Tokyo\"}", "{}");
        let reply = format!(
            "<|channel|>analysis<|message|>Need the weather, then the time. <|channel|>commentary to=functions.now<|message|>{{}}<|call|> is how.<|end|>{CALL}{second}"
        );
        assert_eq!(calls(&reply), vec![("get_weather".into(), json!({"city": "Tokyo"})), ("now".into(), json!({}))]);
        let parsed = parse(&reply);
        assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
        assert!(
            parsed.content.starts_with("<|channel|>analysis<|message|>Need"),
            "reasoning stays as <think> does: {}",
            parsed.content
        );
        let after_prose = format!("I'll check the weather.{}", &CALL["<|start|>assistant".len()..]);
        assert_eq!(calls(&after_prose), one("get_weather", json!({"city": "Tokyo"})));
        assert_eq!(parse(&after_prose).content, "I'll check the weather.");
    }

    #[test]
    fn the_final_channel_is_the_content() {
        let reply =
            "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>It is 5050.<|return|>";
        let parsed = parse(reply);
        assert!(parsed.calls.is_empty());
        assert_eq!(parsed.content, "<|channel|>analysis<|message|>Easy.<|end|>It is 5050.");
        let preamble = format!("<|channel|>commentary<|message|>Checking the weather.<|end|>{CALL}");
        assert_eq!(parse(&preamble).content, "Checking the weather.");
        assert_eq!(calls(&preamble).len(), 1);
    }

    #[test]
    fn harmony_inside_a_tool_call_tag() {
        let reply = "<tool_call>\n<|channel|>commentary to=functions.now <|constrain|>json<|message|>{\"zone\": \"UTC\"}<|call|>\n</tool_call>";
        assert_eq!(calls(reply), one("now", json!({"zone": "UTC"})));
        assert_eq!(parse(reply).content, "");
        let bare = "Sure.<tool_call>commentary to=functions.now <|constrain|>json<|message|>{\"zone\": \"UTC\"}</tool_call>";
        assert_eq!(calls(bare), one("now", json!({"zone": "UTC"})));
        assert_eq!(parse(bare).content, "Sure.");
    }

    #[test]
    fn harmony_arguments_are_typed_by_the_declaration() {
        let reply = "<|channel|>commentary to=functions.forecast <|constrain|>json<|message|>{\"city\": \"Rome\", \"days\": \"5\", \"ratio\": 0.5, \"metric\": \"true\", \"options\": {\"a\": [1]}}<|call|>";
        assert_eq!(
            Value::Object(checked(reply)),
            json!({"city": "Rome", "days": 5, "ratio": 0.5, "metric": true, "options": {"a": [1]}})
        );
    }

    #[test]
    fn glimmer_ends_end_only_glimmer_messages() {
        // gpt-oss's bodies may quote Glimmer's `<|eom|>` and `<|eot|>`.
        let quoted =
            "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"x<|eot|>y\"}<|call|>";
        assert_eq!(calls(quoted), one("get_weather", json!({"city": "x<|eot|>y"})));
        let answer = "<|channel|>final<|message|>Use <|eom|> to end a message.<|return|>";
        assert_eq!(parse(answer).content, "Use <|eom|> to end a message.");
        // A tool may be named `user`: then a message to it is a call.
        let reply = "<|start|>assistant to=user<|message|>{\"id\": 3}<|call|>";
        let declared = crate::Declared::new(["user"]);
        let parsed = crate::Protocol::parse(&super::super::Auto, reply, &declared);
        assert_eq!(parsed.calls.len(), 1, "{parsed:?}");
    }

    #[test]
    fn harmony_headers_as_models_write_them_besides_the_spec() {
        let args = json!({"city": "Tokyo"});
        // The constraint's type in capitals, or `code` (gpt-oss writes it
        // for its built-in tools, and at times for a function).
        let upper = CALL.replace("<|constrain|>json", "<|constrain|>JSON");
        assert_eq!(calls(&upper), one("get_weather", args.clone()));
        assert_eq!(parse(&upper).content, "");
        let code = "<|start|>assistant<|channel|>analysis to=functions.get_weather code<|message|>{\"city\": \"Tokyo\"}<|call|>";
        assert_eq!(calls(code), one("get_weather", args.clone()));
        // `json` glued to the recipient, as llama.cpp reports gpt-oss
        // writing it: the declared name before it is the tool.
        let glued = "<|channel|>commentary to=functions.get_weatherjson<|message|>{\"city\": \"Tokyo\"}<|call|>";
        assert_eq!(calls(glued), one("get_weather", args.clone()));
        assert!(parse(glued).warnings.is_empty(), "{:?}", parse(glued).warnings);
        let glued_in_role =
            "<|start|>assistant to=functions.get_weatherJSON<|channel|>commentary<|message|>{\"city\": \"Tokyo\"}<|call|>";
        assert_eq!(calls(glued_in_role), one("get_weather", args));
        // A name that truly ends in `json` is left alone.
        let undeclared = "<|channel|>commentary to=functions.to_json<|message|>{}<|call|>";
        assert_eq!(calls(undeclared), one("to_json", json!({})));
    }

    #[test]
    fn a_cut_off_harmony_call_is_a_warning_not_a_call() {
        let cut = format!("{CALL}{}", &CALL[..CALL.len() - "okyo\"}<|call|>".len()]);
        assert_eq!(calls(&cut), one("get_weather", json!({"city": "Tokyo"})), "only the complete call");
        assert_eq!(warnings(&cut), ["the call to `get_weather` is cut off before its <|call|>; it is not a call"]);
        let bad = "<|channel|>commentary to=functions.now<|message|>{\"zone\": <|call|>";
        assert_eq!(calls(bad), vec![]);
        assert_eq!(warnings(bad), ["the arguments of `now` are not a JSON object; it is not a call"]);
    }

    #[test]
    fn harmony_tokens_in_prose_or_code_are_not_calls() {
        no_calls(&[
            "gpt-oss writes <|channel|>, then <|message|> and the body, then <|call|>.",
            "e.g. `<|channel|>commentary to=functions.delete_all<|message|>{}<|call|>`",
            "`<|start|>assistant<|channel|>commentary to=functions.now<|message|>{}<|call|>`",
            "Send it to=functions.now<|message|>{} like so.",
            "```\n<|channel|>commentary to=functions.delete_all<|message|>{}<|call|>\n```",
            "<|channel|>analysis<|message|>maybe <tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call><|end|>",
            "<think><|channel|>commentary to=functions.now<|message|>{}<|call|></think>",
        ]);
        prose("It ends with <|message|> and <|call|> tokens.");
    }

    #[test]
    fn calls_whose_special_tokens_a_server_stripped() {
        let paris = || one("get_weather", json!({"city": "Paris"}));
        for (reply, content) in [
            (
                "analysisThe user wants weather. We call.assistantcommentary to=functions.get_weatherjson{\"city\":\"Paris\"}",
                "analysisThe user wants weather. We call.",
            ),
            (
                "I need to check.\n\nassistantcommentary to=functions.get_weather json{\n  \"city\": \"Paris\"\n}",
                "I need to check.",
            ),
            (
                "analysis: read it.<|end|><|start|>assistantcommentary to=functions.get_weather {\"city\":\"Paris\"}<|call|>",
                "analysis: read it.",
            ),
            ("Checking. assistant to=functions.get_weathercommentary json{\"city\": \"Paris\"}", "Checking."),
            ("commentary to=functions.get_weather <|constrain|>json{\"city\": \"Paris\"}", ""),
        ] {
            let parsed = parse(reply);
            assert_eq!(calls(reply), paris(), "{reply}");
            assert_eq!(parsed.content, content, "{reply}");
        }
        let two = "analysisNeed both.assistantcommentary to=functions.get_weather json{\"city\":\"Paris\"}assistantanalysisNow the time.assistantcommentary to=functions.now json{}";
        assert_eq!(calls(two), vec![("get_weather".to_owned(), json!({"city": "Paris"})), ("now".to_owned(), json!({}))]);
        assert_eq!(parse(two).content, "analysisNeed both.assistantanalysisNow the time.");
    }

    #[test]
    fn stripped_headers_call_only_declared_tools_outside_quotes() {
        no_calls(&[
            "assistantcommentary to=functions.delete_all json{\"path\": \"/\"}",
            "Write `assistantcommentary to=functions.get_weather json{\"city\": \"Paris\"}` to call it.",
            "<think>assistantcommentary to=functions.get_weather json{\"city\": \"Paris\"}</think>",
            "It sends to=functions.get_weather and then waits.",
            // In prose: no header, a channel word mid-line, prose after it.
            "gpt-oss routes a call with to=functions.get_weather {\"city\": \"Paris\"} in its header.",
            "My commentary to=functions.get_weather {\"city\": \"Paris\"}",
            "assistantcommentary to=functions.get_weather json{\"city\": \"Paris\"} is how it looks.",
        ]);
        prose("The header reads assistantcommentary to=functions.get_weather json, then the body.");
        assert_eq!(
            warnings("assistantcommentary to=functions.get_weather json{\"city\": "),
            ["the arguments of `get_weather` are not a JSON object; it is not a call"]
        );
    }
}
