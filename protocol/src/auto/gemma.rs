//! Gemma 4's and FunctionGemma's calls: an opening token, `call:NAME`, the
//! arguments as `{key:value,…}` and a closing token:
//!
//! - Gemma 4: `<|tool_call>call:NAME{city:<|"|>Paris<|"|>,days:3}<tool_call|>`,
//!   closed by `<turn|>` at times; its reasoning is
//!   `<|channel>thought…<channel|>`;
//! - FunctionGemma: `<start_function_call>call:NAME{city:<escape>Paris<escape>}<end_function_call>`.
//!
//! Keys are bare (or quoted like strings); a string value stands between
//! two quote tokens and is kept exactly, with no escapes; other values are
//! bare numbers, `true`, `false`, `null`, `{…}` objects and `[…]` arrays,
//! as vLLM's `gemma4` and `functiongemma` parsers and llama.cpp read them.
//! A bare value that is none of these stays text, and the check step types
//! every value by the declared schema. The closing token may be left out
//! (it can be the stop token): the arguments' closing `}` completes a call.

use super::super::ParsedCall;
use super::super::scan::GEMMA4_CHANNEL_CLOSE;
use super::super::scan::{Collector, find};
use super::{Scope, exact_number, indented_as_code, markup_name, name_len_before, starts_line};
use crate::manifest::MAX_TOOL_NAME_LEN;
use serde_json::{Map, Value};

/// One family's tokens.
pub(crate) struct Dialect {
    /// Opens a call.
    pub(crate) open: &'static str,
    /// Closes it.
    close: &'static str,
    /// Also closes it: the end of the turn, which some replies write in
    /// place of `close`.
    turn_end: &'static str,
    /// Stands on both sides of a string.
    quote: &'static str,
}

/// Gemma 4's tokens.
pub(crate) const GEMMA4: Dialect = Dialect { open: "<|tool_call>", close: "<tool_call|>", turn_end: "<turn|>", quote: "<|\"|>" };
/// FunctionGemma's.
pub(crate) const FUNCTION_GEMMA: Dialect =
    Dialect { open: "<start_function_call>", close: "<end_function_call>", turn_end: "<end_of_turn>", quote: "<escape>" };
/// Follows the opening token, before the tool's name.
const CALL: &str = "call:";
/// What stands before a call's name in place of `<|tool_call>call:` at
/// times, and what may close it then.
const BARE_CALL_TAG: &str = "<call>";
/// Closes a call opened by [`BARE_CALL_TAG`].
const BARE_CALL_CLOSE: &str = "</call>";
/// Around the arguments, open and close: braces as the template writes
/// them, or parentheses, which Gemma 4 drifts into under long prompts
/// (vLLM issue #53642).
const SHELLS: [(char, char); 2] = [('{', '}'), ('(', ')')];
/// Between a key and its value: `:`, or `=` in a parenthesized call.
const KEY_ENDS: [char; 2] = [':', '='];
/// Every marker this module reads.
pub(crate) const MARKERS: [&str; 6] =
    [GEMMA4.open, GEMMA4.close, GEMMA4.quote, FUNCTION_GEMMA.open, FUNCTION_GEMMA.close, FUNCTION_GEMMA.quote];
/// How deep objects and arrays may nest, so hostile input cannot exhaust
/// the stack.
const MAX_DEPTH: usize = super::super::lenient_json::MAX_DEPTH;

/// The call whose opening token stands at `found`, outside reasoning (the
/// chat-token scan finds Gemma 4's, the tag envelopes' scan
/// FunctionGemma's); where reading stopped.
pub(crate) fn read(scope: &Scope<'_>, found: usize, dialect: &Dialect, out: &mut Collector<'_>) -> usize {
    let reply = scope.reply;
    let after = found + dialect.open.len();
    if scope.markup_trust(found).is_none() {
        return after;
    }
    // vLLM reads a stray `:` before `call:` too.
    let head = reply[after..].trim_start();
    let head = head.strip_prefix(':').unwrap_or(head);
    let Some(named) = head.strip_prefix(CALL) else { return after };
    let name_at = reply.len() - named.len();
    call_at(scope, found, name_at, dialect, Trusted::AsMarkup, out).unwrap_or(after)
}

/// Which tools a call may name.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Trusted {
    /// As markup at its place may: any, outside code.
    AsMarkup,
    /// Only declared ones: a call without its opening token.
    Declared,
}

/// Gemma 4's calls written without their opening token, as vLLM's parser
/// also reads them: `call:NAME{…}` or `<call>NAME{…}` (`</call>` after it
/// or not) at a line's start (not indented as code), right after its
/// reasoning's close (`<channel|>call:NAME{…}`) or after another such
/// call, and ending its line. No token marks them, so they are calls only
/// of declared tools, and one that does not read is prose, not warned of.
pub(super) fn scan_bare(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let reply = scope.reply;
    let mut at = 0;
    // Where the last call read ends: the next may follow it on its line.
    let mut after_call = None;
    while let Some(open) = scope.markers.find(at, "{") {
        at = open + 1;
        let name_len = name_len_before(&reply[..open], MAX_TOOL_NAME_LEN + 1, true);
        let name_at = open - name_len;
        let before = &reply[..name_at];
        let line_start = |lead: &str| {
            let at = lead.len();
            (starts_line(reply, at) && !indented_as_code(reply, at))
                || after_call == Some(at)
                || lead.ends_with(GEMMA4_CHANNEL_CLOSE)
        };
        let start = match (before.strip_suffix(CALL), before.strip_suffix(BARE_CALL_TAG)) {
            (Some(lead), _) if line_start(lead) => lead.len(),
            (_, Some(lead)) if line_start(lead) => lead.len(),
            _ => continue,
        };
        if name_len == 0 || name_len > MAX_TOOL_NAME_LEN || scope.reasoning.contains(start) {
            continue;
        }
        let before_read = out.len();
        if let Some(end) = call_at(scope, start, name_at, &GEMMA4, Trusted::Declared, out) {
            at = at.max(end);
            after_call = (out.len() > before_read).then_some(end);
        }
    }
}

/// The call whose name starts at `name_at`, its markup at `found`: read and
/// collected when `trusted` allows its tool, and where reading stopped;
/// `None` when nothing was read past its name.
fn call_at(
    scope: &Scope<'_>,
    found: usize,
    name_at: usize,
    dialect: &Dialect,
    trusted: Trusted,
    out: &mut Collector<'_>,
) -> Option<usize> {
    let reply = scope.reply;
    let named = &reply[name_at..];
    // The name's characters only, so a token before prose reads no further.
    let name_end = name_at + named.find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))).unwrap_or(named.len());
    let declared = |name: &str| trusted == Trusted::AsMarkup || scope.declared.contains(name);
    if name_end == reply.len() {
        if trusted == Trusted::AsMarkup {
            let shown: String = reply[name_at..].chars().take(MAX_TOOL_NAME_LEN).collect();
            out.warn(found, format!("the call to `{shown}` is cut off before its arguments; it is not a call"));
        }
        return Some(reply.len());
    }
    let shell = reply[name_end..].chars().next().and_then(|open| SHELLS.into_iter().find(|(o, _)| *o == open));
    let Some(((_, shell_close), name)) = shell.zip(markup_name(&reply[name_at..name_end])).filter(|(_, name)| declared(name))
    else {
        if trusted == Trusted::AsMarkup {
            out.warn(found, format!("{} is not followed by call:NAME{{…}}; it is not a call", dialect.open));
        }
        return None;
    };
    let values = Values { reply, quote: dialect.quote, call_close: dialect.close };
    // Without its token, a call that does not read is prose: no warning.
    let marked = trusted == Trusted::AsMarkup;
    let (arguments, end) = match values.object(name_end + 1, 0, shell_close) {
        Ok(read) => read,
        Err(Stop::CutOff) if marked => {
            out.warn(found, format!("the call to `{name}` is cut off; it is not a call"));
            return Some(reply.len());
        }
        Err(Stop::Malformed(at)) if marked => {
            out.warn(at, format!("the arguments of `{name}` are not {}'s key:value pairs; it is not a call", dialect.name()));
            return Some(at.max(name_end + 1));
        }
        Err(Stop::CutOff) => return Some(reply.len()),
        Err(Stop::Malformed(at)) => return Some(at.max(name_end + 1)),
    };
    let trimmed = reply[end..].trim_start();
    let closed_at = reply.len() - trimmed.len();
    let closes: &[&str] =
        if marked { &[dialect.close, dialect.turn_end] } else { &[dialect.close, dialect.turn_end, BARE_CALL_CLOSE] };
    let end = closes.iter().find(|token| trimmed.starts_with(**token)).map_or(end, |token| closed_at + token.len());
    // Without its token, a call stands on a line of its own, or before the
    // next such call.
    let rest = reply[end..].trim_start_matches([' ', '\t']);
    let alone = rest.is_empty() || rest.starts_with(['\n', '\r']) || rest.starts_with(CALL) || end >= scope.turn_end();
    if !marked && !alone {
        return None;
    }
    if scope.markup_calls(found, name) {
        out.call(ParsedCall {
            id: None,
            name: name.to_owned(),
            arguments: arguments.into_iter().collect(),
            reserved: Map::new(),
            span: found..end,
        });
        Some(end)
    } else {
        None
    }
}

impl Dialect {
    /// The family's name, for warnings.
    fn name(&self) -> &'static str {
        if self.open == GEMMA4.open { "Gemma" } else { "FunctionGemma" }
    }
}

/// Why reading values stopped.
enum Stop {
    /// The reply ended first.
    CutOff,
    /// The text at this offset is no value.
    Malformed(usize),
}

/// Reads the values of one dialect.
struct Values<'a> {
    reply: &'a str,
    quote: &'static str,
    /// The dialect's closing token, past which no string runs.
    call_close: &'static str,
}

impl Values<'_> {
    /// The object whose `{` (or the call's `(`) ends at `at`, closed by
    /// `close`, and where it ends.
    fn object(&self, mut at: usize, depth: usize, close: char) -> Result<(Map<String, Value>, usize), Stop> {
        if depth > MAX_DEPTH {
            return Err(Stop::Malformed(at));
        }
        let mut map = Map::new();
        loop {
            at = self.skip_separators(at)?;
            if self.reply[at..].starts_with(close) {
                return Ok((map, at + 1));
            }
            let (key, after_key) = self.key(at)?;
            let (value, end) = self.value(after_key, depth)?;
            map.insert(key, value);
            at = self.after_item(end, close)?;
        }
    }

    /// The array whose `[` ends at `at`, and where it ends.
    fn array(&self, mut at: usize, depth: usize) -> Result<(Vec<Value>, usize), Stop> {
        if depth > MAX_DEPTH {
            return Err(Stop::Malformed(at));
        }
        let mut items = Vec::new();
        loop {
            at = self.skip_separators(at)?;
            if self.reply[at..].starts_with(']') {
                return Ok((items, at + 1));
            }
            let (value, end) = self.value(at, depth)?;
            items.push(value);
            at = self.after_item(end, ']')?;
        }
    }

    /// After an item: white space, then `,` or the container's `close`
    /// (left for the caller to read).
    fn after_item(&self, at: usize, close: char) -> Result<usize, Stop> {
        let at = self.skip_ws(at)?;
        match self.reply[at..].chars().next() {
            Some(',') => Ok(at + 1),
            Some(c) if c == close => Ok(at),
            _ => Err(Stop::Malformed(at)),
        }
    }

    /// A key and its `:`: a bare one, or one between quote tokens; where
    /// its value starts.
    fn key(&self, at: usize) -> Result<(String, usize), Stop> {
        if let Some((text, end)) = self.quoted(at)? {
            let colon = self.skip_ws(end)?;
            return if self.reply[colon..].starts_with(KEY_ENDS) {
                Ok((text.to_owned(), colon + 1))
            } else {
                Err(Stop::Malformed(colon))
            };
        }
        let rest = &self.reply[at..];
        let Some(length) = rest.find([':', '=', ',', '{', '}', '(', ')', '[', ']', '<']) else { return Err(Stop::CutOff) };
        let key = rest[..length].trim();
        let key = key.strip_prefix('"').and_then(|k| k.strip_suffix('"')).unwrap_or(key);
        if !rest[length..].starts_with(KEY_ENDS) || key.is_empty() {
            return Err(Stop::Malformed(at + length));
        }
        Ok((key.to_owned(), at + length + 1))
    }

    /// The value at `at` (after white space), and where it ends.
    fn value(&self, at: usize, depth: usize) -> Result<(Value, usize), Stop> {
        let at = self.skip_ws(at)?;
        if let Some((text, end)) = self.quoted(at)? {
            return Ok((Value::String(text.to_owned()), end));
        }
        let rest = &self.reply[at..];
        if rest.starts_with('"') {
            let (text, end) = json_string(self.reply, at)?;
            return Ok((Value::String(text), end));
        }
        if rest.starts_with('{') {
            let (map, end) = self.object(at + 1, depth + 1, '}')?;
            return Ok((Value::Object(map), end));
        }
        if rest.starts_with('[') {
            let (items, end) = self.array(at + 1, depth + 1)?;
            return Ok((Value::Array(items), end));
        }
        if let Some(text) = self.lone_close(rest) {
            return Ok((Value::String(text.to_owned()), at + text.len() + self.quote.len()));
        }
        let Some(length) = rest.find([',', '}', ')', ']', '<']) else { return Err(Stop::CutOff) };
        let text = rest[..length].trim();
        if text.is_empty() {
            return Err(Stop::Malformed(at));
        }
        Ok((bare(text), at + length))
    }

    /// The text of a string whose opening quote token was left out, as
    /// Gemma 4 at times writes it (`query:Paris, France<|"|>`, sglang PR
    /// #39240): a closing quote before the container's end, with no key
    /// (`:`) or other token in between.
    fn lone_close<'r>(&self, rest: &'r str) -> Option<&'r str> {
        let end = rest.find(['}', ')', ']', ':', '<'])?;
        rest[end..].starts_with(self.quote).then(|| &rest[..end])
    }

    /// The string between quote tokens at `at`, if one opens there, and
    /// where it ends.
    fn quoted(&self, at: usize) -> Result<Option<(&str, usize)>, Stop> {
        if !self.reply[at..].starts_with(self.quote) {
            return Ok(None);
        }
        let start = at + self.quote.len();
        let close = find(self.reply, start, self.quote);
        let call_close = find(&self.reply[..close.unwrap_or(self.reply.len())], start, self.call_close);
        // A string left open runs to the arguments' last bracket before the
        // call's closing token (issue reports of Gemma 4 leaving a `<|"|>`
        // unterminated); a string that merely quotes the token keeps it.
        let left_open = call_close.and_then(|c| self.reply[start..c].trim_end().strip_suffix(['}', ')']));
        match (close, left_open) {
            (_, Some(inner)) => Ok(Some((inner, start + inner.len()))),
            (Some(close), None) => Ok(Some((&self.reply[start..close], close + self.quote.len()))),
            (None, None) => Err(Stop::CutOff),
        }
    }

    /// Past white space and commas (an empty item), to the next token.
    fn skip_separators(&self, mut at: usize) -> Result<usize, Stop> {
        loop {
            at = self.skip_ws(at)?;
            if !self.reply[at..].starts_with(',') {
                return Ok(at);
            }
            at += 1;
        }
    }

    /// Past white space; a reply that ends there is cut off.
    fn skip_ws(&self, at: usize) -> Result<usize, Stop> {
        let rest = self.reply[at..].trim_start();
        if rest.is_empty() { Err(Stop::CutOff) } else { Ok(self.reply.len() - rest.len()) }
    }
}

/// The JSON string whose opening `"` stands at `at` (Ollama reads these
/// beside the quote tokens), and where it ends; undecodable escapes kept
/// as written.
fn json_string(reply: &str, at: usize) -> Result<(String, usize), Stop> {
    let bytes = reply.as_bytes();
    let mut p = at + 1;
    while p < bytes.len() {
        match bytes[p] {
            b'\\' => p += 2,
            b'"' => {
                let quoted = &reply[at..=p];
                let text = serde_json::from_str(quoted).unwrap_or_else(|_| quoted[1..quoted.len() - 1].to_owned());
                return Ok((text, p + 1));
            }
            _ => p += 1,
        }
    }
    Err(Stop::CutOff)
}

/// A bare value: a JSON number, `true`, `false` or `null` (`None` and
/// `nil` too, as vLLM reads them), else its text.
fn bare(text: &str) -> Value {
    match text {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        "null" | "None" | "none" | "nil" => Value::Null,
        _ => exact_number(text).map_or_else(|| Value::String(text.to_owned()), Value::Number),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, checked, no_calls, one, parse, prose, warnings};
    use serde_json::{Value, json};

    /// Two calls as Gemma 4's template writes them.
    const GEMMA4_TWO: &str = "<|tool_call>call:get_weather{city:<|\"|>Paris, France<|\"|>,date:<|\"|>2024-12-25<|\"|>}<tool_call|><|tool_call>call:now{}<tool_call|>";
    /// The same as FunctionGemma writes them.
    const FUNCTION_GEMMA_TWO: &str = "<start_function_call>call:get_weather{city:<escape>Paris, France<escape>,date:<escape>2024-12-25<escape>}<end_function_call><start_function_call>call:now{}<end_function_call>";

    fn both() -> Vec<(String, Value)> {
        vec![("get_weather".into(), json!({"city": "Paris, France", "date": "2024-12-25"})), ("now".into(), json!({}))]
    }

    #[test]
    fn gemma_calls_alone_after_prose_and_after_reasoning() {
        for two in [GEMMA4_TWO, FUNCTION_GEMMA_TWO] {
            assert_eq!(calls(two), both(), "{two}");
            let parsed = parse(two);
            assert_eq!((parsed.content.as_str(), parsed.warnings.len()), ("", 0), "{two}");
            let after_prose = format!("Let me check the weather for you. {two}");
            assert_eq!(calls(&after_prose), both());
            assert_eq!(parse(&after_prose).content, "Let me check the weather for you.");
        }
        let one_call = "<|tool_call>call:get_weather{city:<|\"|>London<|\"|>}<tool_call|>";
        assert_eq!(calls(one_call), one("get_weather", json!({"city": "London"})));
        let thought = "<|channel>thought\nThe user wants the weather; maybe <|tool_call>call:now{}<tool_call|> first? No.\n<channel|><|tool_call>call:get_weather{city:<|\"|>Oslo<|\"|>}<tool_call|>";
        assert_eq!(calls(thought), one("get_weather", json!({"city": "Oslo"})), "Gemma 4's thought channel is reasoning");
        let think = "<think>Weather first.</think><start_function_call>call:now{}<end_function_call>";
        assert_eq!(calls(think), one("now", json!({})));
        let after_a_result = "The file lists two names; <|tool_call>call:now{}<tool_call|> next?<channel|><|tool_call>call:get_weather{city:<|\"|>Oslo<|\"|>}<tool_call|>";
        assert_eq!(
            calls(after_a_result),
            one("get_weather", json!({"city": "Oslo"})),
            "the prompt after a tool's result opens the thought"
        );
        let separated = "<|tool_call>call:now{}<tool_call|>\n<|tool_call>call:get_weather{city:<|\"|>Rome<|\"|>}<tool_call|>";
        assert_eq!(calls(separated).len(), 2);
    }

    #[test]
    fn gemma_variants_the_engines_read() {
        let turn_end = "<|tool_call>call:get_weather{city:<|\"|>Lima<|\"|>}<turn|>";
        assert_eq!(calls(turn_end), one("get_weather", json!({"city": "Lima"})), "closed by the turn's end");
        assert_eq!(parse(turn_end).content, "");
        let stray_colon = "<|tool_call>:call:now{}";
        assert_eq!(calls(stray_colon), one("now", json!({})), "a stray colon, the closing token left out");
        let dotted = "<|tool_call>call:weather.get-now{}<tool_call|>";
        assert_eq!(calls(dotted), one("weather.get-now", json!({})));
        let quoted_key = "<|tool_call>call:now{<|\"|>zone<|\"|>:<|\"|>UTC<|\"|>}<tool_call|>";
        assert_eq!(calls(quoted_key), one("now", json!({"zone": "UTC"})));
        let spaced = "<start_function_call>call:now{ zone : <escape>UTC<escape> , }<end_function_call>";
        assert_eq!(calls(spaced), one("now", json!({"zone": "UTC"})));
    }

    #[test]
    fn gemma_values_are_typed_and_strings_kept_exactly() {
        let reply = "<|tool_call>call:forecast{city:<|\"|>42<|\"|>,days:3,ratio:0.5,metric:true,options:{hourly:true,fields:[<|\"|>rain<|\"|>,<|\"|>wind, gusts<|\"|>],x:null}}<tool_call|>";
        assert_eq!(
            Value::Object(checked(reply)),
            json!({"city": "42", "days": 3, "ratio": 0.5, "metric": true, "options": {"hourly": true, "fields": ["rain", "wind, gusts"], "x": null}})
        );
        let escaped = "<start_function_call>call:forecast{city:<escape>Rome<escape>,days:<escape>3<escape>,ratio:0.5,metric:<escape>true<escape>}<end_function_call>";
        assert_eq!(
            Value::Object(checked(escaped)),
            json!({"city": "Rome", "days": 3, "ratio": 0.5, "metric": true}),
            "escaped scalars typed by the schema"
        );
        let raw =
            "<|tool_call>call:calculate{code:<|\"|>if a < b { x = [1, 2]; }\n  \"quoted\" \\n<|\"|>,n:-1.5e3,x:none}<tool_call|>";
        assert_eq!(
            calls(raw),
            one("calculate", json!({"code": "if a < b { x = [1, 2]; }\n  \"quoted\" \\n", "n": "-1.5e3", "x": null}))
        );
        let rewritten = "<|tool_call>call:forecast{city:1.10,days:3}<tool_call|>";
        assert_eq!(
            Value::Object(checked(rewritten)),
            json!({"city": "1.10", "days": 3}),
            "a number a float would rewrite keeps its text"
        );
        let undeclared = "<|tool_call>call:calculate{x:12,y:<|\"|>12<|\"|>,z:abc}<tool_call|>";
        assert_eq!(calls(undeclared), one("calculate", json!({"x": 12, "y": "12", "z": "abc"})), "a quoted value stays text");
        let json_quoted = "<|tool_call>call:calculate{code:\"raw \\\"quoted\\\"\",\"note\":<|\"|>say \"hi\"<|\"|>}<tool_call|>";
        assert_eq!(
            calls(json_quoted),
            one("calculate", json!({"code": "raw \"quoted\"", "note": "say \"hi\""})),
            "JSON strings, as Ollama reads them"
        );
        let inner = "<|tool_call>call:calculate{code:<|\"|><tool_call|> and </parameter><|\"|>}<tool_call|>";
        assert_eq!(
            calls(inner),
            one("calculate", json!({"code": "<tool_call|> and </parameter>"})),
            "a value quoting markup keeps it"
        );
    }

    #[test]
    fn gemma4_calls_as_models_drift_from_the_template() {
        // vLLM issue #53642 and PR #53657: parentheses for braces.
        let round = "<|tool_call>call:terminal(command:<|\"|>ls -a<|\"|>)<tool_call|>";
        assert_eq!(calls(round), one("terminal", json!({"command": "ls -a"})));
        assert_eq!(parse(round).content, "");
        // jundot/omlx PR #1886: the Python-kwargs shell, `=` between key and value.
        let kwargs = "<|tool_call>call:get_weather(city=<|\"|>Paris<|\"|>, days=3)<tool_call|>";
        assert_eq!(calls(kwargs), one("get_weather", json!({"city": "Paris", "days": 3})));
        // sgl-project/sglang PR #39240: the opening quote token left out.
        let lone = "<|tool_call>call:get_weather{city:Paris, France<|\"|>,days:5}<tool_call|>";
        assert_eq!(calls(lone), one("get_weather", json!({"city": "Paris, France", "days": 5})));
        // A string whose closing quote token is left out ends at the
        // arguments' end.
        let open = "<|tool_call>call:get_weather{city:<|\"|>Oslo}<tool_call|>";
        assert_eq!(calls(open), one("get_weather", json!({"city": "Oslo"})));
        let named = "<|tool_call>call:获取天气{城市:<|\"|>北京<|\"|>}<tool_call|>";
        assert_eq!(calls(named), one("获取天气", json!({"城市": "北京"})), "a name in any script");
        no_calls(&["The call:now(x=1) syntax alone is no call.", "`<|tool_call>call:now()<tool_call|>`"]);
    }

    #[test]
    fn gemma4_calls_without_their_opening_token() {
        // vLLM's Gemma 4 parser tests: `call:NAME{…}` alone on a line, after
        // the reasoning's close, or behind a `<call>` fragment.
        for (reply, content) in [
            ("some prose\ncall:get_weather{city:<|\"|>Paris<|\"|>}", "some prose"),
            (
                "<|channel>thought\nI need the weather.\n<channel|>call:get_weather{city:<|\"|>Paris<|\"|>}",
                "<|channel>thought\nI need the weather.\n<channel|>",
            ),
            ("<call>get_weather{city:<|\"|>Paris<|\"|>}", ""),
            ("call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>", ""),
        ] {
            assert_eq!(calls(reply), one("get_weather", json!({"city": "Paris"})), "{reply}");
            assert_eq!(parse(reply).content, content, "{reply}");
        }
        // Glued one after another, and closed by `</call>`.
        let glued = "call:get_weather{city:<|\"|>Paris<|\"|>}call:now{}";
        assert_eq!(calls(glued), vec![("get_weather".into(), json!({"city": "Paris"})), ("now".into(), json!({}))]);
        assert_eq!(parse("<call>now{}</call>").content, "");
        // A `<call>` in prose that does not read is prose, not warned of.
        let prose = "Use <call>get_weather{city} in the template.";
        assert_eq!((calls(prose), warnings(prose)), (vec![], vec![]));
        // No token marks them: an undeclared tool's, one within a line of
        // prose or followed by it, indented as code, or in reasoning, is no
        // call.
        no_calls(&[
            "call:get_weather{city:<|\"|>Paris<|\"|>} then I answer.",
            "For example:\n\n    call:get_weather{city:<|\"|>Paris<|\"|>}\n",
            "call:delete_all{path:<|\"|>/<|\"|>}",
            "Gemma writes call:get_weather{city:<|\"|>Paris<|\"|>} then stops.",
            "<|channel>thought\ncall:get_weather{city:<|\"|>Paris<|\"|>}<channel|>",
            "`call:get_weather{city:<|\"|>Paris<|\"|>}`",
        ]);
    }

    #[test]
    fn a_cut_off_gemma_call_is_a_warning_not_a_call() {
        let cut = &GEMMA4_TWO[..GEMMA4_TWO.len() - "{}<tool_call|>".len() + 1];
        assert_eq!(
            calls(cut),
            one("get_weather", json!({"city": "Paris, France", "date": "2024-12-25"})),
            "only the complete call"
        );
        assert_eq!(warnings(cut), ["the call to `now` is cut off; it is not a call"]);
        let mid_value = "<start_function_call>call:get_weather{city:<escape>Par";
        assert_eq!(calls(mid_value), vec![]);
        assert_eq!(warnings(mid_value), ["the call to `get_weather` is cut off; it is not a call"]);
        let mid_name = "<|tool_call>call:get_wea";
        assert_eq!(
            (calls(mid_name), warnings(mid_name)),
            (vec![], vec!["the call to `get_wea` is cut off before its arguments; it is not a call".to_owned()])
        );
        let broken = "<|tool_call>call:now{zone UTC}<tool_call|>";
        assert_eq!(calls(broken), vec![]);
        assert_eq!(warnings(broken), ["the arguments of `now` are not Gemma's key:value pairs; it is not a call"]);
    }

    #[test]
    fn gemma_tokens_in_prose_or_code_are_not_calls() {
        no_calls(&[
            "Gemma 4 wraps each call in <|tool_call> and <tool_call|>.",
            "FunctionGemma writes `<start_function_call>call:delete_all{}<end_function_call>`.",
            "`<|tool_call>call:now{}<tool_call|>`",
            "```\n<|tool_call>call:delete_all{}<tool_call|>\n```",
            "<think><start_function_call>call:now{}<end_function_call></think>",
            "The call:now{} syntax alone is no call.",
        ]);
        prose("It opens with <|tool_call> first.");
        prose("It opens with <start_function_call> first, then call: and a name.");
        let fenced = "```\n<start_function_call>call:now{}<end_function_call>\n```";
        assert_eq!(calls(fenced).len(), 1, "a declared tool's call in a fenced block counts, as fenced JSON does");
    }
}
