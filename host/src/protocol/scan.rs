//! Scanning helpers every parser shares: reasoning regions that are not
//! searched, forward searches that stay linear however often they are
//! asked, and the assembly of a [`Parsed`] from calls and warnings.

use super::{MAX_WARNINGS, Parsed, ParsedCall, Warning};
use std::ops::Range;

/// The first `needle` at or after byte `from` of `text` (SIMD-accelerated:
/// parsing prose is mostly this search).
pub(crate) fn find(text: &str, from: usize, needle: &str) -> Option<usize> {
    let rest = text.as_bytes().get(from..)?;
    memchr::memmem::find(rest, needle.as_bytes()).map(|i| i + from)
}

/// The first `{` or `[` at or after byte `from`.
pub(crate) fn find_open_bracket(text: &str, from: usize) -> Option<usize> {
    let rest = text.as_bytes().get(from..)?;
    memchr::memchr2(b'{', b'[', rest).map(|i| i + from)
}

/// Opens a reasoning region.
pub(crate) const THINK_OPEN: &str = "<think>";
/// Closes a reasoning region.
pub(crate) const THINK_CLOSE: &str = "</think>";

/// The `<think>…</think>` regions of a reply; after an unclosed `<think>`
/// the rest of the reply is reasoning.
pub(crate) struct Reasoning {
    regions: Vec<Range<usize>>,
}

impl Reasoning {
    pub(crate) fn find(reply: &str) -> Self {
        let mut regions = Vec::new();
        let mut at = 0;
        while let Some(open) = find(reply, at, THINK_OPEN) {
            let body = open + THINK_OPEN.len();
            match find(reply, body, THINK_CLOSE) {
                Some(close) => {
                    let end = close + THINK_CLOSE.len();
                    regions.push(open..end);
                    at = end;
                }
                None => {
                    regions.push(open..reply.len());
                    break;
                }
            }
        }
        Reasoning { regions }
    }

    /// Whether `offset` lies in reasoning.
    pub(crate) fn contains(&self, offset: usize) -> bool {
        let i = self.regions.partition_point(|r| r.end <= offset);
        self.regions.get(i).is_some_and(|r| r.contains(&offset))
    }

    /// The end of the reasoning region holding `offset`, if any.
    pub(crate) fn skip(&self, offset: usize) -> Option<usize> {
        let i = self.regions.partition_point(|r| r.end <= offset);
        self.regions.get(i).filter(|r| r.contains(&offset)).map(|r| r.end)
    }
}

/// Finds the next occurrence of a needle at or after a position. Answers
/// are remembered, so asking with increasing positions costs one pass over
/// the text in total.
pub(crate) struct Forward<'a> {
    text: &'a str,
    needle: &'a str,
    /// The last answer: the first occurrence at or after `asked`.
    cached: Option<(usize, Option<usize>)>,
}

impl<'a> Forward<'a> {
    pub(crate) fn new(text: &'a str, needle: &'a str) -> Self {
        Forward { text, needle, cached: None }
    }

    pub(crate) fn next(&mut self, from: usize) -> Option<usize> {
        if let Some((asked, found)) = self.cached
            && asked <= from
            && found.is_none_or(|f| f >= from)
        {
            return found;
        }
        let found = find(self.text, from, self.needle);
        self.cached = Some((from, found));
        found
    }
}

/// Collects calls and warnings, and assembles the [`Parsed`].
pub(crate) struct Collector<'a> {
    reply: &'a str,
    /// Calls grouped by the span they were found in (one JSON array can
    /// hold several calls).
    groups: Vec<(Range<usize>, Vec<ParsedCall>)>,
    warnings: Vec<Warning>,
    dropped: usize,
}

impl<'a> Collector<'a> {
    pub(crate) fn new(reply: &'a str) -> Self {
        Collector { reply, groups: Vec::new(), warnings: Vec::new(), dropped: 0 }
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

    pub(crate) fn warn(&mut self, offset: usize, message: impl Into<String>) {
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(Warning { offset, message: message.into() });
        } else {
            self.dropped += 1;
        }
    }

    /// How many groups of calls have been collected so far.
    pub(crate) fn len(&self) -> usize {
        self.groups.len()
    }

    /// Calls in reply order, overlapping ones dropped (the earlier, then
    /// longer, wins); the content is the reply without them.
    pub(crate) fn finish(mut self) -> Parsed {
        self.groups.sort_by_key(|(span, _)| (span.start, std::cmp::Reverse(span.end)));
        let mut kept: Vec<(Range<usize>, Vec<ParsedCall>)> = Vec::with_capacity(self.groups.len());
        for group in self.groups {
            if kept.last().is_none_or(|(last, _)| group.0.start >= last.end) {
                kept.push(group);
            }
        }
        let mut content = String::new();
        let mut at = 0;
        for (span, _) in &kept {
            content.push_str(&self.reply[at..span.start]);
            at = span.end;
        }
        let calls = kept.into_iter().flat_map(|(_, calls)| calls).collect();
        content.push_str(&self.reply[at..]);
        let mut warnings = self.warnings;
        if self.dropped > 0 {
            warnings.push(Warning { offset: self.reply.len(), message: format!("{} more warnings not listed", self.dropped) });
        }
        Parsed { calls, content: content.trim().to_owned(), warnings }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_regions_include_an_unclosed_one() {
        let reply = "a<think>b</think>c<think>d";
        let reasoning = Reasoning::find(reply);
        assert!(!reasoning.contains(0));
        assert!(reasoning.contains(1) && reasoning.contains(9));
        assert!(!reasoning.contains(17));
        assert!(reasoning.contains(19) && reasoning.contains(25));
        assert_eq!(reasoning.skip(3), Some(17));
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
