//! A section of calls between special tokens, as Kimi K2 and DeepSeek write
//! them: an opening token, calls separated by white space, a closing token
//! that may be left out (it can be the stop token). Each call runs to its
//! own closing token, with a separator token inside.

use super::super::ParsedCall;
use super::super::scan::{Collector, Forward};
use super::Scope;

/// What a section's reader knows of its family's tokens.
pub(super) trait CallTokens {
    /// The length of the section's closing token at the start of `rest`.
    fn section_end(&self, rest: &str) -> Option<usize>;

    /// Whether a call starts at the start of `rest`.
    fn opens_call(&self, rest: &str) -> bool;

    /// The call at `at`, if it is one, and where reading it stopped.
    fn call(&mut self, scope: &Scope<'_>, at: usize, out: &mut Collector<'_>) -> (Option<ParsedCall>, usize);
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
}
