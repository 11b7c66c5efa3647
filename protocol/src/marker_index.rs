//! Where markup may start in a reply, found in one pass: the positions of
//! every `<`, `[` and backtick. Nearly every marker a parser looks for
//! starts with one of them (`<think>`, `<tool_call>`, `<|`,
//! `[TOOL_REQUEST]`, ```` ``` ````), and prose seldom holds them, so a
//! search for such a marker walks a short list instead of the reply: prose
//! costs one pass for every family's markers, not one pass per marker.

use crate::scan;

/// The bytes whose positions are listed.
const LISTED: [u8; 3] = [b'<', b'[', b'`'];

/// The index lists at most one position per this many bytes of the reply.
/// Text denser with listed bytes (markup, code) is searched directly: a
/// walk over a list that long costs more than a SIMD search of the text.
const BYTES_PER_LISTED: usize = 64;

/// A reply and where markup may start in it.
pub(crate) struct MarkerIndex<'a> {
    text: &'a str,
    /// Per byte of [`LISTED`], its positions in order; `None` when the
    /// text is too dense with them to list.
    positions: Option<[Vec<usize>; LISTED.len()]>,
}

impl<'a> MarkerIndex<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        let bytes = text.as_bytes();
        let most = bytes.len() / BYTES_PER_LISTED;
        let mut positions: [Vec<usize>; LISTED.len()] = Default::default();
        for (count, at) in memchr::memchr3_iter(LISTED[0], LISTED[1], LISTED[2], bytes).enumerate() {
            if count == most {
                return MarkerIndex { text, positions: None };
            }
            let list = LISTED.iter().position(|&b| b == bytes[at]).expect("memchr3 finds only listed bytes");
            positions[list].push(at);
        }
        MarkerIndex { text, positions: Some(positions) }
    }

    /// The text indexed.
    pub(crate) fn text(&self) -> &'a str {
        self.text
    }

    /// The first `needle` at or after byte `from`, as [`scan::find`]
    /// answers.
    pub(crate) fn find(&self, from: usize, needle: &str) -> Option<usize> {
        let list = needle.bytes().next().and_then(|first| LISTED.iter().position(|&b| b == first));
        match (&self.positions, list) {
            (Some(positions), Some(list)) => {
                let list = &positions[list];
                let bytes = self.text.as_bytes();
                list[list.partition_point(|&p| p < from)..].iter().copied().find(|&p| bytes[p..].starts_with(needle.as_bytes()))
            }
            _ => scan::find(self.text, from, needle),
        }
    }

    /// Whether the text is listed rather than searched directly.
    #[cfg(test)]
    fn is_listed(&self) -> bool {
        self.positions.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::{FENCE, REASONING};
    use proptest::prelude::*;

    /// Markers the parsers search whole replies for, and needles that start
    /// with a byte that is not listed.
    fn needles() -> Vec<&'static str> {
        let mut needles: Vec<&str> = REASONING.iter().flat_map(|&(open, close)| [open, close]).collect();
        needles.extend([
            "<",
            "[",
            "`",
            FENCE,
            "<tool_call>",
            "</tool_call>",
            "[TOOL_REQUEST]",
            "<|",
            "<｜",
            "<s>",
            ">>>",
            "Action:",
        ]);
        needles
    }

    /// Pieces of a reply: prose (which lengthens it, so that the index
    /// lists it), markers cut anywhere, listed bytes and multi-byte
    /// characters beside them.
    fn reply() -> impl Strategy<Value = String> {
        let marker = proptest::sample::select(needles()).prop_flat_map(|m| (Just(m), 0..=m.len()));
        let piece = prop_oneof![
            (1..100usize).prop_map(|n| "prose ".repeat(n)),
            marker.clone().prop_map(|(m, _)| m.to_owned()),
            marker.prop_map(|(m, cut)| String::from_utf8_lossy(&m.as_bytes()[..cut]).into_owned()),
            proptest::sample::select(vec!["<", "[", "`", "é", "日", "「", "<<", "``", "\n"]).prop_map(str::to_owned),
        ];
        proptest::collection::vec(piece, 0..12).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// The index finds what a search of the whole text finds, from any
        /// byte, whether it lists the text or searches it directly.
        #[test]
        fn the_index_finds_what_a_search_of_the_text_finds(text in reply()) {
            let index = MarkerIndex::new(&text);
            // Around every listed byte, and now and then in between.
            let near_listed = |at: usize| (at.saturating_sub(2)..at + 2).any(|p| text.as_bytes().get(p).is_some_and(|b| LISTED.contains(b)));
            let froms: Vec<usize> = (0..=text.len() + 1).filter(|&at| at % 31 == 0 || at >= text.len() || near_listed(at)).collect();
            for needle in needles() {
                for &from in &froms {
                    prop_assert_eq!(index.find(from, needle), scan::find(&text, from, needle), "{:?} from {}", needle, from);
                }
            }
        }
    }

    #[test]
    fn prose_is_listed_and_dense_markup_is_searched() {
        let prose = format!("{}<think>a</think>", "prose ".repeat(100));
        let listed = MarkerIndex::new(&prose);
        assert!(listed.is_listed());
        assert_eq!(listed.find(0, "</think>"), Some(608));
        let markup = "<b>".repeat(100);
        let dense = MarkerIndex::new(&markup);
        assert!(!dense.is_listed());
        assert_eq!(dense.find(4, "<b>"), Some(6));
        assert!(MarkerIndex::new("").is_listed());
    }
}
