//! Call syntax: text that one of the parsers reads as a call, or as the
//! start of one. A plugin's declarations are rendered into prompts, so a
//! declaration that held call syntax could put a call into a prompt that
//! nobody asked for, or reshape the prompt around it; the manifest check
//! refuses such text.
//!
//! The markers come from the parsers' own constants, and bare calls are
//! recognised by the `auto` parser's own test, so this list cannot fall
//! behind what the parsers read. One reading is left out on purpose: a
//! reply that is nothing but unbracketed pythonic calls
//! (`get_weather(city="Paris")`) is calls, but a declaration is never a
//! whole reply, and descriptions show such calls as examples.

use super::auto::{self, BareOpening};
use super::scan::{self, find_open_bracket};
use super::{vcp, xml_tag};
use aho_corasick::{AhoCorasick, MatchKind};
use std::sync::LazyLock;

/// How a bare JSON call is reported: an object whose first key is `name`.
const BARE_JSON_CALL: &str = "{\"name\"";
/// How a bare pythonic call is reported: `[` and a function name.
const BARE_PYTHONIC_CALL: &str = "[name(";
/// How a Functionary segment is reported: `>>>`, a name and a line break.
const SEGMENT_CALL: &str = ">>>name";

/// Call syntax found in a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CallSyntax {
    /// Where, in bytes.
    pub(crate) offset: usize,
    /// The marker, or for a bare call its shape (`{"name"`, `[name(`).
    pub(crate) syntax: &'static str,
}

/// Every marker a parser reads as (part of) a call or as reasoning, which
/// hides calls.
pub(crate) fn markers() -> impl Iterator<Item = &'static str> {
    vcp::MARKERS
        .into_iter()
        .chain([scan::FENCE])
        .chain(auto::function_tag::MARKERS)
        .chain(auto::glm::MARKERS)
        .chain(auto::kimi::MARKERS)
        .chain(auto::command_r::MARKERS)
        .chain(auto::cofl::MARKERS)
        .chain(auto::atem::MARKERS)
        .chain(auto::deepseek::MARKERS)
        .chain(auto::prefixed::MARKERS)
        .chain(xml_tag::TAGS.iter().flat_map(|&(open, close)| [open, close]))
        .chain(auto::minimax::MARKERS)
        .chain(auto::minimax_m3::MARKERS)
        .chain(auto::dsml::MARKERS)
        .chain(auto::step3::MARKERS)
        .chain(auto::envelope::MARKERS)
        .chain(auto::gemma::MARKERS)
        .chain(auto::solar::MARKERS)
        .chain(scan::REASONING.iter().flat_map(|&(open, close)| [open, close]))
        // After the reasoning markers, so that `<|channel|>analysis<|message|>`
        // and `<|open|>think<|sep|>` are named rather than their first token.
        .chain(auto::harmony::MARKERS)
        .chain(auto::kimi_k3::MARKERS)
        // Last, so that a token the parsers read is named rather than this.
        .chain([auto::CHAT_TOKEN_OPEN, auto::deepseek::TOKEN_OPEN])
}

/// [`markers`], in their order.
static MARKERS: LazyLock<Vec<&'static str>> = LazyLock::new(|| markers().collect());

/// Every marker in one pass, in any ASCII case: the leftmost, and of those
/// starting there the first in [`markers`]. A manifest's every shown text
/// is checked, so the automaton is built once rather than a search per
/// marker and text (a twentieth of a warm plugin load).
static MARKER_SEARCH: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::LeftmostFirst)
        .build(MARKERS.iter())
        .expect("the markers are few and short")
});

/// The first call syntax in `text`: a marker, in any ASCII case (a model
/// reads `<TOOL_CALL>` as `<tool_call>`), or the start of a bare JSON or
/// pythonic call, whatever tool it names: a declaration cannot know which
/// tools the other plugins declare.
pub(crate) fn first(text: &str) -> Option<CallSyntax> {
    let marker = MARKER_SEARCH.find(text).map(|found| CallSyntax { offset: found.start(), syntax: MARKERS[found.pattern()] });
    let mut at = 0;
    let bare = loop {
        let Some(open) = find_open_bracket(text, at) else { break None };
        match auto::bare_opening(text, open) {
            BareOpening::Json => break Some(CallSyntax { offset: open, syntax: BARE_JSON_CALL }),
            BareOpening::Pythonic if auto::pythonic::pythonic_head(text, open).is_some() => {
                break Some(CallSyntax { offset: open, syntax: BARE_PYTHONIC_CALL });
            }
            _ => at = open + 1,
        }
    };
    let segment = auto::functionary::next_segment(text, 0).map(|offset| CallSyntax { offset, syntax: SEGMENT_CALL });
    [marker, bare, segment].into_iter().flatten().min_by_key(|found| found.offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The first marker as a search per marker finds it: the leftmost, and
    /// of those starting there the first listed.
    fn first_marker_searched_one_by_one(text: &str) -> Option<CallSyntax> {
        let lower = text.to_ascii_lowercase();
        markers()
            .filter_map(|syntax| Some(CallSyntax { offset: scan::find(&lower, 0, &syntax.to_ascii_lowercase())?, syntax }))
            .min_by_key(|found| found.offset)
    }

    proptest! {
        /// Texts of markers, whole or cut short, in any case, between
        /// filler: markers that overlap and share prefixes.
        #[test]
        fn one_pass_finds_the_marker_a_search_per_marker_finds(
            pieces in prop::collection::vec((0..MARKERS.len(), 1..40usize, any::<bool>(), "[ a-z<|>]{0,3}"), 0..6)
        ) {
            let mut text = String::new();
            for (index, keep, upper, filler) in pieces {
                let marker = MARKERS[index];
                let cut = marker.char_indices().map(|(at, _)| at).chain([marker.len()]).rfind(|&at| at <= keep);
                let piece = &marker[..cut.unwrap_or(marker.len())];
                text.push_str(&if upper { piece.to_ascii_uppercase() } else { piece.to_owned() });
                text.push_str(&filler);
            }
            let found = MARKER_SEARCH.find(&text).map(|found| CallSyntax { offset: found.start(), syntax: MARKERS[found.pattern()] });
            prop_assert_eq!(found, first_marker_searched_one_by_one(&text), "{:?}", text);
        }
    }

    fn syntax(text: &str) -> Option<&'static str> {
        first(text).map(|found| found.syntax)
    }

    #[test]
    fn every_parser_marker_is_found_in_any_case() {
        for marker in markers() {
            let text = format!("see {marker} here");
            assert_eq!(first(&text), Some(CallSyntax { offset: 4, syntax: marker }), "{marker}");
            assert_eq!(syntax(&text.to_ascii_uppercase()), Some(marker), "{marker} upper-cased");
        }
        for marker in [
            "<<<[TOOL_REQUEST]>>>",
            "<<[END_TOOL_REQUEST]>>",
            "「始ESCAPE」",
            "<tool_call>",
            "</tool_code>",
            "```json",
            "<|im_start|>",
        ] {
            assert!(first(marker).is_some(), "{marker}");
        }
    }

    #[test]
    fn bare_calls_are_found_whatever_they_name() {
        assert_eq!(syntax("e.g. {\"name\": \"anything\", \"arguments\": {}}"), Some(BARE_JSON_CALL));
        assert_eq!(syntax("e.g. [ {'name': 'x'}]"), Some(BARE_JSON_CALL));
        // Every other shape the parser reads bare.
        for text in [
            "e.g. {\"arguments\": {}, \"name\": \"x\"}",
            "e.g. {\"type\": \"function\", \"name\": \"x\"}",
            "e.g. [{\"id\": \"c1\", \"type\": \"function\", \"function\": {}}]",
            "e.g. {\"tool_call\": {}}",
        ] {
            assert_eq!(syntax(text), Some(BARE_JSON_CALL), "{text}");
        }
        assert_eq!(syntax("e.g. [write_file(path=\"x\")]"), Some(BARE_PYTHONIC_CALL));
        assert_eq!(syntax("e.g.\n>>>write_file\n{}"), Some(SEGMENT_CALL));
    }

    #[test]
    fn ordinary_prose_and_json_are_not_call_syntax() {
        for text in [
            "local time as YYYY-MM-DD HH:MM[:SS]",
            "names to skip, e.g. [\".git\", \"target\"]",
            "returns {\"id\": 1, \"size\": 3} for each [optional] entry",
            "returns {\"id\": \"a1\", \"type\": \"file\"} or {\"type\": \"dir\"}",
            "the expression, e.g. 2 * (3 + 4) < 5 > 1 | 2",
            "Tool: write_file\nPlugin: files",
            ">>> print(1)\n1",
        ] {
            assert_eq!(first(text), None, "{text}");
        }
    }

    #[test]
    fn the_earliest_is_reported() {
        assert_eq!(first("a {\"name\": 1} <tool_call>"), Some(CallSyntax { offset: 2, syntax: BARE_JSON_CALL }));
        assert_eq!(first("a <tool_call> {\"name\": 1}"), Some(CallSyntax { offset: 2, syntax: "<tool_call>" }));
    }
}
