//! Where markup may start in a reply, found in one pass: the positions of
//! every `<`, `[` and backtick. Nearly every marker a parser looks for
//! starts with one of them (`<think>`, `<tool_call>`, `<|`,
//! `[TOOL_REQUEST]`, ```` ``` ````), and prose seldom holds them, so a
//! search for such a marker walks a short list instead of the reply: prose
//! costs one pass for every family's markers, not one pass per marker.
//! A parser that looks for markers starting with other bytes (`auto`'s
//! `>>>` and `Action:`, native's `{`) lists them too, three per pass, as
//! `memchr3` finds them.

/// Bytes listed together, in one pass over the reply.
pub(crate) type Listed = [u8; 3];

/// What opens nearly every family's markup.
pub(crate) const MARKUP: Listed = [b'<', b'[', b'`'];

/// A pass lists at most one position per this many bytes of the reply.
/// Text denser with its bytes (markup, code) is searched directly for
/// them: a walk over a list that long costs more than a SIMD search of the
/// text.
const BYTES_PER_LISTED: usize = 64;

/// The first `needle` at or after byte `from` of `text`, SIMD-accelerated.
/// A marker searched for in a whole reply is found through its
/// [`MarkerIndex`] instead, so that prose costs one pass for all of them.
pub(crate) fn find(text: &str, from: usize, needle: &str) -> Option<usize> {
    let rest = text.as_bytes().get(from..)?;
    memchr::memmem::find(rest, needle.as_bytes()).map(|i| i + from)
}

/// The first `{` or `[` at or after byte `from`.
pub(crate) fn find_open_bracket(text: &str, from: usize) -> Option<usize> {
    let rest = text.as_bytes().get(from..)?;
    memchr::memchr2(b'{', b'[', rest).map(|i| i + from)
}

/// A reply and where markup may start in it.
pub(crate) struct MarkerIndex<'a> {
    text: &'a str,
    /// Each listed byte and its positions in order. A byte of a pass that
    /// found the text too dense is not here, and is searched directly.
    lists: Vec<(u8, Vec<usize>)>,
}

impl<'a> MarkerIndex<'a> {
    /// Lists the bytes of each of `passes` in `text`.
    pub(crate) fn new(text: &'a str, passes: &[Listed]) -> Self {
        let mut lists = Vec::with_capacity(passes.len() * MARKUP.len());
        for pass in passes {
            if let Some(positions) = positions(text.as_bytes(), pass) {
                lists.extend(pass.iter().copied().zip(positions));
            }
        }
        MarkerIndex { text, lists }
    }

    /// The text indexed.
    pub(crate) fn text(&self) -> &'a str {
        self.text
    }

    /// The first `needle` at or after byte `from`, as [`find`]
    /// answers.
    pub(crate) fn find(&self, from: usize, needle: &str) -> Option<usize> {
        let Some(list) = needle.bytes().next().and_then(|first| self.list(first)) else {
            return find(self.text, from, needle);
        };
        let bytes = self.text.as_bytes();
        list[list.partition_point(|&p| p < from)..].iter().copied().find(|&p| bytes[p..].starts_with(needle.as_bytes()))
    }

    /// The first `{` or `[` at or after byte `from`, as
    /// [`find_open_bracket`] answers.
    pub(crate) fn find_open_bracket(&self, from: usize) -> Option<usize> {
        match (self.list(b'{'), self.list(b'[')) {
            (Some(braces), Some(brackets)) => [braces, brackets].iter().filter_map(|list| first_from(list, from)).min(),
            _ => find_open_bracket(self.text, from),
        }
    }

    /// The positions of `byte`, if it is listed.
    fn list(&self, byte: u8) -> Option<&[usize]> {
        self.lists.iter().find(|(listed, _)| *listed == byte).map(|(_, list)| list.as_slice())
    }
}

/// Per byte of `pass`, its positions in `bytes`; `None` when there are
/// more than [`BYTES_PER_LISTED`] allows, found as soon as there are.
fn positions(bytes: &[u8], pass: &Listed) -> Option<[Vec<usize>; 3]> {
    let most = bytes.len() / BYTES_PER_LISTED;
    let mut positions: [Vec<usize>; 3] = Default::default();
    for (count, at) in memchr::memchr3_iter(pass[0], pass[1], pass[2], bytes).enumerate() {
        if count == most {
            return None;
        }
        let list = pass.iter().position(|&b| b == bytes[at]).expect("memchr3 finds only the pass's bytes");
        positions[list].push(at);
    }
    Some(positions)
}

/// The first position in sorted `list` at or after `from`.
fn first_from(list: &[usize], from: usize) -> Option<usize> {
    list.get(list.partition_point(|&p| p < from)).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::{FENCE, REASONING};
    use proptest::prelude::*;

    /// The passes each parser lists: the single protocols', `auto`'s and
    /// native's.
    const INDEXES: [&[Listed]; 3] = [&[MARKUP], &[MARKUP, crate::auto::PLAIN_CALLS], &[crate::native::LISTED]];

    impl MarkerIndex<'_> {
        /// Whether `byte`'s positions are listed rather than searched for.
        fn is_listed(&self, byte: u8) -> bool {
            self.list(byte).is_some()
        }
    }

    /// Markers the parsers search whole replies for, and needles that start
    /// with a byte that is not listed.
    fn needles() -> Vec<&'static str> {
        let mut needles: Vec<&str> = REASONING.iter().flat_map(|&(open, close)| [open, close]).collect();
        needles.extend([
            "<",
            "[",
            "`",
            "{",
            ">",
            "A",
            FENCE,
            "<tool_call>",
            "</tool_call>",
            "[TOOL_REQUEST]",
            "<|",
            "<｜",
            "<s>",
            ">>>",
            "Action:",
            "{\"name\"",
            "Thought:",
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
            proptest::sample::select(vec!["<", "[", "`", "{", ">", "A", "é", "日", "「", "<<", "``", ">>", "{[", "\n"])
                .prop_map(str::to_owned),
        ];
        proptest::collection::vec(piece, 0..12).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Every parser's index finds what a search of the whole text
        /// finds, from any byte, whether it lists the text or searches it
        /// directly.
        #[test]
        fn the_index_finds_what_a_search_of_the_text_finds(text in reply()) {
            // Around every byte any pass lists, and now and then in between.
            let listed: Vec<u8> = INDEXES.iter().flat_map(|passes| passes.iter().flatten().copied()).collect();
            let near_listed = |at: usize| (at.saturating_sub(2)..at + 2).any(|p| text.as_bytes().get(p).is_some_and(|b| listed.contains(b)));
            let froms: Vec<usize> = (0..=text.len() + 1).filter(|&at| at % 31 == 0 || at >= text.len() || near_listed(at)).collect();
            for passes in INDEXES {
                let index = MarkerIndex::new(&text, passes);
                for &from in &froms {
                    for needle in needles() {
                        prop_assert_eq!(index.find(from, needle), super::find(&text, from, needle), "{:?} from {} in {:?}", needle, from, passes);
                    }
                    prop_assert_eq!(index.find_open_bracket(from), super::find_open_bracket(&text, from), "from {} in {:?}", from, passes);
                }
            }
        }
    }

    #[test]
    fn prose_is_listed_and_dense_text_is_searched_pass_by_pass() {
        let prose = format!("{}<think>a</think>", "prose ".repeat(100));
        let listed = MarkerIndex::new(&prose, &[MARKUP]);
        assert!(listed.is_listed(b'<'));
        assert_eq!(listed.find(0, "</think>"), Some(608));
        let markup = "<b>".repeat(100);
        let dense = MarkerIndex::new(&markup, &[MARKUP]);
        assert!(!dense.is_listed(b'<'));
        assert_eq!(dense.find(4, "<b>"), Some(6));
        assert!(MarkerIndex::new("", &[MARKUP]).is_listed(b'<'));
        // A pass too dense to list leaves the other listed.
        let quoted = format!("{}<think>a</think> [1] {{}}", "> quoted\n".repeat(100));
        let both = MarkerIndex::new(&quoted, &[MARKUP, crate::auto::PLAIN_CALLS]);
        assert!(both.is_listed(b'<') && both.is_listed(b'['));
        assert!(!both.is_listed(b'>') && !both.is_listed(b'{'), "the whole pass is searched directly");
        assert_eq!(both.find(0, "</think>"), quoted.find("</think>"));
        assert_eq!(both.find_open_bracket(0), quoted.find('['));
        assert_eq!(both.find_open_bracket(quoted.len() - 2), Some(quoted.len() - 2));
    }
}
