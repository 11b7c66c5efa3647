//! Calls written as Python: lists like `[get_weather(city="Paris"), now()]`
//! (Llama 3.2, Llama 4), calls one per line inside a family's envelope
//! (OLMo 3, LFM2: [`sequence`]), a reply that is nothing but calls of
//! declared tools without the list's brackets ([`scan_lone`]), and the
//! keyword arguments Llama 3's built-in tools take after `<|python_tag|>`
//! (`brave_search.call(query="…")`).

use super::super::lenient_json::{self, python_unescape};
use super::super::scan::{Collector, skip_ws};
use super::super::{Declared, ParsedCall, without_namespace};
use super::Scope;
use serde_json::{Map, Value};

/// The first function of a pythonic list at `open`, `[name(`, whether or
/// not it is declared.
pub(crate) fn pythonic_head(reply: &str, open: usize) -> Option<&str> {
    let bytes = reply.as_bytes();
    let start = skip_ws(bytes, open + 1);
    let end = function_name_end(bytes, start);
    (end > start && bytes.get(end) == Some(&b'(')).then(|| &reply[start..end])
}

/// Whether `text` starts with a pythonic call, `name(` or `[name(`.
pub(crate) fn opens_call(text: &str) -> bool {
    let bytes = text.as_bytes();
    let start = if bytes.first() == Some(&b'[') { skip_ws(bytes, 1) } else { 0 };
    let end = function_name_end(bytes, start);
    end > start && bytes[start].is_ascii_alphabetic() && bytes.get(end) == Some(&b'(')
}

/// Where a pythonic function name starting at `p` ends.
fn function_name_end(bytes: &[u8], mut p: usize) -> usize {
    while bytes.get(p).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'.') {
        p += 1;
    }
    p
}

/// The function named at `start..end`, without its format's namespace.
fn function_name(reply: &str, start: usize, end: usize) -> &str {
    without_namespace(&reply[start..end])
}

/// `[f(a=1, b="x"), g()]` at `open`, if every function is declared and
/// `stands_apart(end)` says the list may end at `end` (bare, no word may
/// follow it on its line: mid-sentence it is an example). Returns where
/// reading stopped.
pub(super) fn list(
    reply: &str,
    open: usize,
    declared: &Declared,
    stands_apart: impl Fn(usize) -> bool,
    out: &mut Collector<'_>,
) -> usize {
    let bytes = reply.as_bytes();
    let mut p = open + 1;
    let mut calls = Vec::new();
    loop {
        p = skip_ws(bytes, p);
        let name_start = p;
        p = function_name_end(bytes, p);
        let name = function_name(reply, name_start, p);
        if name.is_empty() || !declared.contains(name) || bytes.get(p) != Some(&b'(') {
            return p.max(open + 1);
        }
        match keyword_arguments(reply, p + 1, name, Strings::Loose, out) {
            Ok((arguments, end)) => {
                calls.push((name.to_owned(), arguments));
                p = end;
            }
            Err(stopped) => return stopped.max(open + 1),
        }
        p = skip_ws(bytes, p);
        match bytes.get(p) {
            Some(b',') => p += 1,
            Some(b']') => {
                p += 1;
                break;
            }
            _ => return p,
        }
    }
    if !stands_apart(p) {
        return p;
    }
    let span = open..p;
    let calls = calls
        .into_iter()
        .map(|(name, arguments)| ParsedCall { id: None, name, arguments, reserved: Map::new(), span: span.clone() })
        .collect();
    out.calls(span, calls);
    p
}

/// A reply whose text (after its reasoning, before the tokens that end its
/// turn) is nothing but calls of declared tools, `get_weather(city="Paris")`
/// without a list around it, as Llama 3.2 and Gemma 3 write them when told
/// to call in Python: its calls. Within prose such text is an example.
pub(super) fn scan_lone(scope: &Scope<'_>, out: &mut Collector<'_>) {
    let reply = scope.reply;
    let std::ops::Range { start, end } = scope.said();
    let text = &reply[start..end];
    if text.starts_with('[') || !opens_call(text) {
        return; // a list is read as one; prose is prose
    }
    // Warned of only if it is calls.
    let mut tried = Collector::new(reply);
    let Some(calls) = sequence(reply, start, end, |name| scope.declared.contains(name), Strings::Strict, &mut tried) else {
        return;
    };
    for warning in tried.calls_and_warnings().1 {
        out.warn(warning.offset, warning.message);
    }
    let call = |(name, arguments)| ParsedCall { id: None, name, arguments, reserved: Map::new(), span: start..end };
    out.calls(start..end, calls.into_iter().map(call).collect());
}

/// The calls from `start` to `end`, inside markup that says they are calls:
/// `[f(a=1), g()]`, or `f(a=1)` and `g()` one after another, separated by
/// line breaks or commas. `calls(name)` says whether a name may be called.
/// `None`, after a warning, when the text is not only calls. A call whose
/// arguments cannot be read but whose parentheses close is warned of and
/// skipped: vLLM's LFM2 and OLMo 3 parsers keep the siblings of a bad call.
pub(super) fn sequence(
    reply: &str,
    start: usize,
    end: usize,
    calls: impl Fn(&str) -> bool,
    strings: Strings,
    out: &mut Collector<'_>,
) -> Option<Vec<(String, Map<String, Value>)>> {
    let bytes = &reply.as_bytes()[..end];
    let mut p = skip_ws(bytes, start);
    let bracketed = bytes.get(p) == Some(&b'[');
    p += usize::from(bracketed);
    let mut found = Vec::new();
    let mut skipped = false;
    loop {
        while bytes.get(p).is_some_and(|b| b.is_ascii_whitespace() || *b == b',' || *b == b';') {
            p += 1;
        }
        if p >= end || (bracketed && bytes[p] == b']' && reply[p + 1..end].trim_start().is_empty()) {
            return (!skipped || !found.is_empty()).then_some(found);
        }
        let name_start = p;
        p = function_name_end(bytes, p);
        let name = function_name(reply, name_start, p);
        if name.is_empty() || bytes.get(p) != Some(&b'(') {
            out.warn(name_start, "expected a call, `name(key=value, …)`; it is not a call");
            return None;
        }
        if !calls(name) {
            return None;
        }
        match keyword_arguments(&reply[..end], p + 1, name, strings, out) {
            Ok((arguments, after)) => {
                found.push((name.to_owned(), arguments));
                p = after;
            }
            Err(_) => {
                out.warn(name_start, format!("`{name}(…)` is cut off or not keyword arguments; it is not a call"));
                match call_end(bytes, p, end) {
                    Some(after) => {
                        skipped = true;
                        p = after;
                    }
                    None if !bracketed && !found.is_empty() => return Some(found),
                    None => return None,
                }
            }
        }
    }
}

/// How strings are read: as Python writes them, or also [`loose_string`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Strings {
    Strict,
    Loose,
}

/// Whether the call opened at `start` (`[name(` or `name(`) is still open
/// at `end`: cut off there, rather than followed by text that is no call.
pub(super) fn cut_off(reply: &str, start: usize, end: usize) -> bool {
    let bytes = &reply.as_bytes()[..end];
    reply[start..end].find('(').is_some_and(|paren| call_end(bytes, start + paren, end).is_none())
}

/// How far a string quoting its own quote is looked through for its end.
const LOOSE_STRING_MAX: usize = 4096;
/// The longest keyword a call's next argument may have, where a string
/// quoting its own quote is told to end by `, key=`.
const KEY_MAX: usize = 128;

/// A string opened by the quote at `start` that holds the same quote
/// unescaped (`'sed -n '1,5p' f'`): it ends at the first such quote after
/// which the call's arguments go on (`, key=`) or the call ends and so does
/// the list or line (`)` then `]`, `,`, a line break, a token or the end).
/// Escapes are read as Python reads them, a raw string's (`r'…'`) kept as
/// written. Looked for within
/// [`LOOSE_STRING_MAX`] bytes, so that reading stays linear.
fn loose_string(reply: &str, start: usize) -> Option<(String, usize)> {
    let bytes = reply.as_bytes();
    // Python's prefixes: a raw string's backslashes are kept as written.
    let raw = matches!(bytes.get(start), Some(b'r' | b'R'));
    let start = start + usize::from(matches!(bytes.get(start), Some(b'r' | b'R' | b'u' | b'U')));
    let text = |end: usize| if raw { reply[start + 1..end].to_owned() } else { python_unescape(&reply[start + 1..end]) };
    let quote = *bytes.get(start).filter(|b| matches!(b, b'\'' | b'"'))?;
    let limit = reply.len().min(start + LOOSE_STRING_MAX);
    // A backslash that ends the text (`path='C:\temp\'`), where Python
    // reads an escaped quote: the end only when no other follows.
    let mut backslash_end = None;
    let mut p = start + 1;
    while p < limit {
        match bytes[p] {
            b'\\' => {
                if backslash_end.is_none() && bytes.get(p + 1) == Some(&quote) && ends_string(bytes, p + 2) {
                    backslash_end = Some(p + 1);
                }
                p += 2;
            }
            b if b == quote && ends_string(bytes, p + 1) => return Some((text(p), p + 1)),
            _ => p += 1,
        }
    }
    backslash_end.map(|end| (text(end), end + 1))
}

/// Whether what follows a quote at `p` shows it ends the string: `, key=`,
/// or `)` and then the end of the list or line.
fn ends_string(bytes: &[u8], p: usize) -> bool {
    let p = skip_spaces(bytes, p);
    match bytes.get(p) {
        Some(b',') => {
            // A key is looked through for at most KEY_MAX bytes, so that
            // every quote before a long word does not read all of it.
            let key = skip_spaces(bytes, p + 1);
            let key_end =
                (key..bytes.len().min(key + KEY_MAX)).find(|&i| !(bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_'));
            key_end.is_some_and(|end| end > key && bytes.get(skip_spaces(bytes, end)) == Some(&b'='))
        }
        Some(b')') => {
            let after = skip_spaces(bytes, p + 1);
            matches!(bytes.get(after), None | Some(b']' | b',' | b'\n' | b'\r' | b'<'))
        }
        _ => false,
    }
}

/// Past spaces and tabs.
fn skip_spaces(bytes: &[u8], mut p: usize) -> usize {
    while bytes.get(p).is_some_and(|b| *b == b' ' || *b == b'\t') {
        p += 1;
    }
    p
}

/// Where the call whose `(` stands at `open` ends, past its `)`: brackets
/// counted, quoted text skipped ([`Quotes`]); `None` when nothing before
/// `end` closes it.
fn call_end(bytes: &[u8], open: usize, end: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut quotes = Quotes::default();
    let mut p = open;
    while p < end {
        let b = bytes[p];
        if !quotes.inside() {
            match b {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return (b == b')').then_some(p + 1);
                    }
                }
                _ => {}
            }
        }
        p = quotes.step(bytes, p);
    }
    None
}

/// Quoted text as a call's arguments quote it, `'…'`, `"…"`, `'''…'''` or
/// `"""…"""` with backslash escapes, followed byte by byte.
#[derive(Default)]
struct Quotes(Option<Quote>);

/// An open string: its quote, and whether three of it close it.
#[derive(Clone, Copy)]
struct Quote {
    byte: u8,
    triple: bool,
}

impl Quotes {
    fn inside(&self) -> bool {
        self.0.is_some()
    }

    /// Past the byte at `p` (and the one it escapes, or the rest of a
    /// triple quote): where to read next.
    fn step(&mut self, bytes: &[u8], p: usize) -> usize {
        let tripled = |quote: u8| bytes.get(p..p + 3).is_some_and(|three| three == [quote; 3]);
        match (self.0, bytes[p]) {
            (Some(_), b'\\') => p + 2,
            (Some(quote), b) if b == quote.byte && (!quote.triple || tripled(b)) => {
                self.0 = None;
                p + if quote.triple { 3 } else { 1 }
            }
            (None, b @ (b'\'' | b'"')) => {
                let triple = tripled(b);
                self.0 = Some(Quote { byte: b, triple });
                p + if triple { 3 } else { 1 }
            }
            _ => p + 1,
        }
    }
}

/// Where an envelope of calls whose text starts at `body` closes, when
/// its first `close`, at `first`, stands inside quoted text (a call's
/// argument quoting the envelope: `[note(text='… <|tool_call_end|> …')]`):
/// the first `close` after it outside quotes. `None` when `first` is not
/// quoted, or when the envelope's `open` comes first outside quotes (a
/// retry), or nothing closes it. Looking past `first` spends `budget`, a
/// byte a byte looked at, and stops when it is spent, so that a reply's
/// envelopes all together look at a bounded multiple of its length.
pub(super) fn quoted_close(
    reply: &str,
    body: usize,
    first: usize,
    (open, close): (&str, &str),
    budget: &mut usize,
) -> Option<usize> {
    let bytes = reply.as_bytes();
    let mut quotes = Quotes::default();
    let mut p = body;
    while p < first {
        p = quotes.step(bytes, p);
    }
    if !quotes.inside() {
        return None;
    }
    let limit = bytes.len().min(p.saturating_add(*budget));
    let from = p;
    let mut found = None;
    while p < limit {
        if !quotes.inside() {
            let rest = &bytes[p..];
            if rest.starts_with(close.as_bytes()) {
                found = Some(p);
                break;
            }
            if rest.starts_with(open.as_bytes()) {
                break;
            }
        }
        p = quotes.step(bytes, p);
    }
    *budget = budget.saturating_sub(p - from);
    found
}

/// `k=v, …)` from `p`, just after the `(` of `name(`: the arguments and
/// where the `)` ends, or where reading stopped. Values are JSON or Python
/// literals.
pub(super) fn keyword_arguments(
    reply: &str,
    mut p: usize,
    name: &str,
    strings: Strings,
    out: &mut Collector<'_>,
) -> Result<(Map<String, Value>, usize), usize> {
    let bytes = reply.as_bytes();
    let mut arguments = Map::new();
    loop {
        p = skip_ws(bytes, p);
        if bytes.get(p) == Some(&b')') {
            return Ok((arguments, p + 1));
        }
        let key_start = p;
        while bytes.get(p).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_') {
            p += 1;
        }
        let key = &reply[key_start..p];
        p = skip_ws(bytes, p);
        if key.is_empty() || bytes.get(p) != Some(&b'=') {
            out.warn(p, format!("`{name}(…)` takes keyword arguments only"));
            return Err(p);
        }
        p = skip_ws(bytes, p + 1);
        let read = lenient_json::parse_prefix(&reply[p..]).map(|(value, used, _)| (value, p + used));
        let (value, after) = match read {
            Ok((value, after)) if matches!(bytes.get(skip_ws(bytes, after)), Some(b',' | b')')) => (value, after),
            // A string quoting its own quote unescaped, as shell commands do.
            other => match loose_string(reply, p).filter(|_| strings == Strings::Loose) {
                Some((text, after)) => (Value::String(text), after),
                None => return Err(other.map_or_else(|e| p + e.offset.max(1), |(_, after)| after)),
            },
        };
        arguments.insert(key.to_owned(), value);
        p = skip_ws(bytes, after);
        match bytes.get(p) {
            Some(b',') => p += 1,
            Some(b')') => {}
            _ => return Err(p),
        }
    }
}
