//! Calls inside a family's envelope: a pair of tags or tokens around a body
//! in a format read elsewhere (JSON calls, pythonic calls):
//!
//! - AI21 Jamba and Tencent Hunyuan-A13B: `<tool_calls>[{"name", "arguments"}]</tool_calls>`,
//!   and MiniMax-M1: one `{"name", "arguments"}` object a line in it;
//! - Hermes-style JSON calls in the tags that llama.cpp's Hermes parser
//!   takes for `<tool_call>`, `<tools>` and `<function_call>`; IBM
//!   Granite-20B-FunctionCalling's `<function_call> {…}`, one before each
//!   call and none closing them;
//! - Tencent Hunyuan V3 as shipped: `<tool_calls:opensource>` around
//!   GLM-like calls whose every token has the `:opensource` suffix;
//! - NVIDIA Nemotron (Llama-3.1- and Nano-based): `<TOOLCALL>[…]</TOOLCALL>`;
//! - Meituan LongCat: `<longcat_tool_call>{…}</longcat_tool_call>`, the
//!   name and `<longcat_arg_key>K</longcat_arg_key><longcat_arg_value>V</longcat_arg_value>`
//!   for each argument, or the name and a JSON object;
//! - IBM Granite 3: `<|tool_call|>[{"name", "arguments"}]` (no closing token;
//!   `arguments` may come before `name`; a `<|/tool_call|>` after the array
//!   is no content);
//! - Glaive's function-calling data, and the fine-tunes trained on it:
//!   `<functioncall> {"name", "arguments"}` (no closing tag; the arguments
//!   often a single-quoted JSON string);
//! - InternLM2: `<|action_start|><|plugin|>{"name", "parameters"}<|action_end|>`;
//! - Swiss AI Apertus: `<|tools_prefix|>[{"NAME": {…}}]<|tools_suffix|>`, each
//!   call an object whose only key is the tool's name;
//! - GigaChat 3: `function call<|role_sep|>{"name", "arguments"}`, up to
//!   `<|message_sep|>` or the end, and GigaChat 3.1's
//!   `<|function_call|>{"name", "arguments"}`;
//! - AllenAI OLMo 3: `<function_calls>` and pythonic calls one per line;
//! - Liquid LFM2: `<|tool_call_start|>[f(a=1)]<|tool_call_end|>`, and
//!   MiniCPM3's pythonic calls fenced inside the same tokens
//!   (`<|tool_call_start|>` ```` ```python ```` …);
//! - Llama 4: `<|python_start|>[f(a=1)]<|python_end|>`.
//!
//! An envelope is explicit markup: any tool it names is called (in a fenced
//! block, only a declared one; in reasoning or inline code, none). A
//! closing token may be left out (it can be the stop token) when the body
//! is complete; a body the reply ends inside is a warning, not a call.

use super::super::ParsedCall;
use super::super::json_call::{self, Trust};
use super::super::lenient_json;
use super::super::scan::{Collector, Forward, find};
use super::super::xml_tag::TOOL_CALL;
use super::{Scope, gemma, glm, markup_name, object_at, pythonic};
use serde_json::{Map, Value};

/// What an envelope holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    /// A JSON call or array of calls.
    Json,
    /// An array of objects `{"NAME": {arguments}}`.
    NameKeyed,
    /// Pythonic calls, a list or one after another.
    Pythonic,
}

/// One family's envelope.
struct Envelope {
    open: &'static str,
    /// Empty when nothing closes it but the reply's end.
    close: &'static str,
    body: Body,
    /// Where `close` is empty: a token that may still follow the body, no
    /// content then (empty when none).
    late_close: &'static str,
    /// Calls only a declared tool: an envelope that a prompt uses for
    /// something else too (Hermes lists its tools' definitions in `<tools>`).
    declared_only: bool,
}

const fn envelope(open: &'static str, close: &'static str, body: Body) -> Envelope {
    Envelope { open, close, body, late_close: "", declared_only: false }
}

/// Opens LongCat's calls: JSON, or a name and GLM-like `longcat_` argument
/// tags ([`glm::LONGCAT`]).
const LONGCAT_TOOL_CALL: &str = "<longcat_tool_call>";
/// Opens Hunyuan V3's calls as its shipped tokenizer writes them:
/// `<tool_call:opensource>` elements of [`glm::HY3`] tags.
const HY3_TOOL_CALLS: &str = "<tool_calls:opensource>";
/// One of those calls, open and close.
const HY3_TOOL_CALL: (&str, &str) = ("<tool_call:opensource>", "</tool_call:opensource>");
/// Opens K2 Horizon's calls: `<ifm|tool_call>` elements of [`glm::IFM`]
/// tags, or of JSON.
const IFM_TOOL_CALLS: &str = "<ifm|tool_calls>";
/// One of those calls, open and close.
const IFM_TOOL_CALL: (&str, &str) = ("<ifm|tool_call>", "</ifm|tool_call>");
/// An envelope whose calls each stand in an element of their own.
struct CallElements {
    /// The envelope's opening tag.
    section: &'static str,
    /// Each call's element, open and close.
    call: (&'static str, &'static str),
    /// The tags of the calls written as GLM's.
    tags: &'static glm::ArgTags,
}
/// Hunyuan V3's and K2 Horizon's.
const CALL_ELEMENTS: [CallElements; 2] = [
    CallElements { section: HY3_TOOL_CALLS, call: HY3_TOOL_CALL, tags: &glm::HY3 },
    CallElements { section: IFM_TOOL_CALLS, call: IFM_TOOL_CALL, tags: &glm::IFM },
];
/// The envelopes that open with a tag (`<name>`).
const TAGS: [Envelope; 9] = [
    envelope("<tool_calls>", "</tool_calls>", Body::Json),
    Envelope { declared_only: true, ..envelope("<tools>", "</tools>", Body::Json) },
    envelope("<function_call>", "</function_call>", Body::Json),
    envelope("<TOOLCALL>", "</TOOLCALL>", Body::Json),
    envelope(LONGCAT_TOOL_CALL, "</longcat_tool_call>", Body::Json),
    envelope("<function_calls>", "</function_calls>", Body::Pythonic),
    envelope(HY3_TOOL_CALLS, "</tool_calls:opensource>", Body::Json),
    envelope("<functioncall>", "", Body::Json),
    envelope(IFM_TOOL_CALLS, "</ifm|tool_calls>", Body::Json),
];
/// The envelopes read because models stray into them (llama.cpp takes them
/// for Hermes'): around `<tool_call>` elements they are left to
/// [`super::wrappers`], which leaves them out only once calls are read.
const STRAYS: [&str; 2] = [TAGS[1].open, TAGS[2].open];
/// The envelopes that open with a chat-template token (`<|…|>`).
const TOKENS: [Envelope; 6] = [
    Envelope { late_close: "<|/tool_call|>", ..envelope("<|tool_call|>", "", Body::Json) },
    envelope("<|function_call|>", "", Body::Json),
    envelope("<|action_start|><|plugin|>", "<|action_end|>", Body::Json),
    envelope("<|tools_prefix|>", "<|tools_suffix|>", Body::NameKeyed),
    envelope("<|tool_call_start|>", "<|tool_call_end|>", Body::Pythonic),
    envelope("<|python_start|>", "<|python_end|>", Body::Pythonic),
];
/// GigaChat's envelope: the role separator after `function call`.
const GIGACHAT: Envelope = envelope("<|role_sep|>", "<|message_sep|>", Body::Json);
/// What GigaChat writes before its role separator in a call.
const GIGACHAT_ROLE: &str = "function call";
/// Every marker this module reads.
pub(crate) const MARKERS: [&str; 34] = [
    TAGS[0].open,
    TAGS[0].close,
    TAGS[1].open,
    TAGS[1].close,
    TAGS[2].open,
    TAGS[2].close,
    TAGS[3].open,
    TAGS[3].close,
    TAGS[4].open,
    TAGS[4].close,
    TAGS[5].open,
    TAGS[5].close,
    TAGS[6].open,
    TAGS[6].close,
    TAGS[7].open,
    HY3_TOOL_CALL.0,
    HY3_TOOL_CALL.1,
    TAGS[8].open,
    TAGS[8].close,
    IFM_TOOL_CALL.0,
    IFM_TOOL_CALL.1,
    TOKENS[0].open,
    TOKENS[0].late_close,
    TOKENS[1].open,
    TOKENS[2].open,
    TOKENS[2].close,
    TOKENS[3].open,
    TOKENS[3].close,
    TOKENS[4].open,
    TOKENS[4].close,
    TOKENS[5].open,
    TOKENS[5].close,
    GIGACHAT.open,
    GIGACHAT.close,
];

/// Every tag envelope outside reasoning, and FunctionGemma's calls, in one
/// pass over the `<`s.
pub(super) fn scan_tags(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let reply = scope.reply;
    let mut ends = TAGS.map(|envelope| Ends::new(reply, &envelope));
    let mut at = 0;
    while let Some(found) = scope.markers.find(at, "<") {
        at = found + 1;
        if let Some(end) = scope.reasoning.skip(found) {
            at = end;
            continue;
        }
        if let Some(i) = TAGS.iter().position(|e| reply[found..].starts_with(e.open)) {
            at = read(scope, found, found + TAGS[i].open.len(), &TAGS[i], &mut ends[i], out);
        } else if reply[found..].starts_with(gemma::FUNCTION_GEMMA.open) {
            // Read in this pass, so that prose costs no search of its own.
            at = gemma::read(scope, found, &gemma::FUNCTION_GEMMA, out);
        }
    }
}

/// Reads the token envelopes where the chat-token scan finds them.
pub(super) struct Reader<'a> {
    ends: [Ends<'a>; 6],
    gigachat: Ends<'a>,
}

impl<'a> Reader<'a> {
    pub(super) fn new(reply: &'a str) -> Self {
        Reader { ends: TOKENS.map(|envelope| Ends::new(reply, &envelope)), gigachat: Ends::new(reply, &GIGACHAT) }
    }

    /// The token envelope at `found`, where the chat-token scan stands on
    /// a `<|`: where reading stopped, or `None` when none opens there.
    pub(super) fn read(&mut self, scope: &Scope<'_>, found: usize, out: &mut Collector<'_>) -> Option<usize> {
        let rest = &scope.reply[found..];
        if let Some(i) = TOKENS.iter().position(|e| rest.starts_with(e.open)) {
            return Some(read(scope, found, found + TOKENS[i].open.len(), &TOKENS[i], &mut self.ends[i], out));
        }
        let role = found.checked_sub(GIGACHAT_ROLE.len()).filter(|&r| scope.reply.is_char_boundary(r))?;
        (rest.starts_with(GIGACHAT.open) && scope.reply[role..found] == *GIGACHAT_ROLE).then_some(())?;
        // The message separator that ends the prose before the call is no
        // prose either.
        // Its own markup, not the call's span: the call before may end
        // after that separator already.
        let start = scope.reply[..role].trim_end().strip_suffix(GIGACHAT.close).map_or(role, str::len);
        if start < role {
            out.markup(start..role);
        }
        Some(read(scope, role, found + GIGACHAT.open.len(), &GIGACHAT, &mut self.gigachat, out))
    }
}

/// A call written as the tool's name and its arguments' JSON object
/// (`<longcat_tool_call>get_weather {"city": "Paris"}</longcat_tool_call>`,
/// as GLM-4 writes its calls, and GLM 4.7 strays into inside its
/// `<tool_call>`), the body `at..body_end` and the envelope `open..end`:
/// where reading stopped, `None` when the body is not so.
pub(super) fn read_named_json(
    scope: &Scope<'_>,
    open: usize,
    at: usize,
    body_end: usize,
    end: usize,
    out: &mut Collector<'_>,
) -> Option<usize> {
    let reply = scope.reply;
    let brace = at + reply[at..body_end].find('{')?;
    let name = markup_name(&reply[at..brace])?;
    let (arguments, after) = object_at(reply, brace, out)?;
    // The object must end in the body: one whose string holds the closing
    // tag runs past it (found by fuzzing).
    if !reply.get(after..body_end).is_some_and(|rest| rest.trim_start().is_empty()) {
        return None;
    }
    if scope.markup_calls(open, name) {
        out.call(ParsedCall { id: None, name: name.to_owned(), arguments, reserved: Map::new(), span: open..end });
    }
    Some(end)
}

/// How many times its length a reply is looked through, at most, for
/// closes past quoted ones, by one family's envelopes.
const QUOTED_CLOSE_BUDGET: usize = 4;

/// Where one family's envelopes end, in one reply.
struct Ends<'a> {
    /// Finds the closing token.
    close: Forward<'a>,
    /// The close to which a body was last read whole, past a retry or a
    /// quoted close (see [`read`]): each close is read to so once.
    read_whole_to: Option<usize>,
    /// What is left to spend looking for closes past quoted ones
    /// ([`pythonic::quoted_close`]).
    quoted_close_budget: usize,
}

impl<'a> Ends<'a> {
    fn new(reply: &'a str, envelope: &Envelope) -> Self {
        Ends {
            close: Forward::new(reply, envelope.close),
            read_whole_to: None,
            quoted_close_budget: QUOTED_CLOSE_BUDGET * reply.len(),
        }
    }
}

/// The envelope opened at `open` whose body starts at `body`: its calls
/// collected, and where reading stopped. `ends` finds its closing token;
/// when there is none, reading ends with the reply (or where the envelope
/// opens again, see `retry`) whether or not the body holds calls, so that
/// no unclosed envelope is read twice.
fn read(scope: &Scope<'_>, open: usize, body: usize, envelope: &Envelope, ends: &mut Ends<'_>, out: &mut Collector<'_>) -> usize {
    let reply = scope.reply;
    let Some(trust) = scope.markup_trust(open) else { return body };
    let trust = if envelope.declared_only { Trust::Declared } else { trust };
    let kind = body_kind(envelope, &reply[body..]);
    let close = if envelope.close.is_empty() { None } else { ends.close.next(body) };
    // A JSON body's close may stand in one of its strings: the close is
    // the one after the value.
    let close = match close {
        Some(first) if matches!(kind, Body::Json | Body::NameKeyed) && call_elements(envelope).is_none() => {
            Some(lenient_json::close_after_value(reply, body, envelope.close).map_or(first, |after| after.max(first)))
        }
        close => close,
    };
    // A model that retries a cut-off call opens the envelope again before
    // any close. Where reading a body may run on to its close, the body
    // ends at that retry: else each opener nested in it would be read to
    // the same close, in quadratic time (found by fuzzing).
    let limit = close.unwrap_or(reply.len());
    let retry = ends_at_retry(envelope, kind, &reply[body..limit])
        .then(|| reply[body..limit].find(envelope.open))
        .flatten()
        .map(|at| body + at);
    // Unless the whole body, to the close, is calls with strings as Python
    // writes them: then the opener is quoted in a string. So is a close
    // that a string holds, when a close outside strings follows. Tried once
    // per close, by the outermost opener, so that the time stays linear.
    if let Some(first) = close
        && kind == Body::Pythonic
        && ends.read_whole_to != Some(first)
    {
        ends.read_whole_to = Some(first);
        let quoted = pythonic::quoted_close(reply, body, first, (envelope.open, envelope.close), &mut ends.quoted_close_budget);
        let whole = quoted.or(retry.map(|_| first));
        if let Some(whole) = whole {
            let end = whole + envelope.close.len();
            if let Some(calls) = strict_pythonic(scope, open, body, whole, end, trust, out) {
                out.calls(open..end, calls);
                return end;
            }
        }
    }
    let (body_end, end) = match (retry, close) {
        (Some(retry), _) => (retry, retry),
        (None, Some(close)) => (close, close + envelope.close.len()),
        (None, None) => (reply.len(), reply.len()),
    };
    let closed = retry.is_none() && close.is_some();
    // MiniCPM3 fences its pythonic calls inside its envelope
    // (```` ```python ````), and models fence JSON inside others: the calls
    // are the fence's inside.
    let (body, body_end, kind) = match super::inside_fence(&reply[body..body_end], body) {
        Some((inner, at)) if closed => (at, at + inner.len(), body_kind(envelope, inner)),
        _ => (body, body_end, kind),
    };
    let text = reply[body..body_end].trim_start();
    if envelope.open == LONGCAT_TOOL_CALL && glm::opens_call(text, &glm::LONGCAT) {
        if !closed {
            out.warn(open, format!("the call after {LONGCAT_TOOL_CALL} is cut off; it is not a call"));
            return past_a_retry(open, retry, out).unwrap_or(end);
        }
        glm::read(scope, body_end - text.len(), body_end, open..end, &glm::LONGCAT, out);
        return end;
    }
    if envelope.open == LONGCAT_TOOL_CALL && (closed || retry.is_some()) {
        if let Some(end) = read_named_json(scope, open, body_end - text.len(), body_end, end, out) {
            return end;
        }
        if retry.is_some() && text.find('{').is_some_and(|brace| markup_name(&text[..brace]).is_some()) {
            out.warn(open, format!("the call after {LONGCAT_TOOL_CALL} is cut off; it is not a call"));
            return past_a_retry(open, retry, out).unwrap_or(end);
        }
    }
    if let Some(elements) = call_elements(envelope) {
        let stopped = read_elements(scope, elements, trust, (open, body, body_end, end), out);
        return match retry {
            Some(_) if stopped == body && text.starts_with(elements.call.0) => past_a_retry(open, retry, out).unwrap_or(end),
            _ => stopped,
        };
    }
    let opens = match kind {
        Body::Pythonic => pythonic::opens_call(text),
        Body::Json | Body::NameKeyed => text.starts_with(['{', '[']),
    };
    if !opens {
        // Hunyuan V3's `<tool_call>` elements, read by the `<tool_call>`
        // scan: the envelope around them is no content. Else the
        // envelope's token quoted in prose.
        if text.starts_with(TOOL_CALL.0) && closed && trust == Trust::Explicit && !STRAYS.contains(&envelope.open) {
            out.markup(open..body);
            out.markup(body_end..end);
        }
        return body;
    }
    // No calls, said in markup (Nemotron's `<TOOLCALL>[]</TOOLCALL>`):
    // structure, not prose.
    if closed && trust == Trust::Explicit && text.strip_prefix('[').is_some_and(|rest| rest.trim() == "]") {
        out.markup(open..end);
        return end;
    }
    let calls = match kind {
        Body::Pythonic => {
            let callable = |name: &str| trust == Trust::Explicit || scope.declared.contains(name);
            pythonic::sequence(reply, body, body_end, callable, pythonic::Strings::Loose, out).map(|calls| {
                calls
                    .into_iter()
                    .map(|(name, arguments)| ParsedCall { id: None, name, arguments, reserved: Map::new(), span: open..end })
                    .collect()
            })
        }
        Body::Json | Body::NameKeyed => match lenient_json::parse_prefix(&reply[body..body_end]) {
            Ok((value, used, repairs)) if reply[body + used..body_end].trim_start().is_empty() => {
                json_call::report(&repairs, body, out);
                Some(json_calls(value, kind, open..end, trust, scope, out))
            }
            // Several calls one after another in a closed envelope (MiniMax-M1
            // writes one a line), each of them a call: else an object among
            // them (a note) would be lost from the content. Unclosed, the
            // first is read as below, with what follows as prose.
            Ok((first @ Value::Object(_), used, repairs))
                if closed && let Some(more) = objects_to(reply, body + used, body_end) =>
            {
                let objects = std::iter::once((body, first, repairs)).chain(more);
                let mut calls = Vec::new();
                let mut tried = Collector::new(reply);
                let every_one_a_call = objects.into_iter().all(|(at, object, repairs)| {
                    json_call::report(&repairs, at, &mut tried);
                    let found = json_calls(object, kind, open..end, trust, scope, &mut tried);
                    let a_call = !found.is_empty();
                    calls.extend(found);
                    a_call
                });
                if every_one_a_call {
                    for warning in tried.calls_and_warnings().1 {
                        out.warn(warning.offset, warning.message);
                    }
                    Some(calls)
                } else {
                    out.warn(body, format!("text follows the calls after {}; it is not a call", envelope.open));
                    None
                }
            }
            Ok((value, used, repairs)) if !closed => {
                // The closing token left out, and prose after the calls.
                json_call::report(&repairs, body, out);
                let end = late_close_end(reply, body + used, body_end, envelope);
                let calls = json_calls(value, kind, open..end, trust, scope, out);
                if !calls.is_empty() {
                    out.calls(open..end, calls);
                    return end;
                }
                None
            }
            Ok(_) => {
                out.warn(body, format!("text follows the calls after {}; it is not a call", envelope.open));
                None
            }
            Err(_) if !closed => {
                out.warn(open, format!("the calls after {} are cut off; they are not calls", envelope.open));
                None
            }
            Err(e) => {
                out.warn(body + e.offset, format!("the calls after {} are not JSON: {}", envelope.open, e.message));
                None
            }
        },
    };
    match calls {
        Some(calls) if !calls.is_empty() => {
            out.calls(open..end, calls);
            end
        }
        // Only an attempt cut off is the retry's: prose that names the
        // opener ("OLMo writes <function_calls> then f(x)…") stays prose.
        _ if retry.is_some() && kind == Body::Pythonic && !pythonic::cut_off(reply, body, body_end) => body,
        // An envelope that is never closed reads on after its opener, as a
        // closed one does: else one holding no calls hid every envelope
        // after it.
        _ if !closed && !envelope.close.is_empty() => past_a_retry(open, retry, out).unwrap_or(end),
        // Closed pythonic calls that cannot be read are read no further:
        // a bare list read from inside them ran on across the envelopes
        // after, and made one call of their texts (found by a probe).
        _ if kind == Body::Pythonic => end,
        _ => body,
    }
}

/// What the body starting at `body` holds: as the envelope says, but for
/// JSON calls in a pythonic envelope, which Llama 4 and LFM2 write there
/// when their prompt asks for JSON.
fn body_kind(envelope: &Envelope, body: &str) -> Body {
    let text = body.trim_start();
    let json = text.starts_with('{') || text.strip_prefix('[').is_some_and(|items| items.trim_start().starts_with('{'));
    if envelope.body == Body::Pythonic && json { Body::Json } else { envelope.body }
}

/// The JSON objects that follow one another, apart by white space, from
/// `at` to `end` and nothing else: each with where it starts and its
/// repairs. `None` when anything else stands there, or nothing.
fn objects_to(reply: &str, mut at: usize, end: usize) -> Option<Vec<(usize, Value, Vec<lenient_json::Repair>)>> {
    let mut objects = Vec::new();
    loop {
        at = end - reply[at..end].trim_start().len();
        if at == end {
            return (!objects.is_empty()).then_some(objects);
        }
        match lenient_json::parse_prefix(&reply[at..end]) {
            Ok((value @ Value::Object(_), used, repairs)) => {
                objects.push((at, value, repairs));
                at += used;
            }
            _ => return None,
        }
    }
}

/// Where the calls that end at `after` end with the envelope's late close,
/// if it follows them (before `body_end`), else `after`.
fn late_close_end(reply: &str, after: usize, body_end: usize, envelope: &Envelope) -> usize {
    let rest = &reply[after..body_end];
    let text = rest.trim_start();
    match envelope.late_close {
        "" => after,
        late_close if text.starts_with(late_close) => after + (rest.len() - text.len()) + late_close.len(),
        _ => after,
    }
}

/// The pythonic calls of the whole body `body..close` of the envelope
/// `open..end`, read with strict strings: `None` unless it is all calls.
fn strict_pythonic(
    scope: &Scope<'_>,
    open: usize,
    body: usize,
    close: usize,
    end: usize,
    trust: Trust,
    out: &mut Collector<'_>,
) -> Option<Vec<ParsedCall>> {
    let callable = |name: &str| trust == Trust::Explicit || scope.declared.contains(name);
    // Warned of only if it is calls: else the retry is read, and warned of.
    let mut tried = Collector::new(scope.reply);
    let calls = pythonic::sequence(scope.reply, body, close, callable, pythonic::Strings::Strict, &mut tried)
        .filter(|calls| !calls.is_empty())?;
    for warning in tried.calls_and_warnings().1 {
        out.warn(warning.offset, warning.message);
    }
    let call = |(name, arguments)| ParsedCall { id: None, name, arguments, reserved: Map::new(), span: open..end };
    Some(calls.into_iter().map(call).collect())
}

/// Past an attempt cut off by the envelope's `retry`, which is markup, not
/// prose: else a reader of bare calls could read the attempt and the retry
/// together as one call.
fn past_a_retry(open: usize, retry: Option<usize>, out: &mut Collector<'_>) -> Option<usize> {
    let retry = retry?;
    out.markup(open..retry);
    Some(retry)
}

/// Whether the envelope whose body (to its close, or the reply's end) is
/// `body` ends where it opens again: a body of pythonic calls or of
/// GLM-like tags, whose reading may run on to the close. A JSON body's
/// reading stops at the nested opener's `<`, and a JSON string may quote
/// the opener.
fn ends_at_retry(envelope: &Envelope, kind: Body, body: &str) -> bool {
    match kind {
        Body::Pythonic => true,
        Body::Json if envelope.open == LONGCAT_TOOL_CALL => !body.trim_start().starts_with(['{', '[']),
        _ => call_elements(envelope).is_some(),
    }
}

/// How `envelope` holds its calls, when each stands in an element.
fn call_elements(envelope: &Envelope) -> Option<&'static CallElements> {
    CALL_ELEMENTS.iter().find(|elements| elements.section == envelope.open)
}

/// The calls in the envelope opened at `open`, whose body is
/// `body..body_end` and which ends at `end`: each of its call elements read
/// as GLM's, with its family's tags, or as JSON; the envelope's tokens are
/// no content. Where reading stopped.
fn read_elements(
    scope: &Scope<'_>,
    elements: &CallElements,
    trust: Trust,
    (open, body, body_end, end): (usize, usize, usize, usize),
    out: &mut Collector<'_>,
) -> usize {
    let within = &scope.reply[..body_end];
    let (call_open, call_close) = elements.call;
    let mut at = body;
    let calls_before = out.len();
    let mut read_any = false;
    // White space between the calls is the envelope's, no content.
    let mut gaps = Vec::new();
    while let Some(call) = find(within, at, call_open) {
        let text = call + call_open.len();
        let Some(close) = find(within, text, call_close) else {
            out.warn(call, format!("{call_open} is not closed; it is not a call"));
            break;
        };
        let start = text + (within[text..close].len() - within[text..close].trim_start().len());
        if within[at..call].trim().is_empty() {
            gaps.push(at..call);
        }
        at = close + call_close.len();
        if within[start..close].starts_with('{') {
            json_call::collect_text(&within[start..close], start, call..at, trust, scope.declared, out);
        } else {
            glm::read(scope, start, close, call..at, elements.tags, out);
        }
        read_any = true;
    }
    if !read_any {
        // The envelope's token quoted in prose.
        return body;
    }
    if out.len() == calls_before {
        // None of its calls is one (an undeclared tool's, in a fence): the
        // envelope stays as it was written.
        return end;
    }
    for gap in gaps {
        out.markup(gap);
    }
    out.markup(open..body);
    let rest = if within[at..].trim().is_empty() { at } else { body_end };
    out.markup(rest..end);
    end
}

/// The calls in a JSON body.
fn json_calls(
    value: Value,
    body: Body,
    span: std::ops::Range<usize>,
    trust: Trust,
    scope: &Scope<'_>,
    out: &mut Collector<'_>,
) -> Vec<ParsedCall> {
    if body == Body::NameKeyed
        && let Some(calls) = name_keyed(&value, &span)
    {
        return calls.into_iter().filter(|call| trust == Trust::Explicit || scope.declared.contains(&call.name)).collect();
    }
    let mut inner = Collector::new(scope.reply);
    json_call::collect_value(value, span, trust, scope.declared, &mut inner);
    let (calls, warnings) = inner.calls_and_warnings();
    for warning in warnings {
        out.warn(warning.offset, warning.message);
    }
    calls
}

/// Apertus's calls, `[{"NAME": {arguments}}, …]`: every item an object
/// with one key, a tool's name, and an object as its value.
fn name_keyed(value: &Value, span: &std::ops::Range<usize>) -> Option<Vec<ParsedCall>> {
    let items = match value {
        Value::Array(items) => items.as_slice(),
        single => std::slice::from_ref(single),
    };
    items
        .iter()
        .map(|item| {
            let object = item.as_object().filter(|o| o.len() == 1)?;
            let (name, arguments) = object.iter().next()?;
            let name = markup_name(name).filter(|n| *n != "name")?;
            let arguments = arguments.as_object()?.clone();
            Some(ParsedCall { id: None, name: name.to_owned(), arguments, reserved: Map::new(), span: span.clone() })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::testing::{calls, checked, no_calls, one, parse, prose, warnings};
    use serde_json::{Value, json};

    fn both() -> Vec<(String, Value)> {
        vec![("get_weather".into(), json!({"city": "Paris"})), ("undeclared_tool".into(), json!({}))]
    }

    /// Each family's envelope around two calls, the second to a tool that
    /// is not declared (the envelope says they are calls).
    const TWO_CALLS: [&str; 15] = [
        "<function_call>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"undeclared_tool\", \"arguments\": {}}]</function_call>",
        // Granite-20B-FunctionCalling: an opener before each call, none closing.
        "<function_call> {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}} <function_call> {\"name\": \"undeclared_tool\", \"arguments\": {}}",
        // MiniMax-M1: one call a line.
        "<tool_calls>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n{\"name\": \"undeclared_tool\", \"arguments\": {}}\n</tool_calls>",
        "<functioncall> [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"undeclared_tool\", \"arguments\": {}}]",
        "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"undeclared_tool\", \"arguments\": {}}]<|/tool_call|>",
        "<tool_calls>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"undeclared_tool\", \"arguments\": {}}]</tool_calls>",
        "<TOOLCALL>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"undeclared_tool\", \"arguments\": {}}]</TOOLCALL>",
        "<longcat_tool_call>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"undeclared_tool\", \"arguments\": {}}]</longcat_tool_call>",
        "<function_calls>\nget_weather(city=\"Paris\")\nundeclared_tool()\n</function_calls>",
        "<|tool_call|>[{\"arguments\": {\"city\": \"Paris\"}, \"name\": \"get_weather\"}, {\"arguments\": {}, \"name\": \"undeclared_tool\"}]",
        "<|action_start|><|plugin|>\n[{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}, {\"name\": \"undeclared_tool\", \"parameters\": {}}]<|action_end|>",
        "<|tools_prefix|>[{\"get_weather\": {\"city\": \"Paris\"}}, {\"undeclared_tool\": {}}]<|tools_suffix|>",
        "function call<|role_sep|>\n[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"undeclared_tool\", \"arguments\": {}}]",
        "<|tool_call_start|>[get_weather(city=\"Paris\"), undeclared_tool()]<|tool_call_end|>",
        "<|python_start|>[get_weather(city='Paris'), undeclared_tool()]<|python_end|>",
    ];

    #[test]
    fn an_envelope_of_no_calls_is_no_content() {
        // dynamo's parser tests: Nemotron saying it makes no call.
        for reply in ["<TOOLCALL>[]</TOOLCALL>", "<tool_calls>[ ]</tool_calls>", "Done.\n<TOOLCALL>[]</TOOLCALL>"] {
            let parsed = parse(reply);
            assert_eq!(
                (parsed.calls.len(), parsed.content.trim_end()),
                (0, reply.split('<').next().unwrap().trim_end()),
                "{reply}"
            );
            assert!(parsed.warnings.is_empty(), "{reply}: {:?}", parsed.warnings);
        }
        // Quoted in prose, it stays.
        prose("Nemotron writes `<TOOLCALL>[]</TOOLCALL>` when it calls nothing.");
    }

    #[test]
    fn calls_one_after_another_are_calls_only_when_nothing_else_stands_between() {
        // (An undeclared tool: a declared one is still read as bare JSON.)
        let reply = "<tool_calls>\n{\"name\": \"search\", \"arguments\": {}}\nThen I answer.\n</tool_calls>";
        assert_eq!((calls(reply), warnings(reply).len()), (vec![], 1), "{reply}");
        let reply = "<function_call>{\"name\": \"search\", \"arguments\": {}} [1]</function_call>";
        assert_eq!((calls(reply), warnings(reply).len()), (vec![], 1), "{reply}");
        // An object that is no call among them: nothing is lost from the
        // content, and it is said why.
        let reply =
            "<tool_calls>\n{\"name\": \"search\", \"arguments\": {}}\n{\"note\": \"The forecast is unreliable.\"}\n</tool_calls>";
        assert_eq!((calls(reply), warnings(reply).len()), (vec![], 1), "{reply}");
        assert!(parse(reply).content.contains("unreliable"), "{reply}");
        // Unclosed, the first call is still read, the rest prose.
        let reply = "<functioncall> {\"name\": \"search\", \"arguments\": {\"q\": \"x\"}} {\"note\": 1}";
        assert_eq!(calls(reply), one("search", json!({"q": "x"})), "{reply}");
        // Tool definitions, as a prompt lists them, are no calls.
        let listed = "<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {\"type\": \"object\", \"properties\": {}}}}\n</tools>";
        assert_eq!(calls(listed), vec![], "{listed}");
        for listed in [
            "Hermes lists tools like <tools>{\"name\": \"delete_all\", \"description\": \"Deletes everything\"}</tools>.",
            "<tools>{\"type\": \"function\", \"function\": {\"name\": \"now\", \"description\": \"The time\"}}</tools>",
            "{\"type\": \"function\", \"name\": \"now\", \"description\": \"The time\"}",
        ] {
            assert_eq!(calls(listed), vec![], "{listed}");
        }
        // `<tools>` calls only declared tools: Hermes' prompt lists its
        // tools in it.
        let reply = "<tools>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n{\"name\": \"undeclared_tool\", \"arguments\": {}}\n</tools>";
        assert_eq!(calls(reply), one("get_weather", json!({"city": "Paris"})), "{reply}");
        // Around `<tool_call>` elements that are no calls, a stray envelope
        // stays prose.
        let prose = "Write them as <tools><tool_call>…</tool_call></tools>, not otherwise.";
        assert_eq!(parse(prose).content, prose);
        no_calls(&["Hermes lists its tools in `<tools>{\"name\": \"get_weather\", \"arguments\": {}}</tools>`."]);
    }

    #[test]
    fn an_unclosed_envelope_without_calls_hides_no_envelope_after_it() {
        let later = "<tool_calls>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]</tool_calls>";
        for first in
            ["<functioncall> {\"note\": 1}", "<functioncall> {\"name\": ", "<|tool_call|>[1, 2]", "<functioncall> {bad json"]
        {
            let reply = format!("{first}\n{later}");
            assert_eq!(calls(&reply), one("get_weather", json!({"city": "Paris"})), "{reply}");
        }
    }

    #[test]
    fn a_late_close_is_markup_only_right_after_the_calls() {
        let closed =
            "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}] \n<|/tool_call|>It is sunny.";
        assert_eq!(calls(closed), one("get_weather", json!({"city": "Paris"})));
        assert_eq!(parse(closed).content, "It is sunny.");
        // Prose between: the token is not the envelope's.
        let apart = "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}] Then <|/tool_call|>";
        assert_eq!(parse(apart).content, "Then <|/tool_call|>");
        // Glaive's envelope has no close; what follows the object is prose.
        let glaive = "<functioncall> {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}} Checking now.";
        assert_eq!(
            (calls(glaive), parse(glaive).content),
            (one("get_weather", json!({"city": "Paris"})), "Checking now.".to_owned())
        );
        prose("Glaive's data writes `<functioncall>` before a call.");
    }

    #[test]
    fn each_envelope_alone_after_prose_and_after_reasoning() {
        for reply in TWO_CALLS {
            assert_eq!(calls(reply), both(), "{reply}");
            let parsed = parse(reply);
            assert_eq!((parsed.content.as_str(), parsed.warnings.len()), ("", 0), "{reply}: {:?}", parsed.warnings);
            let after = format!("<think>The weather.</think>\nLet me check.\n{reply}");
            assert_eq!(calls(&after), both(), "{after}");
            assert_eq!(parse(&after).content, "<think>The weather.</think>\nLet me check.", "{after}");
        }
    }

    #[test]
    fn gigachat_calls_after_prose_as_its_templates_write_them() {
        let call = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}";
        for reply in [
            format!("I'll check that for you.<|message_sep|>\n\nfunction call<|role_sep|>\n{call}"),
            format!("I'll check that for you.<|message_sep|>\n\nfunction call<|role_sep|>\n{call}</s>"),
            format!("I'll check that for you.<|function_call|>{call}"),
            format!("I'll check that for you.<|function_call|>{call}</s>"),
        ] {
            assert_eq!(calls(&reply), one("get_weather", json!({"city": "Paris"})), "{reply}");
            assert_eq!(parse(&reply).content, "I'll check that for you.", "{reply}");
        }
        let undeclared = "<|function_call|>{\"name\": \"manage_user_memory\", \"arguments\": {\"action\": \"create\"}}";
        assert_eq!(calls(undeclared), one("manage_user_memory", json!({"action": "create"})), "explicit markup");
        assert_eq!(calls("<|function_call|>{\"name\": \"now\", \"argu"), vec![], "cut off");
        no_calls(&["GigaChat 3.1 writes `<|function_call|>{\"name\": \"delete_all\", \"arguments\": {}}`."]);
        let two = "function call<|role_sep|>\n{\"name\":\"now\",\"arguments\":{}}<|message_sep|>\n\nfunction call<|role_sep|>\n{\"name\":\"get_weather\",\"arguments\":{}}";
        assert_eq!(calls(two).len(), 2, "a separator that ends one call and precedes the next keeps both");
    }

    #[test]
    fn json_calls_in_a_pythonic_envelope_as_llama_4_and_lfm2_write_them_when_asked() {
        for reply in [
            "<|python_start|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|python_end|>",
            "<|tool_call_start|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]<|tool_call_end|>",
            "<|tool_call_start|>[ {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris <|tool_call_end|>\"}} ]<|tool_call_end|>",
        ] {
            let city = if reply.contains("Paris <") { "Paris <|tool_call_end|>" } else { "Paris" };
            assert_eq!(calls(reply), one("get_weather", json!({"city": city})), "{reply}");
            assert_eq!((parse(reply).content.as_str(), warnings(reply)), ("", vec![]), "{reply}");
        }
    }

    #[test]
    fn minicpm3_fences_its_pythonic_calls_inside_the_tokens() {
        let reply = "<|thought_start|>\nI need the weather.\n<|thought_end|>\n<|tool_call_start|>\n```python\nget_weather(city=\"Paris\")\nnow()\n```\n<|tool_call_end|>";
        assert_eq!(calls(reply), vec![("get_weather".to_owned(), json!({"city": "Paris"})), ("now".to_owned(), json!({}))]);
        assert_eq!(parse(reply).content, "<|thought_start|>\nI need the weather.\n<|thought_end|>");
        let json = "<|tool_call_start|>\n```json\n[{\"name\": \"now\", \"arguments\": {}}]\n```\n<|tool_call_end|>";
        assert_eq!(calls(json), one("now", json!({})));
        // JSON fenced inside a JSON envelope, any tool's, as markup calls.
        let fenced = "<tool_calls>\n```json\n[{\"name\": \"lookup_order\", \"arguments\": {\"id\": 7}}]\n```\n</tool_calls>";
        assert_eq!(calls(fenced), one("lookup_order", json!({"id": 7})));
        assert_eq!(parse(fenced).content, "");
        // Unclosed, the fence is not known to be the whole body.
        assert_eq!(calls("<|tool_call_start|>\n```python\nnow()\n```"), vec![]);
    }

    #[test]
    fn single_calls_and_left_out_closing_tokens() {
        for reply in [
            "<tool_calls>{\"name\": \"now\", \"arguments\": {}}</tool_calls>",
            "<longcat_tool_call>{\"name\": \"now\", \"arguments\": {}}</longcat_tool_call>",
            "<|tool_call|>{\"name\": \"now\", \"arguments\": {}}",
            "<|action_start|><|plugin|>\n{\"name\": \"now\", \"parameters\": {}}",
            "function call<|role_sep|>\n{\"name\": \"now\", \"arguments\": {}}<|message_sep|>",
            "<function_calls>now()</function_calls>",
            "<|python_start|>now()<|python_end|>",
            "<|tool_call_start|>[now()]",
            "<|tools_prefix|>[{\"now\": {}}]",
        ] {
            assert_eq!(calls(reply), one("now", json!({})), "{reply}");
        }
    }

    #[test]
    fn longcat_calls_as_a_name_and_a_json_object() {
        // LongCat-Flash writes GLM-like calls (its tags are GLM-4.5's with a
        // `longcat_` prefix: vLLM vllm/tool_parsers/longcat_tool_parser.py,
        // a user's report at community.vercel.com/t/33601); issue 33's
        // held-out replies write the arguments as JSON after the name, as
        // GLM-4 does.
        let reply = "I'll check.\n<longcat_tool_call>get_weather\n{\"city\": \"Paris\"}\n</longcat_tool_call>\n<longcat_tool_call>forecast {\"days\": 3, \"options\": {\"hourly\": true}}</longcat_tool_call>";
        assert_eq!(
            calls(reply),
            vec![
                ("get_weather".into(), json!({"city": "Paris"})),
                ("forecast".into(), json!({"days": 3, "options": {"hourly": true}}))
            ]
        );
        assert_eq!((parse(reply).content.as_str(), parse(reply).warnings.len()), ("I'll check.", 0));
        assert_eq!(
            calls("<longcat_tool_call>undeclared_tool{}</longcat_tool_call>"),
            one("undeclared_tool", json!({})),
            "explicit markup"
        );
        // An object whose string holds the closing tag runs past the body:
        // no call of that shape, and no panic (fuzzing found the slice
        // taken the wrong way round).
        let past = "<longcat_tool_call>get_weather {\"city\": \"</longcat_tool_call>\"}";
        assert!(parse(past).calls.iter().all(|call| call.name != "get_weather" || call.arguments.get("city").is_none()));
        no_calls(&[
            "<longcat_tool_call>get_weather {\"city\": \"Paris\"} and then more</longcat_tool_call>",
            "<longcat_tool_call>get the weather {\"city\": \"Paris\"}</longcat_tool_call>",
            "<longcat_tool_call>get_weather {\"city\": \"Par",
            "LongCat writes `<longcat_tool_call>delete_all {}</longcat_tool_call>`.",
            "<think><longcat_tool_call>now {}</longcat_tool_call></think>",
            "```\n<longcat_tool_call>delete_all {}</longcat_tool_call>\n```",
        ]);
    }

    #[test]
    fn longcat_calls_with_argument_tags() {
        let reply = "Checking.\n<longcat_tool_call>get_weather\n<longcat_arg_key>city</longcat_arg_key>\n<longcat_arg_value>Paris</longcat_arg_value>\n</longcat_tool_call>\n<longcat_tool_call>undeclared_tool\n<longcat_arg_key>a</longcat_arg_key>\n<longcat_arg_value>1</longcat_arg_value>\n</longcat_tool_call>";
        assert_eq!(
            calls(reply),
            vec![("get_weather".into(), json!({"city": "Paris"})), ("undeclared_tool".into(), json!({"a": 1}))]
        );
        assert_eq!(parse(reply).content, "Checking.");
        let typed = "<longcat_tool_call>forecast\n<longcat_arg_key>days</longcat_arg_key>\n<longcat_arg_value>3</longcat_arg_value>\n<longcat_arg_key>metric</longcat_arg_key>\n<longcat_arg_value>false</longcat_arg_value>\n</longcat_tool_call>";
        assert_eq!(Value::Object(checked(typed)), json!({"days": 3, "metric": false}));
        let cut = "<longcat_tool_call>get_weather\n<longcat_arg_key>city</longcat_arg_key>\n<longcat_arg_value>Par";
        assert_eq!(calls(cut), vec![]);
        assert_eq!(warnings(cut), ["the call after <longcat_tool_call> is cut off; it is not a call"]);
    }

    #[test]
    fn prose_after_calls_whose_closing_token_is_left_out_is_content() {
        let reply = "I will check. <|tools_prefix|>[{\"get_weather\": {\"city\": \"Paris\"}}] One moment.";
        assert_eq!(calls(reply), one("get_weather", json!({"city": "Paris"})));
        assert_eq!(parse(reply).content, "I will check.  One moment.");
        let granite = "<|tool_call|>[{\"name\": \"now\", \"arguments\": {}}]\nDone.";
        assert_eq!(calls(granite), one("now", json!({})));
        assert_eq!(parse(granite).content, "Done.");
    }

    #[test]
    fn envelope_values_are_typed_by_the_declaration() {
        for reply in [
            "<tool_calls>[{\"name\": \"forecast\", \"arguments\": {\"city\": \"Rome\", \"days\": \"3\", \"ratio\": 0.5, \"metric\": true, \"options\": {\"a\": null}}}]</tool_calls>",
            "<|tools_prefix|>[{\"forecast\": {\"city\": \"Rome\", \"days\": 3, \"ratio\": 0.5, \"metric\": \"true\", \"options\": {\"a\": null}}}]<|tools_suffix|>",
            "<function_calls>\nforecast(city=\"Rome\", days=3, ratio=0.5, metric=True, options={\"a\": None})\n</function_calls>",
            "<|tool_call_start|>[forecast(city='Rome', days=3, ratio=0.5, metric=true, options={'a': null})]<|tool_call_end|>",
        ] {
            assert_eq!(
                Value::Object(checked(reply)),
                json!({"city": "Rome", "days": 3, "ratio": 0.5, "metric": true, "options": {"a": null}}),
                "{reply}"
            );
        }
    }

    #[test]
    fn a_cut_off_envelope_is_a_warning_not_a_call() {
        let cut = "<tool_calls>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par";
        assert_eq!(calls(cut), vec![]);
        assert_eq!(warnings(cut), ["the calls after <tool_calls> are cut off; they are not calls"]);
        let granite = "<|tool_call|>[{\"name\": \"now\", \"arguments\": {}}, {\"name\": \"get_weather\", \"argu";
        assert_eq!(calls(granite), vec![]);
        assert_eq!(warnings(granite), ["the calls after <|tool_call|> are cut off; they are not calls"]);
        let olmo = "<function_calls>\nnow()\nget_weather(city=\"Par";
        assert_eq!(calls(olmo), one("now", json!({})), "only the complete call");
        assert_eq!(warnings(olmo), ["`get_weather(…)` is cut off or not keyword arguments; it is not a call"]);
    }

    #[test]
    fn an_opener_quoted_in_a_string_is_no_retry() {
        for (reply, content) in [
            (
                "<|python_start|>[get_weather(city='Llama 4 opens calls with <|python_start|>')]<|python_end|>",
                "Llama 4 opens calls with <|python_start|>",
            ),
            (
                "<function_calls>\nget_weather(city=\"OLMo wraps calls in <function_calls>\")\n</function_calls>",
                "OLMo wraps calls in <function_calls>",
            ),
            (
                "<longcat_tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"LongCat uses <longcat_tool_call>\"}}</longcat_tool_call>",
                "LongCat uses <longcat_tool_call>",
            ),
        ] {
            assert_eq!(calls(reply), one("get_weather", json!({"city": content})), "{reply}");
            assert_eq!(parse(reply).content, "", "{reply}");
        }
    }

    #[test]
    fn a_close_quoted_in_a_string_ends_no_envelope() {
        // An argument that quotes a whole envelope: its close, and the call
        // inside it, are the argument's text (the inner call had been read
        // as a call of its own, and the outer one lost).
        for (reply, city) in [
            (
                "<|tool_call_start|>[get_weather(city='LFM2 writes <|tool_call_start|>[now()]<|tool_call_end|> to call')]<|tool_call_end|>",
                "LFM2 writes <|tool_call_start|>[now()]<|tool_call_end|> to call",
            ),
            ("<|python_start|>[get_weather(city=\"ends with <|python_end|>\")]<|python_end|>", "ends with <|python_end|>"),
            (
                "<function_calls>\nget_weather(city='see <function_calls>\\nnow()\\n</function_calls>')\n</function_calls>",
                "see <function_calls>\nnow()\n</function_calls>",
            ),
            (
                "<tool_calls>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"a </tool_calls> b\"}}]</tool_calls>",
                "a </tool_calls> b",
            ),
            (
                "<TOOLCALL>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"<TOOLCALL>[{\\\"name\\\": \\\"now\\\"}]</TOOLCALL>\"}}]</TOOLCALL>",
                "<TOOLCALL>[{\"name\": \"now\"}]</TOOLCALL>",
            ),
            ("<|tools_prefix|>[{\"get_weather\": {\"city\": \"x<|tools_suffix|>y\"}}]<|tools_suffix|>", "x<|tools_suffix|>y"),
            (
                "<|action_start|><|plugin|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"<|action_end|>\"}}<|action_end|>",
                "<|action_end|>",
            ),
        ] {
            assert_eq!(calls(reply), one("get_weather", json!({"city": city})), "{reply}");
            assert_eq!(parse(reply).content, "", "{reply}");
            assert_eq!(warnings(reply), Vec::<String>::new(), "{reply}");
        }
        // Python's triple-quoted strings, which may hold their quote.
        for (reply, city) in [
            (
                "<|tool_call_start|>[get_weather(city='''x <|tool_call_start|>[now()]<|tool_call_end|>''')]<|tool_call_end|>",
                "x <|tool_call_start|>[now()]<|tool_call_end|>",
            ),
            (
                "<|python_start|>[get_weather(city=\"\"\"a \"quoted\" <|python_end|> b\"\"\")]<|python_end|>",
                "a \"quoted\" <|python_end|> b",
            ),
            ("<function_calls>\nget_weather(city='''it's\\n''')\n</function_calls>", "it's\n"),
            // A character by its code; what is not one stays as written.
            (
                "<function_calls>\nget_weather(city='''caf\\u00e9 \\x41\\U0001F600 \\ud800 \\x+1 \\u12''')\n</function_calls>",
                "café A😀 \\ud800 \\x+1 \\u12",
            ),
        ] {
            assert_eq!(calls(reply), one("get_weather", json!({"city": city})), "{reply}");
            assert_eq!(warnings(reply), Vec::<String>::new(), "{reply}");
        }
        // Python's prefixed strings: a raw one keeps its backslashes as
        // written (a pattern, a path, code); `u'…'` reads as unprefixed.
        for (reply, city) in [
            (r"<|tool_call_start|>[get_weather(city=r'\d+\.\d+')]<|tool_call_end|>", r"\d+\.\d+"),
            (r#"<|python_start|>[get_weather(city=R"C:\Users\x")]<|python_end|>"#, r"C:\Users\x"),
            ("<function_calls>\nget_weather(city=r'''a\\nb \\' ''' )\n</function_calls>", "a\\nb \\' "),
            ("<|tool_call_start|>[get_weather(city=u'caf\\u00e9')]<|tool_call_end|>", "café"),
            ("<|tool_call_start|>[get_weather(city=u\"\"\"it's\"\"\")]<|tool_call_end|>", "it's"),
            // A raw string ending in a backslash, which Python refuses: the
            // loose reading keeps it as written.
            (r"<|tool_call_start|>[get_weather(city=r'C:\temp\')]<|tool_call_end|>", r"C:\temp\"),
        ] {
            assert_eq!(calls(reply), one("get_weather", json!({"city": city})), "{reply}");
            assert_eq!(warnings(reply), Vec::<String>::new(), "{reply}");
        }
        // And inside lists and dicts, keys too.
        let nested =
            r#"<|tool_call_start|>[grep(patterns=[r'\d+', u'caf\u00e9', '''a "b"'''], where={r'C:\x': R"\n"})]<|tool_call_end|>"#;
        let args = json!({"patterns": [r"\d+", "café", "a \"b\""], "where": {r"C:\x": r"\n"}});
        assert_eq!(calls(nested), one("grep", args), "{nested}");
        // A backslash that ends a string, before its quote (a Windows
        // path): the call ends there, and the next is a call of its own.
        let path =
            r"<|tool_call_start|>[get_weather(city='C:\Paris\')]<|tool_call_end|> <|tool_call_start|>[now()]<|tool_call_end|>";
        assert_eq!(calls(path), vec![("get_weather".into(), json!({"city": r"C:\Paris\"})), ("now".into(), json!({}))], "{path}");
        // An escaped quote before the end is read as one (found by a probe:
        // the backslash's end had been taken first).
        for (reply, city) in [
            (r"<|tool_call_start|>[get_weather(city='it\'s f(x=\'a\', y=\'b\')')]<|tool_call_end|>", "it's f(x='a', y='b')"),
            (r"<|tool_call_start|>[get_weather(city='don\'t \')] ok')]<|tool_call_end|>", "don't ')] ok"),
        ] {
            assert_eq!(calls(reply), one("get_weather", json!({"city": city})), "{reply}");
        }
        // A call that cannot be read, in a closed envelope, takes nothing
        // from the envelopes after it.
        let bad = "<|tool_call_start|>[get_weather(city='x'\")]<|tool_call_end|> ";
        let reply = format!(
            "{bad}{bad}<|tool_call_start|>[get_weather(city=\"x <|tool_call_start|>[now()]<|tool_call_end|> y\")]<|tool_call_end|>"
        );
        assert_eq!(
            calls(&reply),
            one("get_weather", json!({"city": "x <|tool_call_start|>[now()]<|tool_call_end|> y"})),
            "{reply}"
        );
        // A stray quote in a loose string leaves the first close the close.
        let loose = "<|tool_call_start|>[get_weather(city='it's')]<|tool_call_end|> Bob's and Al's <|tool_call_end|>";
        assert_eq!(calls(loose), one("get_weather", json!({"city": "it's"})), "{loose}");
        // Nor does it keep a later envelope from looking past its quoted
        // close (found by a probe: the first one's look ran to the end).
        let quoted = "x <|tool_call_start|>[now()]<|tool_call_end|> y";
        for before in [
            "<|tool_call_start|>[get_weather(city='it's')]<|tool_call_end|> ",
            "<|tool_call_start|>[get_weather(city='abc<|tool_call_end|> Let me retry. ",
        ] {
            let reply = format!("{before}<|tool_call_start|>[get_weather(city=\"{quoted}\")]<|tool_call_end|>");
            let found = calls(&reply);
            assert_eq!(found.last(), Some(&("get_weather".to_owned(), json!({"city": quoted}))), "{reply}");
            assert!(found.iter().all(|(name, _)| name == "get_weather"), "{reply}: {found:?}");
        }
    }

    #[test]
    fn prose_that_names_an_opener_before_a_call_stays_prose() {
        for (prose, call) in [
            (
                "OLMo writes <function_calls>\nf(x) for each call, one per line. Here is mine:",
                "<function_calls>\nnow()\n</function_calls>",
            ),
            ("LFM2 uses <|tool_call_start|>[fn(a=1)] syntax; let me call it.", "<|tool_call_start|>[now()]<|tool_call_end|>"),
        ] {
            let reply = format!("{prose}\n{call}");
            assert_eq!(calls(&reply), one("now", json!({})), "{reply}");
            assert_eq!(parse(&reply).content, prose, "{reply}");
        }
    }

    #[test]
    fn a_longcat_name_and_object_cut_off_and_retried() {
        let retry = "<longcat_tool_call>get_weather {\"city\": \"Paris\"}</longcat_tool_call>";
        let cut = format!("<longcat_tool_call>get_weather {{\"city\": \"Par{retry}");
        assert_eq!(calls(&cut), one("get_weather", json!({"city": "Paris"})));
        assert_eq!(parse(&cut).content, "", "{cut}");
        assert!(warnings(&cut).contains(&"the call after <longcat_tool_call> is cut off; it is not a call".to_owned()), "{cut}");
        let complete = format!("<longcat_tool_call>now {{}}{retry}");
        assert_eq!(calls(&complete), [one("now", json!({})), one("get_weather", json!({"city": "Paris"}))].concat());
    }

    #[test]
    fn a_call_retried_after_a_cut_off_one_is_the_only_call() {
        let paris = one("get_weather", json!({"city": "Paris"}));
        for (cut, call) in [
            ("<|python_start|>[get_weather(city='Par", "<|python_start|>[get_weather(city='Paris')]<|python_end|>"),
            ("<|tool_call_start|>[get_weather(city=\"Par", "<|tool_call_start|>[get_weather(city=\"Paris\")]<|tool_call_end|>"),
            ("<function_calls>\nget_weather(city=\"Par", "<function_calls>\nget_weather(city=\"Paris\")\n</function_calls>"),
            (
                "<longcat_tool_call>get_weather\n<longcat_arg_key>city</longcat_arg_key>\n<longcat_arg_value>Par",
                "<longcat_tool_call>get_weather\n<longcat_arg_key>city</longcat_arg_key>\n<longcat_arg_value>Paris</longcat_arg_value>\n</longcat_tool_call>",
            ),
            (
                "<tool_calls:opensource><tool_call:opensource>get_weather\n<arg_key:opensource>city</arg_key:opensource>\n<arg_value:opensource>Par",
                "<tool_calls:opensource><tool_call:opensource>get_weather\n<arg_key:opensource>city</arg_key:opensource>\n<arg_value:opensource>Paris</arg_value:opensource></tool_call:opensource></tool_calls:opensource>",
            ),
        ] {
            for reply in [format!("{cut}{call}"), format!("{cut}\n{call}"), format!("{cut}{call}{cut}{call}")] {
                let expected =
                    if reply.matches(call).count() == 2 { [paris.clone(), paris.clone()].concat() } else { paris.clone() };
                assert_eq!(calls(&reply), expected, "{reply}");
                assert_eq!(parse(&reply).content, "", "{reply}");
                assert!(!warnings(&reply).is_empty(), "the cut-off call is warned of: {reply}");
            }
        }
    }

    #[test]
    fn lfm2_strings_quoting_their_own_quote() {
        let sed = "<|tool_call_start|>[bash(command='sed -n '360,450p' /testbed/sympy/matrices/common.py')]<|tool_call_end|>";
        assert_eq!(calls(sed), one("bash", json!({"command": "sed -n '360,450p' /testbed/sympy/matrices/common.py"})));
        let python_c = "<|tool_call_start|>[bash(command='cd /testbed && python3 -c \"from sympy import latex\nprint(latex(3*x, mul_symbol='\\\\,'))\"')]<|tool_call_end|>";
        assert_eq!(
            calls(python_c),
            one(
                "bash",
                json!({"command": "cd /testbed && python3 -c \"from sympy import latex\nprint(latex(3*x, mul_symbol='\\,'))\""})
            )
        );
        let then_more = "<function_calls>grep(pattern='it's', path='a.txt')\nnow()</function_calls>";
        assert_eq!(
            calls(then_more),
            vec![("grep".into(), json!({"pattern": "it's", "path": "a.txt"})), ("now".into(), json!({}))]
        );
        assert_eq!(calls("<|tool_call_start|>[bash(command='a 'b' c)]"), vec![], "no end in sight");
    }

    #[test]
    fn a_bad_olmo_call_does_not_drop_its_siblings() {
        let weather = "get_weather(city='San Francisco', metric='celsius')";
        let expected = one("get_weather", json!({"city": "San Francisco", "metric": "celsius"}));
        for bad in ["bad(x=b'z')", "calc(x=1e999)"] {
            let reply = format!("<function_calls>{bad}\n{weather}</function_calls>");
            assert_eq!(calls(&reply), expected, "{reply}");
            assert_eq!(parse(&reply).content, "", "{reply}");
            assert_eq!(warnings(&reply).len(), 1, "{reply}");
        }
        let all_bad = "<function_calls>bad(x=b'z')\ncalc(x=1e999)</function_calls>";
        assert_eq!(calls(all_bad), vec![]);
        let lfm2 = format!("<|tool_call_start|>[{weather}, bad(x=b'z', y=\")]\")]<|tool_call_end|>");
        assert_eq!(calls(&lfm2), expected, "in a list too");
        assert_eq!(parse(&lfm2).content, "");
    }

    #[test]
    fn envelopes_in_prose_or_code_are_not_calls() {
        assert_eq!(warnings("Granite writes <|tool_call|> before its calls, and <tool_calls> too."), Vec::<String>::new());
        no_calls(&[
            "Jamba wraps calls in `<tool_calls>[{\"name\": \"delete_all\", \"arguments\": {}}]</tool_calls>`.",
            "<think><TOOLCALL>[{\"name\": \"now\", \"arguments\": {}}]</TOOLCALL></think>",
            "```\n<|tool_call_start|>[delete_all()]<|tool_call_end|>\n```",
            "OLMo writes <function_calls> around calls like print(x) and more.",
            "In Python, <function_calls>\nlen(x) is 3\n</function_calls> counts.",
            "The template says function call<|role_sep|> and then JSON.",
        ]);
        prose("Granite writes <|tool_call|> before its calls, and Apertus <|tools_prefix|>.");
        let fenced = "```\n<|tool_call_start|>[now()]<|tool_call_end|>\n```";
        assert_eq!(calls(fenced), one("now", json!({})), "in a fence, a declared tool's call");
    }

    #[test]
    fn apertus_reasoning_is_not_calls_and_ends_where_the_prompt_opened_it() {
        let shown = "<|inner_prefix|>I could write <|tools_prefix|>[{\"get_weather\": {\"city\": \"Paris\"}}]<|tools_suffix|> but I know it.<|inner_suffix|>It is sunny.";
        assert_eq!(calls(shown), vec![], "a call shown in reasoning is reasoning");
        let after = "<|inner_prefix|>The weather in Paris.<|inner_suffix|><|tools_prefix|>[{\"get_weather\": {\"city\": \"Paris\"}}]<|tools_suffix|>";
        assert_eq!(calls(after), one("get_weather", json!({"city": "Paris"})));
        // llama.cpp ends the prompt with the prefix when thinking is on: the
        // reply holds only the suffix.
        let opened_by_the_prompt = "Maybe <|tools_prefix|>[{\"now\": {}}]<|tools_suffix|>.<|inner_suffix|><|tools_prefix|>[{\"get_weather\": {\"city\": \"Paris\"}}]<|tools_suffix|>";
        assert_eq!(calls(opened_by_the_prompt), one("get_weather", json!({"city": "Paris"})));
        let unclosed = "<|inner_prefix|>I might call <|tools_prefix|>[{\"now\": {}}]<|tools_suffix|>";
        assert_eq!(calls(unclosed), vec![], "reasoning never closed runs to the end");
        let closed_twice = "<|inner_prefix|>a<|inner_suffix|>b<|inner_suffix|><|tools_prefix|>[{\"now\": {}}]<|tools_suffix|>";
        assert_eq!(calls(closed_twice), one("now", json!({})), "a second suffix opens nothing");
    }
}
