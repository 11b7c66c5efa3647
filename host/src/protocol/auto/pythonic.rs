//! Calls written as Python: lists like `[get_weather(city="Paris"), now()]`
//! (Llama 3.2, Llama 4), and the keyword arguments Llama 3's built-in tools
//! take after `<|python_tag|>` (`brave_search.call(query="…")`).

use super::super::lenient_json;
use super::super::scan::{Collector, skip_ws};
use super::super::{Declared, ParsedCall};
use serde_json::{Map, Value};

/// The first function of a pythonic list at `open`, `[name(`, whether or
/// not it is declared.
pub(crate) fn pythonic_head(reply: &str, open: usize) -> Option<&str> {
    let bytes = reply.as_bytes();
    let start = skip_ws(bytes, open + 1);
    let end = function_name_end(bytes, start);
    (end > start && bytes.get(end) == Some(&b'(')).then(|| &reply[start..end])
}

/// Where a pythonic function name starting at `p` ends.
fn function_name_end(bytes: &[u8], mut p: usize) -> usize {
    while bytes.get(p).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'.') {
        p += 1;
    }
    p
}

/// `[f(a=1, b="x"), g()]` at `open`, if every function is declared.
/// Returns where reading stopped.
pub(super) fn list(reply: &str, open: usize, declared: &Declared, out: &mut Collector<'_>) -> usize {
    let bytes = reply.as_bytes();
    let mut p = open + 1;
    let mut calls = Vec::new();
    loop {
        p = skip_ws(bytes, p);
        let name_start = p;
        p = function_name_end(bytes, p);
        let name = &reply[name_start..p];
        if name.is_empty() || !declared.contains(name) || bytes.get(p) != Some(&b'(') {
            return p.max(open + 1);
        }
        match keyword_arguments(reply, p + 1, name, out) {
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
    let span = open..p;
    let calls = calls
        .into_iter()
        .map(|(name, arguments)| ParsedCall { id: None, name, arguments, reserved: Map::new(), span: span.clone() })
        .collect();
    out.calls(span, calls);
    p
}

/// `k=v, …)` from `p`, just after the `(` of `name(`: the arguments and
/// where the `)` ends, or where reading stopped. Values are JSON or Python
/// literals.
pub(super) fn keyword_arguments(
    reply: &str,
    mut p: usize,
    name: &str,
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
        let (value, used, _) = match lenient_json::parse_prefix(&reply[p..]) {
            Ok(read) => read,
            Err(e) => return Err(p + e.offset.max(1)),
        };
        arguments.insert(key.to_owned(), value);
        p = skip_ws(bytes, p + used);
        match bytes.get(p) {
            Some(b',') => p += 1,
            Some(b')') => {}
            _ => return Err(p),
        }
    }
}
