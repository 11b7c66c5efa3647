//! Parse-only recognition of every format: the four protocols' own, and the
//! formats models drift into on their own, one module per family:
//!
//! - Hermes / Qwen: `<tool_call>{"name", "arguments"}</tool_call>` (here);
//! - Qwen3-Coder's `<function=NAME><parameter=K>…`, and
//!   `<function=NAME>{…}</function>`, `<function name="NAME">{…}`
//!   ([`function_tag`]);
//! - GLM's `<tool_call>NAME<arg_key>…</arg_key><arg_value>…` ([`glm`]);
//! - Kimi K2's and DeepSeek's sections of special tokens ([`kimi`],
//!   [`deepseek`], both read by [`section`]), and Kimi K3's XTML tools
//!   channel ([`kimi_k3`]);
//! - MiniMax M3's elements behind `]<]minimax[>[` ([`minimax_m3`]);
//! - MiniMax-M2's `<minimax:tool_call><invoke name="NAME">…` ([`minimax`])
//!   DeepSeek V3.2's and V4's `<｜DSML｜function_calls>` ([`dsml`]) and
//!   Step3's `<steptml:invoke>` in DeepSeek-like tokens ([`step3`]),
//!   read by [`section`] too, their calls by [`invoke`];
//! - gpt-oss's Harmony messages addressed `to=functions.NAME`, their
//!   tokens kept or stripped ([`harmony`]),
//!   and Muse Glimmer's `<atem:function_calls>` in such a message ([`atem`]);
//! - JSON or pythonic calls in a family's own envelope: Jamba's and
//!   Hunyuan's `<tool_calls>`, Nemotron's `<TOOLCALL>`, LongCat's, Granite's
//!   `<|tool_call|>`, InternLM2's, Apertus's, GigaChat's, OLMo 3's
//!   `<function_calls>`, LFM2's and Llama 4's tokens, Glaive's
//!   `<functioncall>` ([`envelope`]);
//! - Gemma 4's `<|tool_call>call:NAME{…}<tool_call|>` and FunctionGemma's
//!   `<start_function_call>call:NAME{…}` ([`gemma`]);
//! - Command R7B's `<|START_ACTION|>[…]<|END_ACTION|>` ([`command_r`]) and
//!   Command A Reasoning's `<cofl:tool_calls>` ([`cofl`]);
//! - Functionary's `>>>NAME\n{…}` segments ([`functionary`]);
//! - Solar Open 2's `<|tool_call:start|>NAME` and `<|tool_arg:…|>` tokens
//!   ([`solar`]);
//! - ReAct's `Action: NAME` / `Action Input: {…}` lines and Qwen-Agent's
//!   `✿FUNCTION✿: NAME` / `✿ARGS✿: {…}` ([`react`]);
//! - Cline's and Roo Code's elements named after a declared tool, an
//!   element per argument, `<read_file><path>…</path></read_file>`
//!   ([`tool_element`]);
//! - Mistral's `[TOOL_CALLS]…` and Llama 3's `<|python_tag|>…`
//!   ([`prefixed`]);
//! - pythonic lists, `[get_weather(city="Paris"), now()]`, and a reply of
//!   nothing but such calls without the brackets ([`pythonic`]);
//! - Gemma's pythonic calls in a ```` ```tool_code ```` block or a
//!   `<tool_code>` element ([`tool_code`]);
//! - fenced JSON objects and arrays (LangChain's `{"action",
//!   "action_input"}` too; an `Action:` label before the fence is no
//!   content), and an OpenAI `tool_calls` message.
//!
//! A token that ends the turn at the very end of a reply is no content
//! ([`turn_end`]).
//!
//! Bare (unfenced, untagged) JSON and pythonic lists are calls only when
//! they name a declared tool, so an example in prose never runs; markup
//! quoted in inline code is never a call, in a fenced block only for a
//! declared tool. When two recognizers claim overlapping text, the one that
//! starts first wins.

mod answer;
pub(crate) mod atem;
mod attribute;
pub(crate) mod cofl;
pub(crate) mod command_r;

use crate::markup_value::exact_number;

#[cfg(test)]
mod compatibility;
pub(crate) mod deepseek;
pub(crate) mod dsml;
pub(crate) mod envelope;
pub(crate) mod function_tag;
pub(crate) mod functionary;
pub(crate) mod gemma;
pub(crate) mod glm;
pub(crate) mod harmony;
mod invoke;
pub(crate) mod kimi;
pub(crate) mod kimi_k3;
pub(crate) mod minimax;
pub(crate) mod minimax_m3;
pub(crate) mod prefixed;
pub(crate) mod pythonic;
mod react;
mod section;
pub(crate) mod solar;
pub(crate) mod step3;
#[cfg(test)]
mod testing;
mod tool_code;
mod tool_element;
mod turn_end;
mod wrappers;

use super::json_block::{format_json_results, scan_fences};
use super::json_call::{self, Trust};
use super::lenient_json;
use super::marker_index::{Listed, MARKUP, MarkerIndex};
use super::scan::{Code, Collector, FENCE, Quoted, Reasoning, THINK_CLOSE, skip_ws};
use super::vcp::VCP;
use super::xml_tag::{self, TOOL_CALL};
use super::{Declared, Parsed, ParsedCall, Protocol, ProtocolId};
use crate::manifest::{MAX_TOOL_NAME_LEN, ToolSpec};
use crate::message::Message;
use crate::outcome::ToolOutcome;
use serde_json::{Map, Value};
use std::cell::OnceCell;
use std::ops::Range;

/// The auto protocol: parses anything, renders nothing of its own (it
/// renders as json-block when asked).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Auto;

impl Protocol for Auto {
    fn id(&self) -> ProtocolId {
        ProtocolId::Auto
    }

    fn render(&self, tools: &[&ToolSpec]) -> String {
        super::json_block::JsonBlock.render(tools)
    }

    fn parse(&self, reply: &str, declared: &Declared) -> Parsed {
        let scope = Scope::new(reply, declared);
        let reasoning = &scope.reasoning;
        let mut out = Collector::new(reply);
        VCP.scan(&scope.markers, reasoning, &mut out);
        scan_fences(&scope.markers, reasoning, declared, true, |fence, out| tool_code::read_fence(&scope, &fence, out), &mut out);
        tool_code::scan_elements(&scope, &mut out);
        scan_tool_call_tags(&scope, &mut out);
        function_tag::scan(&scope, &mut out);
        tool_element::scan(&scope, &mut out);
        envelope::scan_tags(&scope, &mut out);
        prefixed::scan_tool_calls(&scope, &mut out);
        prefixed::scan_stripped(&scope, &mut out);
        gemma::scan_bare(&scope, &mut out);
        scan_chat_tokens(&scope, &mut out);
        harmony::scan_stripped(&scope, &mut out);
        deepseek::scan(&scope, &mut out);
        minimax::scan(&scope, &mut out);
        cofl::scan(&scope, &mut out);
        atem::scan(&scope, &mut out);
        functionary::scan(&scope, &mut out);
        react::scan(&scope, &mut out);
        glm::scan_user_alias(&scope, &mut out);
        scan_tool_calls_message(reply, declared, &mut out);
        scan_bare(&scope, &mut out);
        pythonic::scan_lone(&scope, &mut out);
        wrappers::scan(&scope, &mut out);
        answer::scan(&scope, &mut out);
        turn_end::scan(reply, &mut out);
        let mut parsed = out.finish();
        // A family that allows spaces or dots in a name may write a declared
        // tool's name so.
        for call in &mut parsed.calls {
            if let Some(meant) = declared.meant(&call.name) {
                call.name = meant.to_owned();
            }
        }
        parsed
    }

    fn format_results(&self, outcomes: &[ToolOutcome]) -> Vec<Message> {
        format_json_results(outcomes)
    }
}

/// What opens the calls written in plain text rather than markup: bare
/// JSON's `{` (its `[` is listed with the markup), Functionary's `>>>` and
/// ReAct's `Action:`. Listed in a second pass, so that prose costs two
/// passes instead of one per marker.
pub(crate) const PLAIN_CALLS: Listed = [b'{', b'>', b'A'];

/// A reply as the recognisers read it: the text, where markup may start in
/// it, its reasoning, the declared tools, and where it quotes code (found
/// on first use, as most replies never need it).
pub(crate) struct Scope<'a> {
    pub(crate) reply: &'a str,
    /// Where the recognisers search for the markers that open their calls.
    pub(crate) markers: MarkerIndex<'a>,
    pub(crate) reasoning: Reasoning,
    pub(crate) declared: &'a Declared,
    code: OnceCell<Code>,
    /// Where the tokens that end the turn start ([`turn_end::start`]).
    turn_end: OnceCell<usize>,
}

impl<'a> Scope<'a> {
    fn new(reply: &'a str, declared: &'a Declared) -> Self {
        let markers = MarkerIndex::new(reply, &[MARKUP, PLAIN_CALLS]);
        let reasoning = Reasoning::find(&markers);
        Scope { reply, markers, reasoning, declared, code: OnceCell::new(), turn_end: OnceCell::new() }
    }

    /// How far markup at `offset` is trusted to be a call: not at all in
    /// reasoning or in an inline code span (the markup is being shown), in
    /// a fenced block only for a declared tool (as fenced JSON is), else
    /// whatever tool it names.
    pub(crate) fn markup_trust(&self, offset: usize) -> Option<Trust> {
        if self.reasoning.contains(offset) {
            return None;
        }
        match self.quoted(offset) {
            None => Some(Trust::Explicit),
            Some(Quoted::Fenced) => Some(Trust::Declared),
            Some(Quoted::Inline) => None,
        }
    }

    /// Where the tokens that end the turn start: the reply's length if none
    /// end it. Found once: it reads the reply's end back.
    pub(crate) fn turn_end(&self) -> usize {
        *self.turn_end.get_or_init(|| turn_end::start(self.reply))
    }

    /// The reply's own text: after the reasoning it opens with, before the
    /// tokens that end the turn, trimmed.
    pub(crate) fn said(&self) -> Range<usize> {
        let bytes = self.reply.as_bytes();
        let mut start = skip_ws(bytes, 0);
        while let Some(end) = self.reasoning.skip(start) {
            start = skip_ws(bytes, end);
        }
        start..start + self.reply[start..self.turn_end().max(start)].trim_end().len()
    }

    /// [`Self::markup_trust`] for an element spanning `span`, which inline
    /// code quotes only whole: a backtick in one call's string and one in
    /// the next's, on one line, pair as a span that holds the second's
    /// opening tag and not its end.
    pub(crate) fn element_trust(&self, span: Range<usize>) -> Option<Trust> {
        match self.code.get_or_init(|| Code::find(self.reply)).region(span.start) {
            Some((region, Quoted::Inline)) if region.end < span.end && !self.reasoning.contains(span.start) => {
                Some(Trust::Explicit)
            }
            _ => self.markup_trust(span.start),
        }
    }

    /// How the text at `offset` is quoted as code, if it is.
    fn quoted(&self, offset: usize) -> Option<Quoted> {
        self.code.get_or_init(|| Code::find(self.reply)).at(offset)
    }

    /// Whether markup at `offset` that calls `name` is a call, by
    /// [`Self::markup_trust`].
    pub(crate) fn markup_calls(&self, offset: usize, name: &str) -> bool {
        match self.markup_trust(offset) {
            None => false,
            Some(Trust::Declared) => self.declared.contains(name),
            Some(Trust::Explicit) => true,
        }
    }
}

/// Opens a special token of a chat template (`<|python_tag|>`,
/// `<|tool_call_begin|>`, `<|START_ACTION|>`, `<|im_start|>`).
pub(crate) const CHAT_TOKEN_OPEN: &str = "<|";

/// Every chat-template token that starts a call, in one pass: Llama's
/// `<|python_tag|>`, Gemma 4's `<|tool_call>`, the envelopes of Granite, InternLM2, Apertus, LFM2,
/// Llama 4 and GigaChat, Kimi K2's sections and calls, Kimi K3's channels, Command R's
/// actions, Harmony's messages (found by their `<|message|>`).
fn scan_chat_tokens(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let reply = scope.reply;
    let mut kimi = kimi::Reader::new(reply);
    let mut kimi_k3 = kimi_k3::Reader::new(reply);
    let mut envelopes = envelope::Reader::new(reply);
    let mut command_r = command_r::Reader::new(reply);
    let mut solar = solar::Reader::new(reply);
    let mut at = 0;
    while let Some(found) = scope.markers.find(at, CHAT_TOKEN_OPEN) {
        if let Some(end) = scope.reasoning.skip(found) {
            at = end;
            continue;
        }
        at = if reply[found..].starts_with(prefixed::PYTHON_TAG) {
            prefixed::read(scope, found, prefixed::PYTHON_TAG, out)
        } else if reply[found..].starts_with(gemma::GEMMA4.open) {
            gemma::read(scope, found, &gemma::GEMMA4, out)
        } else if reply[found..].starts_with(solar::CALL.0) {
            solar.read(scope, found, out)
        } else if reply[found..].starts_with(harmony::MESSAGE) {
            harmony::read(scope, found, out).unwrap_or(found + harmony::MESSAGE.len())
        } else if let Some(end) = envelopes.read(scope, found, out) {
            end
        } else if let Some(end) = kimi.read(scope, found, out) {
            end
        } else if let Some(end) = kimi_k3.read(scope, found, out) {
            end
        } else if let Some(end) = command_r.read(scope, found, out) {
            end
        } else {
            found + CHAT_TOKEN_OPEN.len()
        };
    }
}

/// Every `<tool_call>` element, by what its body holds: JSON (Hermes,
/// Qwen, Granite 4), pythonic calls (`[f(a=1)]` or `f(a=1)`),
/// `<function>NAME</function>` and JSON, or GLM's name and argument tags. A Qwen3-Coder `<function=…>` body is left to [`function_tag`], a
/// Harmony message to [`harmony`]; each takes the element around it too.
/// MiniMax M3's `]<]minimax[>[<tool_call>` is read here by [`minimax_m3`].
fn scan_tool_call_tags(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let reply = scope.reply;
    for element in xml_tag::elements(&scope.markers, &scope.reasoning, TOOL_CALL) {
        let body = &reply[element.body.clone()];
        let text = body.trim_start();
        let text_at = element.body.start + (body.len() - text.len());
        if minimax_m3::opens_section(reply, element.open) {
            minimax_m3::read(scope, element.open, out);
            continue;
        }
        if function_tag::opens_call(reply, text_at, element.body.end) || harmony::in_tool_call(body) {
            continue;
        }
        let Some(trust) = scope.element_trust(element.open..element.end.unwrap_or(element.body.end)) else { continue };
        // Unclosed, the element is a call when complete JSON runs to the
        // reply's end, as vLLM's and SGLang's Hermes parsers read it.
        let Some((body_end, end)) =
            element.end.map(|end| (element.body.end, end)).or_else(|| json_to_the_end(scope, text_at).map(|end| (end, end)))
        else {
            xml_tag::unclosed(reply, &element, TOOL_CALL.0, out);
            continue;
        };
        let body = &reply[element.body.start..body_end];
        let span = element.open..end;
        if pythonic::opens_call(text) {
            let callable = |name: &str| scope.markup_calls(element.open, name);
            if let Some(calls) = pythonic::sequence(reply, text_at, element.body.end, callable, pythonic::Strings::Loose, out) {
                let calls = calls.into_iter().map(|(name, arguments)| ParsedCall {
                    id: None,
                    name,
                    arguments,
                    reserved: Map::new(),
                    span: span.clone(),
                });
                let calls = calls.collect();
                out.calls(span, calls);
            }
        } else if text.starts_with(['{', '[']) {
            json_call::collect_text(body, element.body.start, span, trust, scope.declared, out);
        } else if text.starts_with(function_tag::FUNCTION_NAME_OPEN) {
            function_tag::hermes_named(scope, text_at, element.body.end, span, out);
        } else if glm::opens_call(text, &glm::GLM) {
            glm::read(scope, text_at, element.body.end, span, &glm::GLM, out);
        } else if let Some((inner, inner_at)) = inside_fence(body, element.body.start) {
            json_call::collect_text(inner, inner_at, span, trust, scope.declared, out);
        } else if element.end.is_some()
            && envelope::read_named_json(scope, element.open, text_at, element.body.end, span.end, out).is_some()
        {
            // GLM 4.7's name and JSON object, `get_weather {"city": "Paris"}`.
        } else {
            json_call::collect_text(body, element.body.start, span, trust, scope.declared, out);
        }
    }
}

/// The text inside a code fence that is the whole of `body` (a model that
/// fences the JSON inside its `<tool_call>`), and where it starts; `body`
/// starts at `at` in the reply.
fn inside_fence(body: &str, at: usize) -> Option<(&str, usize)> {
    let start = body.len() - body.trim_start().len();
    let opening = body[start..].strip_prefix(FENCE)?;
    let inner_start = start + FENCE.len() + opening.find('\n')? + 1;
    let inner_end = body.trim_end().strip_suffix(FENCE)?.len();
    (inner_end >= inner_start).then(|| (&body[inner_start..inner_end], at + inner_start))
}

/// The end of the JSON value at `at`, if nothing but white space and the
/// turn's end tokens follows it.
fn json_to_the_end(scope: &Scope<'_>, at: usize) -> Option<usize> {
    let reply = scope.reply;
    if !reply[at..].starts_with(['{', '[']) {
        return None;
    }
    let (_, used, _) = lenient_json::parse_prefix(&reply[at..]).ok()?;
    let end = at + used;
    reply[end..scope.turn_end().max(end)].trim_start().is_empty().then_some(end)
}

/// A whole reply that is an OpenAI message with `tool_calls`.
fn scan_tool_calls_message(reply: &str, declared: &Declared, out: &mut Collector<'_>) {
    let trimmed = reply.trim();
    if !trimmed.starts_with('{') || !trimmed.contains("\"tool_calls\"") {
        return;
    }
    let start = reply.len() - reply.trim_start().len();
    if let Ok((value @ Value::Object(_), _)) = lenient_json::parse(trimmed) {
        json_call::collect_value(value, start..start + trimmed.len(), Trust::Explicit, declared, out);
    }
}

/// Bare JSON objects or arrays that name a declared tool (outside fenced
/// code, which [`scan_fences`] reads by its language), and pythonic lists
/// of declared tools. After a failed attempt the scan resumes where
/// reading stopped, so the time stays linear on any input.
fn scan_bare(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let (reply, reasoning, declared) = (scope.reply, &scope.reasoning, scope.declared);
    let mut at = 0;
    // Where a wrapper that did not read (a brace left out) ends: the scan
    // went back inside it for the call it holds, once, so the time stays
    // linear.
    let mut reread_to = 0;
    loop {
        // A resume point can fall inside a multi-byte character, or past
        // the end.
        at = at.min(reply.len());
        while !reply.is_char_boundary(at) {
            at += 1;
        }
        let Some(found) = scope.markers.find_open_bracket(at) else { break };
        at = found + 1;
        if let Some(end) = reasoning.skip(found) {
            at = end;
            continue;
        }
        // Shown in inline code, it is being quoted; fenced, the fence
        // scanner reads JSON by the fence's language.
        let opening = bare_opening(reply, found);
        let quoted = if opening == BareOpening::Neither { None } else { scope.quoted(found) };
        match opening {
            _ if quoted == Some(Quoted::Inline) => continue,
            BareOpening::Pythonic => {
                // No word follows it on its line: mid-sentence a list is an
                // example; before a line break, a token, another list or
                // punctuation it is a call.
                let ends_line = |end: usize| !reply[end..].trim_start_matches([' ', '\t']).starts_with(char::is_alphanumeric);
                at = pythonic::list(reply, found, declared, ends_line, out);
                continue;
            }
            BareOpening::Json if quoted == Some(Quoted::Fenced) => continue,
            BareOpening::Json => {}
            BareOpening::Neither => continue,
        }
        match lenient_json::parse_prefix(&reply[found..]) {
            Ok((Value::Array(_), used, _)) if quoted_list(scope, found, found + used) => at = found + used,
            // Read already, whole, inside its markup: once is enough.
            Ok((_, used, _)) if out.was_json_read_at(found) => at = found + used,
            Ok((value, used, repairs)) => {
                // Repairs are reported only for JSON that turned out to be a call.
                let before = out.len();
                json_call::collect_value(value, found..found + used, Trust::Declared, declared, out);
                if out.len() > before {
                    json_call::report(&repairs, found, out);
                    if reply[..found].ends_with(FUNCTOOLS) {
                        out.markup(found - FUNCTOOLS.len()..found);
                    }
                }
                at = found + used;
            }
            Err(error) if found >= reread_to && wraps_a_call(reply, found) => {
                reread_to = found + error.offset.max(1);
                at = found + 1;
            }
            Err(error) => at = found + error.offset.max(1),
        }
    }
}

/// Whether the object at `open` opens with a key that wraps a call
/// (`{"tool_call": {…}}`, `{"function_call": {…}}`, `{"type": "function",
/// "function": {…}}`).
fn wraps_a_call(reply: &str, open: usize) -> bool {
    let at = skip_ws(reply.as_bytes(), open + 1);
    quoted_word(reply, at).is_some_and(|(key, _)| matches!(key, "tool_call" | "function_call" | "function" | "type" | "id"))
}

/// Whether the bare JSON list at `start..end` stands inside prose, which
/// goes on after it: an example in an answer (Hunyuan's `<answer>`, LFM2's
/// prose), not calls, which a model writes last.
fn quoted_list(scope: &Scope<'_>, start: usize, end: usize) -> bool {
    // Trimmed on the near side only: a trim of the far end, per list, read
    // a long run of white space there again each time.
    let before = scope.reply[..start].trim_end();
    let after = scope.reply[end..scope.turn_end().max(end)].trim_start();
    !before.is_empty() && !before.ends_with(FUNCTOOLS) && !after.is_empty()
}

/// Phi-4-mini's word before its JSON array of calls (`functools[{…}]`):
/// no part of the prose once the array is read as calls.
const FUNCTOOLS: &str = "functools";

/// What the bracket at `open` may start, read as a bare call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BareOpening {
    /// `[name`: a pythonic list, if `name(` follows and is declared.
    Pythonic,
    /// `{"name"` or `[{"name"` (or single-quoted): a JSON call, if it names
    /// a declared tool.
    Json,
    /// Neither.
    Neither,
}

/// What the `{` or `[` at `open` of `reply` may start.
pub(crate) fn bare_opening(reply: &str, open: usize) -> BareOpening {
    let bytes = reply.as_bytes();
    let after = skip_ws(bytes, open + 1);
    match bytes[open] {
        b'[' if bytes.get(after).is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_') => BareOpening::Pythonic,
        b'{' if opens_call_object(reply, after) => BareOpening::Json,
        b'[' if bytes.get(after) == Some(&b'{') && opens_call_object(reply, skip_ws(bytes, after + 1)) => BareOpening::Json,
        _ => BareOpening::Neither,
    }
}

/// The first keys with which a JSON call opens, as models write them: its
/// name; its arguments first, as Hermes' prompt orders them; an OpenAI
/// item's `function`, llama.cpp's generic `tool_call` or OpenAI's legacy
/// `function_call`, around the call; `tool`, naming it or around it.
const CALL_FIRST_KEYS: [&str; 8] =
    ["name", "tool_name", "arguments", "parameters", "function", "tool_call", "function_call", "tool"];

/// Whether the object whose first key stands at `at` opens a call: one of
/// [`CALL_FIRST_KEYS`], or `"type": "function"` (small Llama 3 models put
/// it before the name; OpenAI's items, before the function) or
/// `"type": "tool_use"` (Anthropic's blocks).
/// An OpenAI item's `"id": "call_…",` may come first.
fn opens_call_object(reply: &str, at: usize) -> bool {
    let bytes = reply.as_bytes();
    // A key and its short quoted value: the value and where the pair ends.
    let pair = |at: usize| {
        let (_, after) = quoted_word(reply, at)?;
        let colon = skip_ws(bytes, after);
        (bytes.get(colon) == Some(&b':')).then_some(())?;
        let (value, end) = quoted_word(reply, skip_ws(bytes, colon + 1))?;
        Some((value, skip_ws(bytes, end)))
    };
    let Some((key, _)) = quoted_word(reply, at) else { return false };
    match key {
        _ if CALL_FIRST_KEYS.contains(&key) => true,
        "type" => pair(at).is_some_and(|(value, _)| matches!(value, "function" | "tool_use")),
        "id" => pair(at).is_some_and(|(_, end)| {
            bytes.get(end) == Some(&b',')
                && quoted_word(reply, skip_ws(bytes, end + 1)).is_some_and(|(key, _)| key == "type")
                && pair(skip_ws(bytes, end + 1)).is_some_and(|(value, _)| value == "function")
        }),
        _ => false,
    }
}

/// The length of the tool name that ends `text`, looked back at most
/// `most` bytes: ASCII letters, digits, `_` and `-`, and `.` when `dots`
/// (a namespace, or a name a family writes with dots).
pub(crate) fn name_len_before(text: &str, most: usize, dots: bool) -> usize {
    text.bytes()
        .rev()
        .take(most)
        .take_while(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || (dots && b == b'.'))
        .count()
}

/// Whether only white space stands before `at` on its line.
pub(crate) fn starts_line(reply: &str, at: usize) -> bool {
    let before = reply[..at].trim_end_matches([' ', '\t']);
    before.is_empty() || before.ends_with('\n')
}

/// Whether the line `at` starts (after its indent) is indented as
/// Markdown indents code: four spaces or a tab.
pub(crate) fn indented_as_code(reply: &str, at: usize) -> bool {
    let line = reply[..at].rfind('\n').map_or(0, |i| i + 1);
    let indent = &reply[line..at];
    indent.contains('\t') || indent.len() >= 4
}

/// A short word in double or single quotes at `at`, and where it ends.
fn quoted_word(reply: &str, at: usize) -> Option<(&str, usize)> {
    let quote = *reply.as_bytes().get(at).filter(|q| matches!(q, b'"' | b'\''))?;
    let rest = reply.get(at + 1..)?;
    let len = rest.bytes().take(16).position(|b| b == quote)?;
    Some((&rest[..len], at + 1 + len + 1))
}

/// Read a JSON object at `at`, warning when it is not one: the object and
/// where it ends.
pub(crate) fn object_at(reply: &str, at: usize, out: &mut Collector<'_>) -> Option<(Map<String, Value>, usize)> {
    match lenient_json::parse_prefix(&reply[at..]) {
        Ok((Value::Object(map), used, repairs)) => {
            json_call::report(&repairs, at, out);
            Some((map, at + used))
        }
        Ok(_) => {
            out.warn(at, "the arguments are not a JSON object");
            None
        }
        Err(e) => {
            out.warn(at + e.offset, format!("the arguments are not JSON: {}", e.message));
            None
        }
    }
}

/// What may end the prose before markup on the same line that stands apart
/// from it: the end of a sentence, of the reasoning or of a Harmony-like
/// header.
const PROSE_ENDS: [&str; 8] = [":", ".", "!", "?", "\u{3002}", "\u{ff1a}", THINK_CLOSE, harmony::MESSAGE];

/// Whether markup starting at `start` stands apart from the prose before
/// it: on a line of its own, or after a sentence's or the reasoning's end.
/// Markup whose family tokens a server may strip (MiniMax's section, Kimi
/// K3's channel) is a call when it stands so; quoted in a sentence, it is
/// not. Only the white space before it is looked at, so the time stays
/// linear.
pub(crate) fn starts_apart(reply: &str, start: usize) -> bool {
    let line = reply[..start].trim_end_matches([' ', '\t', '\r']);
    line.is_empty() || line.ends_with('\n') || PROSE_ENDS.iter().any(|end| line.ends_with(end))
}

/// Whether markup ending at `end` stands apart from the prose after it:
/// nothing but white space follows on its line.
pub(crate) fn ends_apart(reply: &str, end: usize) -> bool {
    let rest = reply[end..].trim_start_matches([' ', '\t', '\r']);
    rest.is_empty() || rest.starts_with('\n')
}

/// A tool's name or an argument's key as markup writes it, trimmed: letters
/// and digits of any script (`获取天气`), `_`, `-` and `.`, at most
/// [`MAX_TOOL_NAME_LEN`] bytes. (A dotted name is no declared tool's;
/// reading it still lets the check step tell the model which tool it
/// meant.)
pub(crate) fn markup_name(text: &str) -> Option<&str> {
    let name = text.trim();
    (fits_name(name) && !name.contains(' ')).then_some(name)
}

/// A name as [`markup_name`] reads it, written in quotes (`name="get
/// weather"`), where a family's attribute may hold single spaces between
/// its words.
pub(crate) fn attribute_name(text: &str) -> Option<&str> {
    let name = text.trim();
    (fits_name(name) && !name.contains("  ")).then_some(name)
}

/// Whether `name` has a name's length and only a name's characters (and
/// spaces, which the callers judge).
fn fits_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME_LEN).contains(&name.len())
        && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ' '))
}

#[cfg(test)]
mod tests {
    use super::inside_fence;
    use super::testing::{calls, no_calls, one, parse, prose, warnings};
    use serde_json::json;

    /// Every family's call, and a bare JSON call, is found after prose of
    /// any length: prose with few of the listed bytes (`<`, `[`, backticks;
    /// `{`, `>`, `A`) is searched through the marker index, denser text
    /// directly, and lengths around the switch, multi-byte characters and
    /// listed bytes of either pass before the call try both ways.
    #[test]
    fn every_familys_call_is_found_after_any_prose() {
        const FILLERS: [&str; 8] = ["", "Fine. ", "é", "日本語。", "a `b` [c] ", "x<y ", "A > {b} ", "Also "];
        const BARE_JSON: &str = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}";
        let samples = super::compatibility::FAMILIES.iter().map(|family| (family.name, family.sample));
        for (name, sample) in samples.chain([("bare JSON", BARE_JSON)]) {
            let expected = calls(sample);
            assert!(!expected.is_empty(), "{name}");
            for filler in FILLERS {
                for repeats in [1, 2, 15, 63, 64, 65, 127, 128, 129, 1000] {
                    let reply = format!("{}\n\n{}", filler.repeat(repeats), sample);
                    assert_eq!(calls(&reply), expected, "{name}: after {repeats} × {filler:?}");
                }
            }
        }
    }

    #[test]
    fn hermes_and_qwen_tool_call_tags() {
        let reply = "I'll check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
        assert_eq!(calls(reply), one("get_weather", json!({"city": "Paris"})));
        assert_eq!(parse(reply).content, "I'll check.");
    }

    #[test]
    fn an_unclosed_tool_call_tag_holding_a_whole_call_is_a_call() {
        let until_eos = "<tool_call>\n{\"name\": \"final_answer\", \"arguments\": {\"trigger\": true}}";
        assert_eq!(calls(until_eos), one("final_answer", json!({"trigger": true})), "an undeclared tool in explicit markup");
        assert_eq!((parse(until_eos).content.as_str(), parse(until_eos).warnings.len()), ("", 0));
        let second = "<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>\n<tool_call>{\"name\": \"x\", \"arguments\": {}}\n<|im_end|>";
        assert_eq!(calls(second).len(), 2);
        assert_eq!(parse(second).content, "");
        let granite = "<tool_call> [{\n  \"name\": \"test_function\",\n  \"arguments\": {\"path\": \"C:\\\\Users\\\\file.txt\", \"empty\": {}}\n}]";
        assert_eq!(
            calls(granite),
            one("test_function", json!({"path": "C:\\Users\\file.txt", "empty": {}})),
            "Granite 3.1's unclosed <tool_call> array"
        );
        let cut = "<tool_call>\n{\"name\": \"final_answer\", \"arguments\": {\"trigger\": true}";
        assert_eq!(calls(cut), vec![], "the JSON itself cut off");
        let then_prose = "<tool_call>{\"name\": \"x\", \"arguments\": {}} and more";
        assert_eq!(calls(then_prose), vec![]);
    }

    #[test]
    fn mistral_array_and_name_forms() {
        assert_eq!(
            calls(
                "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}, {\"name\": \"now\", \"arguments\": {}}]"
            ),
            vec![("get_weather".into(), json!({"city": "Oslo"})), ("now".into(), json!({}))]
        );
        assert_eq!(calls("[TOOL_CALLS]get_weather{\"city\": \"Rome\"}"), one("get_weather", json!({"city": "Rome"})));
        assert_eq!(calls("[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Rome\"}"), one("get_weather", json!({"city": "Rome"})));
    }

    #[test]
    fn calls_that_models_wrap_or_bracket_wrongly_leave_nothing_in_the_content() {
        let city = one("get_weather", json!({"city": "Paris"}));
        for reply in [
            // A wrapper: GLM's stray `tool`, OpenAI's legacy `function_call`
            // (its arguments a JSON string), bare or in a `<tool_call>`.
            "<tool_call>{\"tool\": {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}}</tool_call>",
            "{\"function_call\": {\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Paris\\\"}\"}}",
            // The name under `function`, as GLM 4.7 strays into.
            "<tool_call>{\"function\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>",
            // A brace left out before the close, or one too many.
            "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}</tool_call>",
            "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}}</tool_call>",
            "```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}\n```",
        ] {
            assert_eq!(calls(reply), city, "{reply}");
            assert_eq!(parse(reply).content, "", "{reply}");
        }
        // A value cut off inside its string is no call, closed or not.
        assert_eq!(calls("<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par</tool_call>"), vec![]);
        // An object with a name is a call, not a wrapper of its `tool` argument.
        let named = "<tool_call>{\"name\": \"forecast\", \"arguments\": {}, \"tool\": {\"name\": \"now\"}}</tool_call>";
        assert_eq!(calls(named), one("forecast", json!({})));
    }

    #[test]
    fn calls_under_the_keys_other_agents_use() {
        let city = one("get_weather", json!({"city": "Paris"}));
        for reply in [
            // Anthropic's tool_use block, bare or in markup.
            "{\"type\": \"tool_use\", \"id\": \"toolu_01\", \"name\": \"get_weather\", \"input\": {\"city\": \"Paris\"}}",
            "<tool_use>\n{\"name\": \"get_weather\", \"input\": {\"city\": \"Paris\"}}\n</tool_use>",
            // LangChain's agent action as prompts spell it.
            "```json\n{\"tool\": \"get_weather\", \"tool_input\": {\"city\": \"Paris\"}}\n```",
            "{\"tool\": \"get_weather\", \"args\": {\"city\": \"Paris\"}}",
        ] {
            assert_eq!(calls(reply), city, "{reply}");
            assert_eq!(parse(reply).content, "", "{reply}");
        }
        assert_eq!(
            parse("{\"type\": \"tool_use\", \"id\": \"toolu_01\", \"name\": \"now\", \"input\": {}}").calls[0].id.as_deref(),
            Some("toolu_01")
        );
        // Undeclared and bare, such JSON is an example, not a call.
        no_calls(&[
            "{\"type\": \"tool_use\", \"name\": \"delete_all\", \"input\": {}}",
            "{\"tool\": \"delete_all\", \"tool_input\": {}}",
        ]);
        // In markup it names the call, arguments or not.
        assert_eq!(calls("<tool_call>{\"tool\": \"now\"}</tool_call>"), one("now", json!({})));
        // `tool` beside no arguments names a step done, not a call.
        no_calls(&[
            "Steps so far:\n```json\n[{\"tool\": \"now\", \"result\": \"12:00\"}]\n```",
            "{\"tool\": \"now\", \"status\": \"done\"}",
        ]);
    }

    #[test]
    fn a_name_and_its_json_object_retried_before_the_close() {
        // Ollama's Laguna tests: the call opened again, written again whole.
        let retried = "<tool_call>get_weather\n{\"city\":\"Paris\"}\n<tool_call>get_weather\n{\"city\": \"Paris\"}</tool_call>";
        assert_eq!(calls(retried), one("get_weather", json!({"city": "Paris"})));
        assert_eq!(parse(retried).content, "");
        // The tag inside a string of the JSON is text, not a retry.
        let quoting = "<tool_call>get_weather {\"city\": \"Wrap calls in <tool_call> tags.\"}</tool_call>";
        assert_eq!(calls(quoting), one("get_weather", json!({"city": "Wrap calls in <tool_call> tags."})));
        assert_eq!((parse(quoting).content.as_str(), warnings(quoting)), ("", vec![]));
        // A whole call the next one does not repeat is a call of its own.
        let two = "<tool_call>get_weather {\"city\": \"Paris\"}\n<tool_call>now {}</tool_call>";
        assert_eq!(calls(two), vec![("get_weather".to_owned(), json!({"city": "Paris"})), ("now".to_owned(), json!({}))]);
    }

    #[test]
    fn a_name_and_its_json_object_in_a_tool_call_as_glm_4_7_strays_into() {
        for reply in [
            "<tool_call>get_weather {\"city\": \"Paris\"}</tool_call>",
            "<tool_call>get_weather\n{\"city\": \"Paris\"}\n</tool_call>",
        ] {
            assert_eq!(calls(reply), one("get_weather", json!({"city": "Paris"})), "{reply}");
            assert_eq!((parse(reply).content.as_str(), warnings(reply)), ("", vec![]), "{reply}");
        }
        // Prose in the tag stays prose.
        assert_eq!(calls("<tool_call>I would call {it}</tool_call>"), vec![]);
    }

    #[test]
    fn llama_json_with_and_without_python_tag() {
        let bare = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Lima\"}}";
        assert_eq!(calls(bare), one("get_weather", json!({"city": "Lima"})));
        assert_eq!(calls(&format!("<|python_tag|>{bare}<|eom_id|>")), one("get_weather", json!({"city": "Lima"})));
        assert_eq!(
            calls("<|python_tag|>{\"name\": \"undeclared\", \"parameters\": {}}"),
            one("undeclared", json!({})),
            "the python tag is explicit markup"
        );
    }

    #[test]
    fn llama_json_calls_separated_by_semicolons() {
        let (a, b) =
            ("{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Lima\"}}", "{\"name\": \"now\", \"parameters\": {}}");
        let both = vec![("get_weather".into(), json!({"city": "Lima"})), ("now".into(), json!({}))];
        for reply in [format!("<|python_tag|>{a}; {b}"), format!("{a} ; {b}"), format!("{a};\n{b}<|eot_id|>")] {
            assert_eq!(calls(&reply), both, "{reply}");
            assert_eq!(parse(&reply).content, "", "{reply}");
        }
        let around = format!("Here are the results: {a}; {b} Would you like to know more?");
        assert_eq!(calls(&around), both);
        assert_eq!(parse(&around).content, "Here are the results:  Would you like to know more?");
        assert_eq!(parse(&format!("{a}; and then")).content, "; and then", "a semicolon before prose is prose");
    }

    #[test]
    fn pythonic_calls_in_a_tool_call_tag() {
        let both = vec![("get_weather".into(), json!({"city": "Paris"})), ("undeclared_tool".into(), json!({}))];
        assert_eq!(calls("<tool_call>[get_weather(city=\"Paris\"), undeclared_tool()]</tool_call>"), both);
        assert_eq!(calls("Checking.\n<tool_call>\nget_weather(city='Paris')\nundeclared_tool()\n</tool_call>"), both);
        assert_eq!(parse("Checking.<tool_call>now()</tool_call>").content, "Checking.");
        let typed = "<tool_call>[forecast(city=\"Rome\", days=3, ratio=0.5, metric=True, options={\"a\": None})]</tool_call>";
        assert_eq!(
            super::testing::checked(typed),
            json!({"city": "Rome", "days": 3, "ratio": 0.5, "metric": true, "options": {"a": null}}).as_object().unwrap().clone()
        );
        let cut = "<tool_call>[get_weather(city=\"Par";
        assert!(calls(cut).is_empty());
        assert!(calls("<think><tool_call>[now()]</tool_call></think>").is_empty());
        assert!(calls("`<tool_call>[delete_all()]</tool_call>`").is_empty());
    }

    #[test]
    fn a_fence_in_a_json_blocks_string_does_not_turn_what_follows_into_code() {
        let edit = "```json\n{\"name\": \"calculate\", \"arguments\": {\"expression\": \"```python\\nimport os\"}}\n```";
        let example = "The syntax:\n```xml\n<tool_call>{\"name\": \"delete_all\", \"arguments\": {}}</tool_call>\n```";
        let reply = format!("{edit}\n{example}");
        assert_eq!(calls(&reply), one("calculate", json!({"expression": "```python\nimport os"})), "{reply}");
        let call = "<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>";
        let reply = format!("{edit}\nAlso:\n{call}");
        assert_eq!(
            calls(&reply),
            [one("calculate", json!({"expression": "```python\nimport os"})), one("now", json!({}))].concat()
        );
    }

    #[test]
    fn backticks_in_two_calls_on_one_line_quote_neither() {
        let reply = "<tool_call>{\"name\": \"calculate\", \"arguments\": {\"expression\": \"a`\"}}</tool_call> <tool_call>{\"arguments\": {\"expression\": \"`b\"}, \"name\": \"calculate\"}</tool_call>";
        assert_eq!(
            calls(reply),
            [one("calculate", json!({"expression": "a`"})), one("calculate", json!({"expression": "`b"}))].concat()
        );
        assert_eq!(parse(reply).content, "");
    }

    #[test]
    fn a_json_tool_call_cut_off_and_retried_is_the_retry() {
        let paris = one("get_weather", json!({"city": "Paris"}));
        let retry = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>";
        for cut in ["<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par", "<tool_call>{\"name\": \"get_we"] {
            for reply in [format!("{cut}{retry}"), format!("{cut}\n{retry}")] {
                assert_eq!(calls(&reply), paris, "{reply}");
                assert_eq!(warnings(&reply), ["<tool_call> is cut off and opened again; it is not a call"], "{reply}");
                assert_eq!(parse(&reply).content, "", "the attempt is no prose: {reply}");
            }
        }
        // The tag quoted in a string is no retry.
        let quoting = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"<tool_call>\"}}</tool_call>";
        assert_eq!(calls(quoting), one("get_weather", json!({"city": "<tool_call>"})));
        // A whole call whose close is left out before the next is a call;
        // one the next repeats is the retry's.
        let whole = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n";
        let next = "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
        let both = format!("{whole}{next}");
        assert_eq!(calls(&both), vec![("get_weather".into(), json!({"city": "Paris"})), ("now".into(), json!({}))], "{both}");
        assert_eq!(parse(&both).content, "", "{both}");
        assert_eq!(calls(&format!("{whole}{retry}")), paris, "repeated, it is one call");
        let spaced = retry.replace("\": ", "\":").replace(", ", ",");
        assert_eq!(calls(&format!("{whole}{spaced}")), paris, "repeated otherwise spaced, it is one call");
    }

    #[test]
    fn no_family_calls_from_inline_code() {
        let families = [
            "<tool_call>{\"name\": \"delete_all\", \"arguments\": {}}</tool_call>",
            "<tool_code>{\"name\": \"delete_all\", \"arguments\": {}}</tool_code>",
            "<tool_code>delete_all()</tool_code>",
            "<functioncall> {\"name\": \"delete_all\", \"arguments\": {}}",
            "<tool_call>delete_all<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>",
            "<tool_call><function>delete_all</function>{}</tool_call>",
            "<function=delete_all><parameter=a>1</parameter></function>",
            "<function=delete_all>{}</function>",
            "<minimax:tool_call><invoke name=\"delete_all\"><parameter name=\"a\">1</parameter></invoke></minimax:tool_call>",
            "<tool_calls>[{\"name\": \"delete_all\", \"arguments\": {}}]</tool_calls>",
            "<TOOLCALL>[{\"name\": \"delete_all\", \"arguments\": {}}]</TOOLCALL>",
            "<longcat_tool_call>delete_all {}</longcat_tool_call>",
            "<function_calls>delete_all()</function_calls>",
            "<|tool_call_start|>[delete_all()]<|tool_call_end|>",
            "<|python_start|>[delete_all()]<|python_end|>",
            "<|python_tag|>{\"name\": \"delete_all\", \"parameters\": {}}",
            "[TOOL_CALLS]delete_all{}",
            "[TOOL_CALLS][{\"name\": \"delete_all\", \"arguments\": {}}]",
            "<|tool_call>call:delete_all{}<tool_call|>",
            "<start_function_call>call:delete_all{}<end_function_call>",
            "<|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": \"delete_all\", \"parameters\": {}}]<|END_ACTION|>",
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.delete_all:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>",
            "<|start|>assistant<|channel|>commentary to=functions.delete_all <|constrain|>json<|message|>{}<|call|>",
        ];
        // Nor the calls of declared tools, tagged or bare.
        let declared = [
            "<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>",
            "<tool_code>{\"name\": \"now\", \"arguments\": {}}</tool_code>",
            "{\"name\": \"now\", \"arguments\": {}}",
            "[now()]",
            "[get_weather(city='Paris')]",
        ];
        let families: Vec<&str> = families.into_iter().chain(declared).collect();
        for markup in &families {
            assert!(!calls(markup).is_empty(), "the markup alone is a call: {markup}");
        }
        let called: Vec<String> = families
            .iter()
            .map(|markup| format!("Models write `{markup}` for a call."))
            .filter(|quoted| !calls(quoted).is_empty())
            .collect();
        assert_eq!(called, Vec::<String>::new());
    }

    #[test]
    fn json_calls_in_the_other_shapes_models_write_bare() {
        let paris = one("get_weather", json!({"city": "Paris"}));
        for reply in [
            // Small Llama 3 models, as llama.cpp's grammar allows them.
            "{\"type\": \"function\", \"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
            // Arguments first, as Hermes' prompt orders the keys.
            "{\"arguments\": {\"city\": \"Paris\"}, \"name\": \"get_weather\"}",
            // llama.cpp's generic format, and OpenAI's items.
            "{\"tool_call\": {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}}",
            "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}}",
            "[{\"id\": \"call_1\", \"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Paris\\\"}\"}}]",
        ] {
            assert_eq!(calls(reply), paris, "{reply}");
            assert_eq!(parse(reply).content, "", "{reply}: none of it is content");
        }
        let two = "<|python_tag|>{\"type\": \"function\", \"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}; {\"type\": \"function\", \"name\": \"now\", \"parameters\": {}}";
        assert_eq!(calls(two), [paris[0].clone(), ("now".to_owned(), json!({}))]);
        assert_eq!(parse(two).content, "");
        no_calls(&[
            "{\"type\": \"function\", \"name\": \"delete_all\", \"parameters\": {}}",
            "{\"tool_call\": {\"name\": \"delete_all\", \"arguments\": {}}}",
            "{\"parameters\": {\"type\": \"object\", \"properties\": {}}, \"name\": \"get_weather\"}",
            "{\"id\": \"call_1\", \"type\": \"message\", \"name\": \"x\"}",
        ]);
    }

    #[test]
    fn a_wrapper_left_unclosed_still_gives_its_call() {
        for reply in [
            "{\"tool_call\": {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\nChecking.",
            "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\nChecking.",
        ] {
            assert_eq!(calls(reply), one("get_weather", json!({"city": "Paris"})), "{reply}");
        }
    }

    #[test]
    fn pythonic_lists() {
        assert_eq!(
            calls("[get_weather(city=\"Paris\", days=3), now()]"),
            vec![("get_weather".into(), json!({"city": "Paris", "days": 3})), ("now".into(), json!({}))]
        );
        assert_eq!(
            calls("[get_weather(city='Paris', metric=True)]"),
            one("get_weather", json!({"city": "Paris", "metric": true}))
        );
        assert!(calls("see [print(x=1)] in the docs").is_empty(), "only declared functions");
        // A format's namespace names no part of the tool.
        assert_eq!(calls("[default_api.get_weather(city='Paris')]"), one("get_weather", json!({"city": "Paris"})));
        assert!(calls("[default_api.delete_all()]").is_empty(), "only declared functions");
        // Bare, a list ends its line (or its turn, or an element around
        // it): mid-sentence it is an example.
        let example = "For example, you could write [get_weather(city=\"Paris\")] to call it, but I won't.";
        prose(example);
        for reply in [
            "Let me check: [now()]",
            "[now()]\nOne moment.",
            "[now()]<|eot_id|>",
            "[now()]<|eot_id|><|start_header_id|>assistant<|end_header_id|>",
            "<response>[now()]</response>",
            "**[now()]**",
            "[now()].",
        ] {
            assert_eq!(calls(reply), one("now", json!({})), "{reply}");
        }
        assert_eq!(calls("[now()][get_weather(city='Paris')]").len(), 2, "two lists, one after the other");
    }

    #[test]
    fn function_tags() {
        assert_eq!(calls("<function=get_weather>{\"city\": \"Kyiv\"}</function>"), one("get_weather", json!({"city": "Kyiv"})));
    }

    #[test]
    fn fenced_objects_and_arrays() {
        assert_eq!(
            calls("```json\n{\"name\": \"calculate\", \"arguments\": {\"expression\": \"2\"}}\n```"),
            one("calculate", json!({"expression": "2"}))
        );
        assert_eq!(
            calls(
                "```\n[{\"name\": \"now\", \"arguments\": {}}, {\"name\": \"calculate\", \"arguments\": {\"expression\": \"3\"}}]\n```"
            ),
            vec![("now".into(), json!({})), ("calculate".into(), json!({"expression": "3"}))]
        );
    }

    #[test]
    fn the_protocols_own_formats() {
        assert_eq!(calls("<<<[TOOL_REQUEST]>>>tool_name:「始」now「末」<<<[END_TOOL_REQUEST]>>>"), one("now", json!({})));
        assert_eq!(calls("<tool_code>{\"name\": \"now\", \"arguments\": {}}</tool_code>"), one("now", json!({})));
        assert_eq!(
            calls(
                "{\"tool_calls\": [{\"id\": \"c1\", \"type\": \"function\", \"function\": {\"name\": \"now\", \"arguments\": \"{}\"}}]}"
            ),
            one("now", json!({}))
        );
    }

    #[test]
    fn a_python_dict_example_in_a_fence_inside_prose_is_not_a_call() {
        let example =
            "Here is an example:\n```\n{'name': 'get_weather', 'arguments': {'city': 'Paris'}}\n```\nThat is how you call it.";
        assert!(calls(example).is_empty());
        assert_eq!(parse(example).content, example);
        assert!(
            calls("For instance:\n```python\ntools = {'name': 'get_weather', 'arguments': {'city': 'Paris'}}\n```").is_empty()
        );
        let call = "```\n{'name': 'get_weather', 'arguments': {'city': 'Paris'}}\n```";
        assert_eq!(calls(call), one("get_weather", json!({"city": "Paris"})), "a fenced call with nothing after it");
        let json = "Calling:\n```\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n```\nOne moment.";
        assert_eq!(calls(json).len(), 1, "JSON in a plain fence is still a call");
    }

    #[test]
    fn a_json_list_inside_an_answer_is_an_example() {
        // vLLM tests/tool_parsers/test_hunyuan_a13b_tool_parser.py: calls
        // stand in <tool_calls>, an answer's JSON is content; LFM2 likewise
        // writes its calls between <|tool_call_start|> tokens.
        prose(
            "<answer>The list looks like [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}], one item per call.</answer>",
        );
        prose("An example: [{\"name\": \"now\", \"arguments\": {}}] and that is all.");
        let last = "Calling:\n[{\"name\": \"now\", \"arguments\": {}}]";
        assert_eq!(calls(last), one("now", json!({})), "a list that ends the reply is its calls");
    }

    #[test]
    fn a_bare_json_object_is_a_call_only_for_a_declared_tool() {
        assert!(calls("An example: {\"name\": \"delete_everything\", \"arguments\": {}}").is_empty());
        assert_eq!(calls("Calling {\"name\": \"now\", \"arguments\": {}} now").len(), 1);
    }

    #[test]
    fn json_calls_may_name_their_arguments_args() {
        assert_eq!(
            calls("<tool_call>{\"name\": \"get_weather\", \"args\": {\"city\": \"Oslo\"}}</tool_call>"),
            one("get_weather", json!({"city": "Oslo"}))
        );
        assert_eq!(calls("Sure: {\"name\": \"now\", \"args\": {\"zone\": \"UTC\"}}"), one("now", json!({"zone": "UTC"})));
        assert_eq!(
            calls(
                "<tool_call>{\"name\": \"now\", \"arguments\": {\"zone\": \"UTC\"}, \"args\": {\"zone\": \"CET\"}}</tool_call>"
            ),
            one("now", json!({"zone": "UTC"})),
            "`arguments` is preferred"
        );
        assert!(calls("An example: {\"name\": \"rm\", \"args\": {}}").is_empty(), "bare, only a declared tool");
    }

    #[test]
    fn calls_in_reasoning_are_not_calls() {
        assert!(
            calls("<think>maybe <tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call></think>No tools needed.")
                .is_empty()
        );
        assert!(calls("<think>[get_weather(city=\"x\")] {\"name\": \"now\"}").is_empty());
    }

    #[test]
    fn json_fenced_inside_a_tool_call_element_is_its_call() {
        let reply = "Sure.\n<tool_call>\n```json\n{\"name\": \"now\", \"arguments\": {\"zone\": \"UTC\"}}\n```\n</tool_call>";
        assert_eq!(calls(reply), one("now", json!({"zone": "UTC"})));
        let parsed = parse(reply);
        assert_eq!(parsed.content, "Sure.");
        assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
        // A fence that is not the whole body is no call's.
        let unclosed = "<tool_call>\n```json\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
        assert!(inside_fence(&unclosed["<tool_call>".len()..unclosed.len() - "</tool_call>".len()], 0).is_none());
    }

    #[test]
    fn a_reply_of_nothing_but_declared_pythonic_calls_is_its_calls() {
        assert_eq!(calls("get_weather(city=\"Paris\")"), one("get_weather", json!({"city": "Paris"})));
        assert_eq!(calls("default_api.get_weather(city=\"Paris\")"), one("get_weather", json!({"city": "Paris"})));
        let two = "<think>Both, then.</think>\nget_weather(city='Paris')\nnow()<|eot_id|>";
        assert_eq!(calls(two), [("get_weather".to_owned(), json!({"city": "Paris"})), ("now".to_owned(), json!({}))]);
        assert_eq!(parse(two).content, "<think>Both, then.</think>", "the reasoning is kept, as always");
        for text in [
            "Try get_weather(city=\"Paris\") to see.",
            "get_weather(city=\"Paris\")\nThat is how you call it.",
            "delete_all()",
            "get_weather(city=\"Paris\")\ndelete_all()",
            "print(get_weather(city='Paris'))",
            "get_weather(\"Paris\")",
        ] {
            prose(text);
        }
    }

    #[test]
    fn phi4_minis_functools_array_leaves_no_word_in_the_content() {
        let reply = "Checking.\nfunctools[{\"name\": \"now\", \"arguments\": {\"zone\": \"UTC\"}}, {\"name\": \"calculate\", \"arguments\": {\"expression\": \"1+1\"}}]";
        assert_eq!(
            calls(reply),
            vec![("now".into(), json!({"zone": "UTC"})), ("calculate".into(), json!({"expression": "1+1"}))]
        );
        assert_eq!(parse(reply).content, "Checking.");
        // The word alone, or before JSON that is no call, stays prose.
        prose("Python's functools[0] is not a thing.");
        prose("functools[{\"name\": \"undeclared_tool\", \"arguments\": {}}]");
    }

    #[test]
    fn arguments_given_as_a_json_string_even_twice_encoded_are_decoded() {
        assert_eq!(
            calls("<tool_call>{\"name\": \"now\", \"arguments\": \"{\\\"zone\\\": \\\"UTC\\\"}\"}</tool_call>"),
            one("now", json!({"zone": "UTC"}))
        );
        let twice = serde_json::to_string(&serde_json::to_string(&json!({"zone": "UTC"})).unwrap()).unwrap();
        let reply = format!("<tool_call>{{\"name\": \"now\", \"arguments\": {twice}}}</tool_call>");
        assert_eq!(calls(&reply), one("now", json!({"zone": "UTC"})));
        assert!(parse(&reply).warnings.iter().any(|w| w.message == "repaired: arguments given as a JSON string"));
        // The element and the JSON inside it are both read; the repair of
        // the one call they share is reported once.
        let once = "<tool_call>\n{\"name\": \"now\", \"arguments\": \"{\\\"zone\\\": \\\"UTC\\\"}\"}\n</tool_call>";
        assert_eq!(calls(once), one("now", json!({"zone": "UTC"})));
        assert_eq!(warnings(once), ["repaired: arguments given as a JSON string"]);
    }

    #[test]
    fn found_by_the_property_test() {
        // A resume point inside a multi-byte character panicked; one past
        // the end looped forever.
        assert!(calls("「末ESCAPE」[calc(x=𝃢🕴.;").is_empty());
        assert!(calls("[calc(x=").is_empty());
        assert!(calls("{\"name\": \"now\", \"arguments\": ").is_empty());
    }

    #[test]
    fn a_name_written_with_spaces_dots_or_another_case_is_the_declared_tool_it_means() {
        // melody's cofl tests name a tool with a space (`search "web"`);
        // MiniMax's and DSML's invoke names are quoted attributes, which may
        // hold spaces (issue 33's held-out replies).
        assert_eq!(
            calls(
                "<minimax:tool_call><invoke name=\"Get Weather\"><parameter name=\"city\">Paris</parameter></invoke></minimax:tool_call>"
            ),
            one("get_weather", json!({"city": "Paris"}))
        );
        assert_eq!(calls("<tool_call>{\"name\": \"get.weather\", \"arguments\": {}}</tool_call>"), one("get_weather", json!({})));
        assert_eq!(calls("<tool_call>{\"name\": \"NOW\", \"arguments\": {}}</tool_call>"), one("now", json!({})));
        // After a namespace, as GPT models write it in a tag.
        assert_eq!(calls("<tool_call>{\"name\": \"functions.now\", \"arguments\": {}}</tool_call>"), one("now", json!({})));
        assert_eq!(calls("<tool_call>{\"name\": \"default_api.now\", \"arguments\": {}}</tool_call>"), one("now", json!({})));
        assert_eq!(
            calls("<tool_call>{\"name\": \"weather\", \"arguments\": {}}</tool_call>"),
            one("weather", json!({})),
            "another name stays itself, for the check step to refuse"
        );
        let declared = super::super::Declared::new(["get_weather", "Get_Weather"]);
        assert_eq!(declared.meant("get weather"), None, "ambiguous");
        assert_eq!(declared.meant("get_weather"), None, "declared");
    }

    #[test]
    fn one_call_is_not_found_twice() {
        let reply = "```json\n{\"name\": \"now\", \"arguments\": {}}\n```\n<tool_call>{\"name\": \"calculate\", \"arguments\": {\"expression\": \"1\"}}</tool_call>";
        assert_eq!(calls(reply).len(), 2);
    }
}
