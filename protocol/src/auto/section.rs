//! A section of calls between special tokens, as Kimi K2 and DeepSeek write
//! them: an opening token, calls separated by white space, a closing token
//! that may be left out (it can be the stop token). Each call runs to its
//! own closing token, with a separator token inside.

use super::super::ParsedCall;
use super::super::scan::{Collector, Forward, find};
use super::{Scope, ends_apart, starts_apart};

/// What a section's reader knows of its family's tokens.
pub(super) trait CallTokens {
    /// The length of the section's closing token at the start of `rest`.
    fn section_end(&self, rest: &str) -> Option<usize>;

    /// Whether a call starts at the start of `rest`.
    fn opens_call(&self, rest: &str) -> bool;

    /// The call at `at`, if it is one, and where reading it stopped.
    fn call(&mut self, scope: &Scope<'_>, at: usize, out: &mut Collector<'_>) -> (Option<ParsedCall>, usize);
}

/// Every section that `begin` opens outside reasoning, and every run of
/// calls without it that stands apart from the prose (a server that skips
/// special tokens leaves it out); `prefix` starts both, and is searched for
/// once for both.
pub(super) fn scan(scope: &Scope<'_>, prefix: &str, begin: &str, tokens: &mut impl CallTokens, out: &mut Collector<'_>) {
    let reply = scope.reply;
    let mut at = 0;
    while let Some(found) = scope.markers.find(at, prefix) {
        if let Some(end) = scope.reasoning.skip(found) {
            at = end;
            continue;
        }
        let rest = &reply[found..];
        let trusted = scope.markup_trust(found).is_some();
        let stopped = if trusted && rest.starts_with(begin) {
            read(scope, found, found + begin.len(), tokens, out)
        } else if trusted && tokens.opens_call(rest) && starts_apart(reply, found) {
            read_bare(scope, found, found, tokens, out)
        } else {
            found
        };
        at = stopped.max(found + prefix.len());
    }
}

/// The calls of the section whose opening token stands at
/// `found` and ends at `p`; where the section ends. A section token with
/// no call after it is quoted prose, and stays in the content.
pub(super) fn read(
    scope: &Scope<'_>,
    found: usize,
    mut p: usize,
    tokens: &mut impl CallTokens,
    out: &mut Collector<'_>,
) -> usize {
    let reply = scope.reply;
    let prose = p;
    let mut calls = Vec::new();
    let mut closed = false;
    let mut read_any = false;
    loop {
        p += reply[p..].len() - reply[p..].trim_start().len();
        let rest = &reply[p..];
        if let Some(end) = tokens.section_end(rest) {
            p += end;
            closed = true;
            break;
        }
        if !tokens.opens_call(rest) {
            // The closing token left out, or prose.
            break;
        }
        let (call, end) = tokens.call(scope, p, out);
        calls.extend(call);
        read_any = true;
        p = end;
    }
    if !closed && !read_any {
        return prose;
    }
    if calls.is_empty() {
        out.markup(found..p);
    } else {
        out.calls(found..p, calls);
    }
    p
}

/// The run of calls at `found` whose section's opening token was left out
/// (a server that skips special tokens leaves it out), the span starting
/// at `start` (before `found` when markup there belongs to the calls):
/// calls when the run ends apart from the prose after it, or its closing
/// token is kept; the caller judges the prose before it. Where reading
/// stopped.
pub(super) fn read_bare(
    scope: &Scope<'_>,
    start: usize,
    found: usize,
    tokens: &mut impl CallTokens,
    out: &mut Collector<'_>,
) -> usize {
    let reply = scope.reply;
    let mut calls = Vec::new();
    let mut p = found;
    loop {
        let (call, end) = tokens.call(scope, p, out);
        calls.extend(call);
        p = end;
        let next = p + (reply[p..].len() - reply[p..].trim_start().len());
        if !tokens.opens_call(&reply[next..]) {
            break;
        }
        p = next;
    }
    let next = p + (reply[p..].len() - reply[p..].trim_start().len());
    let end = match tokens.section_end(&reply[next..]) {
        Some(length) => next + length,
        None if ends_apart(reply, p) => p,
        // Prose goes on after the calls on their line: they are quoted.
        None => return p,
    };
    out.calls(start..end, calls);
    end
}

/// Finds a call's separator and closing token, each search linear over the
/// whole reply however many calls it holds.
pub(super) struct CallTokenSearch<'a> {
    reply: &'a str,
    separators: Forward<'a>,
    ends: Forward<'a>,
}

impl<'a> CallTokenSearch<'a> {
    pub(super) fn new(reply: &'a str, separator: &'a str, end: &'a str) -> Self {
        CallTokenSearch { reply, separators: Forward::new(reply, separator), ends: Forward::new(reply, end) }
    }

    /// Where the separator and the closing token of the call at `at` stand,
    /// searched from `head` (after its opening token); else, warned of,
    /// where reading stopped: the end of the reply for a cut-off call, past
    /// the closing token for a call without a separator.
    pub(super) fn find(&mut self, at: usize, head: usize, out: &mut Collector<'_>) -> Result<(usize, usize), usize> {
        let end_token = self.ends.needle();
        let Some(end) = self.ends.next(head) else {
            out.warn(at, format!("a call is cut off before its {end_token}; it is not a call"));
            return Err(self.reply.len());
        };
        let Some(separator) = self.separators.next(head).filter(|&s| s < end) else {
            out.warn(at, format!("a call has no {}; it is not a call", self.separators.needle()));
            return Err(end + end_token.len());
        };
        Ok((separator, end))
    }

    /// As [`find`](Self::find), for a family whose closing token may be
    /// left out: when the text from the separator to the closing token is
    /// not `whole` (a separator and an end, as positions), but the text to
    /// `boundary` (the next call, its section's end, the reply's end) is,
    /// the call runs to `boundary`. The separator, where the call's text
    /// ends, and whether its closing token stands there.
    pub(super) fn find_within(
        &mut self,
        at: usize,
        head: usize,
        boundary: usize,
        whole: impl Fn(usize, usize) -> bool,
        out: &mut Collector<'_>,
    ) -> Result<(usize, usize, bool), usize> {
        let separator = self.separators.next(head);
        if let (Some(separator), Some(end)) = (separator, self.ends.next(head))
            && separator < end
            && whole(separator, end)
        {
            return Ok((separator, end, true));
        }
        match separator.filter(|&separator| separator < boundary && whole(separator, boundary)) {
            Some(separator) => Ok((separator, boundary, false)),
            None => self.find(at, head, out).map(|(separator, end)| (separator, end, true)),
        }
    }
}

/// A call at `at` that cannot be read: cut off when the reply ends before
/// its `close` token, else `what` is wrong; a warning either way, and where
/// reading stopped (past that token, or the reply's end).
pub(super) fn unreadable(reply: &str, at: usize, close: &str, what: &str, out: &mut Collector<'_>) -> usize {
    match find(reply, at, close) {
        None => {
            out.warn(at, format!("a call is cut off before its {close}; it is not a call"));
            reply.len()
        }
        Some(found) => {
            out.warn(at, format!("{what}; it is not a call"));
            found + close.len()
        }
    }
}
