//! Scanning helpers every parser shares: reasoning regions that are not
//! searched, forward searches that stay linear however often they are
//! asked, and the assembly of a [`Parsed`] from calls and warnings.

use super::lenient_json;
use super::{MAX_WARNINGS, Parsed, ParsedCall, Warning};
use crate::marker_index::MarkerIndex;
use std::collections::HashSet;
use std::ops::Range;

// The plain searches live beside the index that stands in for them.
pub(crate) use crate::marker_index::{find, find_open_bracket};

/// The first byte at or after `p` that is not ASCII white space.
pub(crate) fn skip_ws(bytes: &[u8], mut p: usize) -> usize {
    while bytes.get(p).is_some_and(|b| b.is_ascii_whitespace()) {
        p += 1;
    }
    p
}

/// Opens a reasoning region.
pub(crate) const THINK_OPEN: &str = "<think>";
/// Closes a reasoning region.
pub(crate) const THINK_CLOSE: &str = "</think>";
/// Opens Command R7B's reasoning.
pub(crate) const COMMAND_R_THINKING_OPEN: &str = "<|START_THINKING|>";
/// Closes it.
pub(crate) const COMMAND_R_THINKING_CLOSE: &str = "<|END_THINKING|>";
/// Opens gpt-oss's reasoning: a Harmony message on the analysis channel
/// with no recipient (one addressed `to=` a tool is a call).
pub(crate) const HARMONY_ANALYSIS_OPEN: &str = "<|channel|>analysis<|message|>";
/// Ends a Harmony message, and so the analysis.
pub(crate) const HARMONY_END: &str = "<|end|>";
/// Opens a Harmony message's header: the analysis before it has ended,
/// its `<|end|>` written or not (llama.cpp's tests leave it out).
const HARMONY_START: &str = "<|start|>";
/// What opens a Harmony message's body.
const HARMONY_MESSAGE: &str = "<|message|>";
/// Muse Glimmer's recipient of a message to itself, before its body.
const GLIMMER_TO_SELF: &str = "to=self";
/// What ends a Muse Glimmer message that is not the last.
const GLIMMER_MESSAGE_END: &str = "<|eom|>";
/// Opens Seed-OSS's reasoning.
pub(crate) const SEED_THINK_OPEN: &str = "<seed:think>";
/// Closes it.
pub(crate) const SEED_THINK_CLOSE: &str = "</seed:think>";
/// Opens Magistral's and Devstral's reasoning.
pub(crate) const MISTRAL_THINK_OPEN: &str = "[THINK]";
/// Closes it.
pub(crate) const MISTRAL_THINK_CLOSE: &str = "[/THINK]";
/// Opens Hunyuan V3's reasoning as its shipped tokenizer writes it.
pub(crate) const HY3_THINK_OPEN: &str = "<think:opensource>";
/// Closes it.
pub(crate) const HY3_THINK_CLOSE: &str = "</think:opensource>";
/// Opens Apertus's reasoning.
pub(crate) const APERTUS_INNER_OPEN: &str = "<|inner_prefix|>";
/// Closes it.
pub(crate) const APERTUS_INNER_CLOSE: &str = "<|inner_suffix|>";
/// Opens Gemma 4's reasoning (`<|channel>thought…`).
pub(crate) const GEMMA4_CHANNEL_OPEN: &str = "<|channel>";
/// Closes it.
pub(crate) const GEMMA4_CHANNEL_CLOSE: &str = "<channel|>";
/// Opens MiniMax M3's reasoning.
pub(crate) const MINIMAX_THINK_OPEN: &str = "<mm:think>";
/// Closes it.
pub(crate) const MINIMAX_THINK_CLOSE: &str = "</mm:think>";
/// Opens the reasoning Cline's prompt asks for (and Claude writes).
pub(crate) const THINKING_OPEN: &str = "<thinking>";
/// Closes it.
pub(crate) const THINKING_CLOSE: &str = "</thinking>";
/// Opens Solar Open 2's reasoning.
pub(crate) const SOLAR_THINK_OPEN: &str = "<|think:start|>";
/// Closes it.
pub(crate) const SOLAR_THINK_CLOSE: &str = "<|think:end|>";
/// Opens Kimi K3's reasoning channel.
pub(crate) const KIMI_K3_THINK_OPEN: &str = "<|open|>think<|sep|>";
/// Closes it.
pub(crate) const KIMI_K3_THINK_CLOSE: &str = "<|close|>think<|sep|>";
/// What Apertus's two markers start with, searched for once for both.
const APERTUS_INNER: &str = "<|inner_";
/// Every pair of markers around reasoning, open and close.
pub(crate) const REASONING: [(&str, &str); 12] = [
    (THINK_OPEN, THINK_CLOSE),
    (HY3_THINK_OPEN, HY3_THINK_CLOSE),
    (SEED_THINK_OPEN, SEED_THINK_CLOSE),
    (MISTRAL_THINK_OPEN, MISTRAL_THINK_CLOSE),
    (COMMAND_R_THINKING_OPEN, COMMAND_R_THINKING_CLOSE),
    (HARMONY_ANALYSIS_OPEN, HARMONY_END),
    (APERTUS_INNER_OPEN, APERTUS_INNER_CLOSE),
    (GEMMA4_CHANNEL_OPEN, GEMMA4_CHANNEL_CLOSE),
    (MINIMAX_THINK_OPEN, MINIMAX_THINK_CLOSE),
    (KIMI_K3_THINK_OPEN, KIMI_K3_THINK_CLOSE),
    (SOLAR_THINK_OPEN, SOLAR_THINK_CLOSE),
    (THINKING_OPEN, THINKING_CLOSE),
];

/// The reasoning a prompt can open, so that the reply holds only its close:
/// `<think>` (templates that think by default), Gemma 4's
/// `<|channel>thought` (its prompt after a tool's result), Command A
/// Reasoning's `<|START_THINKING|>` and Kimi K3's think channel.
const PROMPT_OPENED: [(&str, &str); 4] = [
    (THINK_OPEN, THINK_CLOSE),
    (GEMMA4_CHANNEL_OPEN, GEMMA4_CHANNEL_CLOSE),
    (COMMAND_R_THINKING_OPEN, COMMAND_R_THINKING_CLOSE),
    (KIMI_K3_THINK_OPEN, KIMI_K3_THINK_CLOSE),
];

/// The reasoning regions of a reply: `<think>…</think>`, Seed-OSS's
/// `<seed:think>…</seed:think>`, Mistral's `[THINK]…[/THINK]`, Command R7B's
/// `<|START_THINKING|>…<|END_THINKING|>`, gpt-oss's analysis messages,
/// Apertus's `<|inner_prefix|>…<|inner_suffix|>`, Hunyuan V3's
/// `<think:opensource>…</think:opensource>`, Gemma 4's
/// `<|channel>…<channel|>`, MiniMax M3's `<mm:think>…</mm:think>`, Kimi
/// K3's think channel, Solar Open 2's `<|think:start|>…<|think:end|>` and
/// the `<thinking>…</thinking>` that Cline's prompt asks for. After an unclosed opening
/// the rest of the reply is reasoning (an unclosed `<think>` only up to a
/// section of calls' special token); before the close of reasoning
/// that nothing opened, the start of the reply is ([`PROMPT_OPENED`]).
pub(crate) struct Reasoning {
    regions: Vec<Range<usize>>,
}

impl Reasoning {
    /// The regions of the reply `markers` indexes.
    pub(crate) fn find(markers: &MarkerIndex<'_>) -> Self {
        let reply = markers.text();
        let mut regions = Vec::new();
        for (open_marker, close_marker) in REASONING {
            if open_marker == APERTUS_INNER_OPEN {
                apertus_regions(markers, &mut regions);
                continue;
            }
            let mut at = 0;
            // Remembered: a region may now end before its close (a Harmony
            // analysis at the next `<|start|>`), so the next region's
            // search for it must not read the text again.
            let mut closes = Forward::indexed(markers, close_marker);
            let mut starts = Forward::indexed(markers, HARMONY_START);
            while let Some(open) = markers.find(at, open_marker) {
                let body = open + open_marker.len();
                let mut close = closes.next(body).map(|close| close + close_marker.len());
                if open_marker == HARMONY_ANALYSIS_OPEN
                    && let Some(next) = starts.next(body)
                    && close.is_none_or(|end| next < end)
                {
                    close = Some(next);
                }
                match close {
                    Some(end) => {
                        regions.push(open..end);
                        at = end;
                    }
                    None => {
                        let end = match open_marker {
                            THINK_OPEN => unclosed_thinking_end(markers, body),
                            // Solar Open 2 calls before closing its reasoning.
                            SOLAR_THINK_OPEN => {
                                markers.find(body, crate::section_tokens::SOLAR_CALL_START).unwrap_or(reply.len())
                            }
                            _ => reply.len(),
                        };
                        regions.push(open..end);
                        break;
                    }
                }
            }
        }
        for (open_marker, close_marker) in PROMPT_OPENED {
            let first_open = regions
                .iter()
                .filter(|r| reply[r.start..].starts_with(open_marker))
                .map(|r| r.start)
                .min()
                .unwrap_or(reply.len());
            // A close the prompt's opening explains ends before the reply
            // opens one.
            if let Some(end) =
                first_unquoted(markers, close_marker).map(|close| close + close_marker.len()).filter(|&end| end <= first_open)
            {
                regions.push(0..end);
            }
        }
        glimmer_self_regions(markers, &mut regions);
        Reasoning { regions: merge(regions) }
    }

    /// Whether `offset` lies in reasoning.
    pub(crate) fn contains(&self, offset: usize) -> bool {
        self.skip(offset).is_some()
    }

    /// The end of the reasoning region holding `offset`, if any.
    pub(crate) fn skip(&self, offset: usize) -> Option<usize> {
        region_at(&self.regions, offset).map(|r| r.end)
    }
}

/// The first `marker` that does not stand inside a `<tool_call>` element
/// of a call opened before it and closed after it: a call's argument may
/// quote it (`{"text": "… </think> …"}`), and reasoning does not end there.
/// Each element is read at most twice.
fn first_unquoted(markers: &MarkerIndex<'_>, marker: &str) -> Option<usize> {
    use crate::section_tokens::TOOL_CALL;
    let mut elements =
        Elements { markers, opens: Forward::indexed(markers, TOOL_CALL.0), closes: Forward::indexed(markers, TOOL_CALL.1) };
    let (mut at, mut calls_from, mut last_call) = (0, 0, None);
    while let Some(found) = markers.find(at, marker) {
        while let Some(open) = elements.opens.next(calls_from).filter(|&open| open < found) {
            last_call = Some(open);
            calls_from = open + TOOL_CALL.0.len();
        }
        match last_call.and_then(|open| elements.call_close(open, found)).filter(|&close| close > found) {
            Some(close) => at = close,
            None => return Some(found),
        }
    }
    None
}

/// The `<tool_call>` elements of a reply, asked about in order.
struct Elements<'a> {
    markers: &'a MarkerIndex<'a>,
    opens: Forward<'a>,
    closes: Forward<'a>,
}

impl Elements<'_> {
    /// Where the element opened at `open` closes, if it holds a call whose
    /// value quotes `at`: JSON (closed after its value, so a string may
    /// hold the close), or a Qwen3-Coder `<function=…>` or GLM
    /// `NAME<arg_key>` call with `at` inside one argument's value, closed
    /// before another opens, and the element closed after it with none
    /// opened again. Prose that names the tag ("I will write a <tool_call>
    /// …"), and a draft whose reasoning ends after its values, quote
    /// nothing.
    fn call_close(&mut self, open: usize, at: usize) -> Option<usize> {
        use crate::section_tokens::TOOL_CALL;
        let reply = self.markers.text();
        let body = open + TOOL_CALL.0.len();
        let text = reply[body..].trim_start();
        if text.starts_with(['{', '[']) {
            return lenient_json::close_after_value(reply, body, TOOL_CALL.1);
        }
        let name_end = text.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))).unwrap_or(text.len());
        let (value_open, value_close) = if name_end > 0 && text[name_end..].trim_start().starts_with(GLM_ARG_KEY) {
            GLM_VALUE
        } else if text.starts_with(QWEN_FUNCTION) {
            QWEN_VALUE
        } else {
            return None;
        };
        let value = body + reply[body..at].rfind(value_open)?;
        if reply[value..at].contains(value_close) {
            return None;
        }
        let value_end = at + reply[at..].find(value_close)?;
        if reply[at..value_end].contains(value_open) {
            return None;
        }
        let close = self.closes.next(value_end)?;
        self.opens.next(body).is_none_or(|again| again > close).then_some(close)
    }
}

/// What opens a GLM call's first argument, after its name.
const GLM_ARG_KEY: &str = "<arg_key>";
/// Around one argument's value in a GLM call.
const GLM_VALUE: (&str, &str) = ("<arg_value>", "</arg_value>");
/// Around one argument's value in a Qwen3-Coder call.
const QWEN_VALUE: (&str, &str) = ("<parameter=", "</parameter>");
/// What opens a Qwen3-Coder call in a `<tool_call>` element.
const QWEN_FUNCTION: &str = "<function=";

/// Apertus's `<|inner_prefix|>…<|inner_suffix|>` regions, both markers
/// found by one search for their common start. A suffix that comes before any prefix closes reasoning
/// the prompt opened: llama.cpp ends the prompt with the prefix when
/// thinking is on.
fn apertus_regions(markers: &MarkerIndex<'_>, regions: &mut Vec<Range<usize>>) {
    let reply = markers.text();
    let (mut open, mut marked) = (None, false);
    let mut at = 0;
    while let Some(found) = markers.find(at, APERTUS_INNER) {
        let rest = &reply[found..];
        at = if rest.starts_with(APERTUS_INNER_OPEN) {
            open = open.or(Some(found));
            marked = true;
            found + APERTUS_INNER_OPEN.len()
        } else if rest.starts_with(APERTUS_INNER_CLOSE) {
            let end = found + APERTUS_INNER_CLOSE.len();
            match open.take() {
                Some(start) => regions.push(start..end),
                None if !marked => regions.push(0..end),
                None => {}
            }
            marked = true;
            end
        } else {
            found + APERTUS_INNER.len()
        };
    }
    if let Some(start) = open {
        regions.push(start..reply.len());
    }
}

/// Muse Glimmer's messages to itself, its reasoning: `to=self<|message|>`
/// (after `<|start|>assistant`, or at the reply's start, where the
/// template wrote those), to the `<|eom|>` that ends it, the next
/// message's `<|start|>`, or the reply's end.
fn glimmer_self_regions(markers: &MarkerIndex<'_>, regions: &mut Vec<Range<usize>>) {
    let reply = markers.text();
    let (mut ends, mut starts) = (Forward::indexed(markers, GLIMMER_MESSAGE_END), Forward::indexed(markers, HARMONY_START));
    let mut at = 0;
    while let Some(message) = markers.find(at, HARMONY_MESSAGE) {
        at = message + HARMONY_MESSAGE.len();
        let Some(header) = reply[..message].trim_end().strip_suffix(GLIMMER_TO_SELF) else { continue };
        let lead = header.trim_end();
        if !(lead.is_empty() || lead.ends_with("assistant") || lead.ends_with('\n')) {
            continue;
        }
        let end = [ends.next(at).map(|end| end + GLIMMER_MESSAGE_END.len()), starts.next(at)].into_iter().flatten().min();
        let end = end.unwrap_or(reply.len());
        regions.push(header.len()..end);
        at = end;
    }
}

/// Where a `<think>` that is never closed ends, its text starting at
/// `body`: at the first section of calls, or Kimi's call token
/// (`section_tokens`), or the first
/// `<tool_call>` of calls that end the reply, else at the reply's end. (Only a special token ends it: text that merely looks
/// like a call stays reasoning.)
fn unclosed_thinking_end(markers: &MarkerIndex<'_>, body: usize) -> usize {
    use crate::section_tokens::{CALLS_END_THINKING, TOOL_CALL};
    let reply = markers.text();
    let calls_end_reply = reply.trim_end().ends_with(TOOL_CALL.1);
    let tool_call = calls_end_reply.then(|| markers.find(body, TOOL_CALL.0)).flatten();
    CALLS_END_THINKING.iter().filter_map(|token| markers.find(body, token)).chain(tool_call).min().unwrap_or(reply.len())
}

/// Sorted, overlapping ranges joined into one.
fn merge(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for range in ranges {
        match merged.last_mut() {
            Some(last) if range.start < last.end => last.end = last.end.max(range.end),
            _ => merged.push(range),
        }
    }
    merged
}

/// The range of sorted, disjoint `ranges` that holds `offset`.
fn region_at(ranges: &[Range<usize>], offset: usize) -> Option<&Range<usize>> {
    let i = ranges.partition_point(|r| r.end <= offset);
    ranges.get(i).filter(|r| r.contains(&offset))
}

/// Opens and closes a fenced code block.
pub(crate) const FENCE: &str = "```";

/// Names a ReAct call's tool at the start of a line; before a fenced block
/// (Command R's `Action: ```json`, LangChain's `Action:` and the block on
/// the next line), it labels the calls the block holds.
pub(crate) const ACTION: &str = "Action:";

/// How a piece of a reply is quoted as code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quoted {
    /// In a ``` fenced block.
    Fenced,
    /// In a `code span` on one line.
    Inline,
}

/// Where a reply quotes code: ``` fenced blocks (paired in order, as the
/// fence scanner pairs them; an unclosed one runs to the end) and inline
/// spans, a run of one or two backticks closed by the same run on the same
/// line. Markup quoted as code is being shown, not used.
pub(crate) struct Code {
    /// (region, how), sorted and disjoint.
    regions: Vec<(Range<usize>, Quoted)>,
}

/// The longest backtick run that opens an inline span; three open a fence.
const MAX_INLINE_TICKS: usize = 2;

impl Code {
    pub(crate) fn find(reply: &str) -> Self {
        let bytes = reply.as_bytes();
        let mut regions = Vec::new();
        let mut fence_open: Option<usize> = None;
        // The end of the line `at` is on, once looked for; and, by a run's
        // length, the end of a line on which no run of that length follows
        // the last one that looked: each looked for again per backtick made
        // a long line of them cost the square of its length.
        let mut line_end = 0;
        let mut no_close_before = [0usize; MAX_INLINE_TICKS + 1];
        let mut at = 0;
        while let Some(tick) = memchr::memchr(b'`', &bytes[at..]).map(|i| i + at) {
            let run = bytes[tick..].iter().take_while(|&&b| b == b'`').count();
            at = tick + run;
            if run == FENCE.len()
                && fence_open.is_none()
                && let Some(close) = json_block_close(reply, tick)
            {
                regions.push((tick..close + FENCE.len(), Quoted::Fenced));
                at = close + FENCE.len();
                continue;
            }
            if run >= FENCE.len() {
                // A longer run is fences, one after another, and the
                // backticks after them. All in one pass: counting the rest
                // of the run again after each fence made a long run cost
                // the square of its length.
                let fences = run / FENCE.len();
                for fence in (0..fences).map(|n| tick + n * FENCE.len()) {
                    match fence_open.take() {
                        Some(open) => regions.push((open..fence + FENCE.len(), Quoted::Fenced)),
                        None => fence_open = Some(fence),
                    }
                }
                at = tick + fences * FENCE.len();
                continue;
            }
            if fence_open.is_some() || run > MAX_INLINE_TICKS {
                continue;
            }
            if line_end < at {
                line_end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| i + at);
            }
            if no_close_before[run] == line_end {
                continue;
            }
            match inline_close(&bytes[at..line_end], run) {
                Some(close) => {
                    let end = at + close + run;
                    regions.push((tick..end, Quoted::Inline));
                    at = end;
                }
                None => no_close_before[run] = line_end,
            }
        }
        if let Some(open) = fence_open {
            regions.push((open..reply.len(), Quoted::Fenced));
        }
        Code { regions }
    }

    /// How the text at `offset` is quoted, if it is.
    pub(crate) fn at(&self, offset: usize) -> Option<Quoted> {
        self.region(offset).map(|(_, how)| how)
    }

    /// The quoted region `offset` is in, and how it is quoted.
    pub(crate) fn region(&self, offset: usize) -> Option<(Range<usize>, Quoted)> {
        let i = self.regions.partition_point(|(r, _)| r.end <= offset);
        self.regions.get(i).filter(|(r, _)| r.contains(&offset)).cloned()
    }
}

/// The fence that closes the block opened by the fence at `open`, when
/// the block is JSON (its language `json` or none) and its value reads:
/// the fence after the value, as the fence scanner closes it, though a
/// string in the value may hold fences.
fn json_block_close(reply: &str, open: usize) -> Option<usize> {
    // The language is a word: looked for in a few bytes, so that a line of
    // fences costs no search to its end per fence.
    let info_start = open + FENCE.len();
    let info = &reply.as_bytes()[info_start..reply.len().min(info_start + 32)];
    let line_end = memchr::memchr(b'\n', info)? + info_start;
    let language = reply[info_start..line_end].trim();
    (language.is_empty() || language.eq_ignore_ascii_case("json")).then_some(())?;
    lenient_json::close_after_value(reply, line_end + 1, FENCE)
}

/// Where, in `line`, a run of exactly `run` backticks stands.
fn inline_close(line: &[u8], run: usize) -> Option<usize> {
    let mut at = 0;
    while let Some(tick) = memchr::memchr(b'`', &line[at..]).map(|i| i + at) {
        let length = line[tick..].iter().take_while(|&&b| b == b'`').count();
        if length == run {
            return Some(tick);
        }
        at = tick + length;
    }
    None
}

/// Finds the next occurrence of a needle at or after a position. Answers
/// are remembered, so asking with increasing positions costs one pass over
/// the text in total.
pub(crate) struct Forward<'a> {
    text: &'a str,
    /// The text's index, when the needle is a marker searched in prose.
    markers: Option<&'a MarkerIndex<'a>>,
    needle: &'a str,
    /// The last answer: the first occurrence at or after `asked`.
    cached: Option<(usize, Option<usize>)>,
    /// The last occurrence [`last_before`](Self::last_before) passed.
    passed: Option<usize>,
}

impl<'a> Forward<'a> {
    pub(crate) fn new(text: &'a str, needle: &'a str) -> Self {
        Forward { text, markers: None, needle, cached: None, passed: None }
    }

    /// Searches through `markers`, for a marker searched in a whole reply.
    pub(crate) fn indexed(markers: &'a MarkerIndex<'a>, needle: &'a str) -> Self {
        Forward { text: markers.text(), markers: Some(markers), needle, cached: None, passed: None }
    }

    /// What it searches for.
    pub(crate) fn needle(&self) -> &'a str {
        self.needle
    }

    /// The last occurrence that starts before `end`, for `end`s asked in
    /// increasing order: each occurrence is passed once, so the time stays
    /// linear however many are asked.
    pub(crate) fn last_before(&mut self, end: usize) -> Option<usize> {
        while let Some(at) = self.next(self.passed.map_or(0, |passed| passed + 1)).filter(|&at| at < end) {
            self.passed = Some(at);
        }
        self.passed
    }

    pub(crate) fn next(&mut self, from: usize) -> Option<usize> {
        if let Some((asked, found)) = self.cached
            && asked <= from
            && found.is_none_or(|f| f >= from)
        {
            return found;
        }
        let found = match self.markers {
            Some(markers) => markers.find(from, self.needle),
            None => find(self.text, from, self.needle),
        };
        self.cached = Some((from, found));
        found
    }
}

/// Between two calls, a separator rather than prose.
const CALL_SEPARATOR: &str = ";";

/// Collects calls and warnings, and assembles the [`Parsed`].
pub(crate) struct Collector<'a> {
    reply: &'a str,
    /// Calls grouped by the span they were found in (one JSON array can
    /// hold several calls).
    groups: Vec<(Range<usize>, Vec<ParsedCall>)>,
    warnings: Vec<Warning>,
    dropped: usize,
    /// Text shown in the content in place of a span of markup (an answer
    /// written as JSON: its text).
    answers: Vec<(Range<usize>, String)>,
    /// Where JSON that markup around it closes was read whole, calls or
    /// none: a scan for bare JSON passes it by rather than warn of it again.
    json_read: HashSet<usize>,
}

impl<'a> Collector<'a> {
    pub(crate) fn new(reply: &'a str) -> Self {
        Collector { reply, groups: Vec::new(), warnings: Vec::new(), dropped: 0, answers: Vec::new(), json_read: HashSet::new() }
    }

    /// JSON starting at `at` was read whole as the body of markup.
    pub(crate) fn json_read_at(&mut self, at: usize) {
        self.json_read.insert(at);
    }

    /// Whether JSON starting at `at` was read whole as the body of markup.
    pub(crate) fn was_json_read_at(&self, at: usize) -> bool {
        self.json_read.contains(&at)
    }

    /// Markup at `span` whose content is `text`: an answer written as
    /// JSON, shown as its text.
    pub(crate) fn answer(&mut self, span: Range<usize>, text: String) {
        self.answers.push((span.clone(), text));
        self.markup(span);
    }

    pub(crate) fn call(&mut self, call: ParsedCall) {
        self.groups.push((call.span.clone(), vec![call]));
    }

    /// Calls found together in `span`, e.g. the items of one JSON array.
    pub(crate) fn calls(&mut self, span: Range<usize>, calls: Vec<ParsedCall>) {
        if !calls.is_empty() {
            self.groups.push((span, calls));
        }
    }

    /// Markup around calls that is no part of the prose (a section token,
    /// a response marker): left out of the content like a call.
    pub(crate) fn markup(&mut self, span: Range<usize>) {
        self.groups.push((span, Vec::new()));
    }

    pub(crate) fn warn(&mut self, offset: usize, message: impl Into<String>) {
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(Warning { offset, message: message.into() });
        } else {
            self.dropped += 1;
        }
    }

    /// The spans in which calls have been collected so far, sorted.
    pub(crate) fn call_spans(&self) -> Vec<Range<usize>> {
        let mut spans: Vec<_> = self.groups.iter().filter(|(_, calls)| !calls.is_empty()).map(|(span, _)| span.clone()).collect();
        spans.sort_by_key(|span| (span.start, std::cmp::Reverse(span.end)));
        spans
    }

    /// How many groups of calls have been collected so far.
    pub(crate) fn len(&self) -> usize {
        self.groups.len()
    }

    /// Calls in reply order, overlapping ones dropped (the earlier, then
    /// longer, wins); the content is the reply without them, trimmed.
    pub(crate) fn finish(mut self) -> Parsed {
        let kept = self.kept();
        // The pieces of prose between the kept spans, trimmed at both ends of
        // the whole, copied once into a buffer of the right size: the copy is
        // most of the time a reply without calls takes.
        let mut pieces = Vec::with_capacity(kept.len() + 1);
        let mut at = 0;
        let mut after_calls = false;
        for (span, calls) in &kept {
            let gap = &self.reply[at..span.start];
            // Llama 3.2 separates its calls with `;`, which is no prose.
            let separator = after_calls && !calls.is_empty() && gap.trim() == CALL_SEPARATOR;
            pieces.push(if separator { "" } else { gap });
            if let Some((_, text)) = self.answers.iter().find(|(answered, _)| answered == span) {
                pieces.push(text);
            }
            at = span.end;
            after_calls = !calls.is_empty();
        }
        pieces.push(&self.reply[at..]);
        let blank = |piece: &&str| piece.trim_start().is_empty();
        let first = pieces.iter().position(|p| !blank(p)).unwrap_or(pieces.len());
        let last = pieces.iter().rposition(|p| !blank(p)).map_or(first, |i| i + 1);
        let pieces = &mut pieces[first..last];
        if let Some(piece) = pieces.first_mut() {
            *piece = piece.trim_start();
        }
        if let Some(piece) = pieces.last_mut() {
            *piece = piece.trim_end();
        }
        let mut content = String::with_capacity(pieces.iter().map(|p| p.len()).sum());
        pieces.iter().for_each(|p| content.push_str(p));
        let (calls, warnings) = self.calls_of(kept);
        Parsed { calls, content, warnings }
    }

    /// The calls and warnings [`Self::finish`] gives, without the content:
    /// for a reader that collects apart and passes the calls on (assembling
    /// the content, a copy of the reply, per envelope was quadratic).
    pub(crate) fn calls_and_warnings(mut self) -> (Vec<ParsedCall>, Vec<Warning>) {
        let kept = self.kept();
        self.calls_of(kept)
    }

    /// The groups in reply order, overlapping ones dropped.
    fn kept(&mut self) -> Vec<(Range<usize>, Vec<ParsedCall>)> {
        let mut groups = std::mem::take(&mut self.groups);
        groups.sort_by_key(|(span, _)| (span.start, std::cmp::Reverse(span.end)));
        let mut kept: Vec<(Range<usize>, Vec<ParsedCall>)> = Vec::with_capacity(groups.len());
        for group in groups {
            if kept.last().is_none_or(|(last, _)| group.0.start >= last.end) {
                kept.push(group);
            }
        }
        kept
    }

    /// The calls of the `kept` groups, and the warnings.
    fn calls_of(self, kept: Vec<(Range<usize>, Vec<ParsedCall>)>) -> (Vec<ParsedCall>, Vec<Warning>) {
        let mut warnings = self.warnings;
        shared_warnings_once(&mut warnings, &kept);
        if self.dropped > 0 {
            warnings.push(Warning { offset: self.reply.len(), message: format!("{} more warnings not listed", self.dropped) });
        }
        (kept.into_iter().flat_map(|(_, calls)| calls).collect(), warnings)
    }
}

/// Two readers that read the same call (an element and the JSON inside
/// it) may warn alike about it: such a warning is kept once per kept span.
fn shared_warnings_once(warnings: &mut Vec<Warning>, kept: &[(Range<usize>, Vec<ParsedCall>)]) {
    // The kept spans are sorted and do not overlap.
    let span_of = |offset: usize| {
        let index = kept.partition_point(|(span, _)| span.end <= offset);
        kept.get(index).filter(|(span, _)| span.contains(&offset)).map(|_| index)
    };
    let mut seen = std::collections::HashSet::new();
    warnings.retain(|w| span_of(w.offset).is_none_or(|span| seen.insert((span, w.message.clone()))));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marker_index::MARKUP;

    #[test]
    fn reasoning_regions_include_an_unclosed_one() {
        let reply = "a<think>b</think>c<think>d";
        let reasoning = Reasoning::find(&MarkerIndex::new(reply, &[MARKUP]));
        assert!(!reasoning.contains(0));
        assert!(reasoning.contains(1) && reasoning.contains(9));
        assert!(!reasoning.contains(17));
        assert!(reasoning.contains(19) && reasoning.contains(25));
        assert_eq!(reasoning.skip(3), Some(17));
    }

    #[test]
    fn a_close_quoted_in_a_tool_calls_argument_ends_no_reasoning() {
        let quoted = r#"<tool_call>{"name": "note", "arguments": {"text": "models end reasoning with </think>"}}</tool_call>"#;
        let reasoning = Reasoning::find(&MarkerIndex::new(quoted, &[MARKUP]));
        assert!(!reasoning.contains(0), "the close is the argument's");
        // A call drafted in reasoning the prompt opened stays reasoning,
        // whether or not an argument of it quotes the close too.
        for drafted in [
            r#"draft <tool_call>{"name": "note", "arguments": {}}</tool_call></think>answer"#,
            r#"draft <tool_call>{"name": "note", "arguments": {"text": "a </think> b"}}</tool_call> then </think>answer"#,
        ] {
            let reasoning = Reasoning::find(&MarkerIndex::new(drafted, &[MARKUP]));
            assert!(reasoning.contains(0) && !reasoning.contains(drafted.find("answer").unwrap()), "{drafted}");
        }
        // The same in GLM's and Qwen3-Coder's calls, whose values are text.
        for quoted in [
            "<tool_call>note\n<arg_key>text</arg_key>\n<arg_value>a </think> b</arg_value>\n</tool_call>",
            "<tool_call>\n<function=note>\n<parameter=text>\na </think> b\n</parameter>\n</function>\n</tool_call>",
        ] {
            assert!(!Reasoning::find(&MarkerIndex::new(quoted, &[MARKUP])).contains(0), "{quoted}");
        }
        // Prose in reasoning that names the tag, and a draft cut off before
        // the real call, are reasoning still.
        for drafted in [
            "I will write a <tool_call> with the name.</think><tool_call>note\n<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>",
            "<tool_call>\n<function=note>\n<parameter=text>\na</think>\n<tool_call>\n<function=note>\n</function>\n</tool_call>",
        ] {
            let reasoning = Reasoning::find(&MarkerIndex::new(drafted, &[MARKUP]));
            assert!(reasoning.contains(0) && !reasoning.contains(drafted.rfind("<tool_call>").unwrap()), "{drafted}");
        }
        // Drafts in reasoning the prompt opened, whose `</think>` is no
        // value's (found by a probe: each was read as a call).
        for drafted in [
            "Plan <tool_call>\n<function=note>\n<parameter=path>\na\n</parameter>\n</function>\nno.</think>Done </tool_call>",
            "Plan: <tool_call>\n<function=note>\n<parameter=text>\n1+1\n</think>```json\n{\"name\":\"now\",\"arguments\":{}}\n```\n</tool_call>",
            "draft <tool_call>\n<function=note>\n<parameter=text>\n1+1\n</think>Calls end with </tool_call>.",
            "Plan: <tool_call>note\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\nno need.</think>Calls end with </tool_call>.",
        ] {
            let reasoning = Reasoning::find(&MarkerIndex::new(drafted, &[MARKUP]));
            let close = drafted.find("</think>").unwrap();
            assert!(reasoning.contains(0) && !reasoning.contains(close + "</think>".len()), "{drafted}");
        }
    }

    #[test]
    fn command_r_thinking_and_a_leading_close_are_reasoning() {
        let reply = "plan</think>a<|START_THINKING|>b<|END_THINKING|>c<think>d";
        let reasoning = Reasoning::find(&MarkerIndex::new(reply, &[MARKUP]));
        let at = |needle: &str| reasoning.contains(reply.find(needle).unwrap());
        assert!(at("plan") && at("</think>"), "before the </think> nothing opened");
        assert!(!at("a<|"));
        assert!(at("<|START") && at("b<|") && at("<|END"));
        assert!(!at("c<think>"));
        assert!(at("<think>") && at("d"));
        let closed_later = Reasoning::find(&MarkerIndex::new("a<think>b</think>c</think>d", &[MARKUP]));
        assert!(!closed_later.contains(0), "a close after an opening does not reach back");
        assert!(!closed_later.contains(19));
    }

    #[test]
    fn code_is_fenced_blocks_and_inline_spans_on_one_line() {
        let reply = "a `b` c ``d`e`` f\n```x\ng `\n```\nh ` i\nj`";
        let code = Code::find(reply);
        let at = |needle: &str| code.at(reply.find(needle).unwrap());
        assert_eq!(at("a"), None);
        assert_eq!(at("b"), Some(Quoted::Inline));
        assert_eq!(at("c"), None);
        assert_eq!(at("d"), Some(Quoted::Inline), "a double-backtick span holds a single backtick");
        assert_eq!(at("f"), None);
        assert_eq!(at("g"), Some(Quoted::Fenced));
        assert_eq!(at("h"), None);
        assert_eq!(at("i"), None, "a span does not cross a line");
        let unclosed = Code::find("x\n```\ny");
        assert_eq!(unclosed.at(6), Some(Quoted::Fenced));
    }

    #[test]
    fn content_is_the_reply_without_calls_and_markup_trimmed() {
        let reply = "  <a> one <b> two <c>  ";
        let mut out = Collector::new(reply);
        for tag in ["<a>", "<b>", "<c>"] {
            let at = reply.find(tag).unwrap();
            out.markup(at..at + tag.len());
        }
        assert_eq!(out.finish().content, "one  two");
        let mut only = Collector::new(" <a> ");
        only.markup(1..4);
        assert_eq!(only.finish().content, "");
    }

    #[test]
    fn forward_search_answers_from_its_cache() {
        let mut f = Forward::new("xaxxa", "a");
        assert_eq!(f.next(0), Some(1));
        assert_eq!(f.next(1), Some(1));
        assert_eq!(f.next(2), Some(4));
        assert_eq!(f.next(5), None);
        assert_eq!(f.next(6), None);
    }
}
