//! Characters that matter to both sides of a prompt: what a model may take
//! for a line break, and what a terminal or a person may not see as
//! written.

/// Whether a model may read `c` as the end of a line.
pub fn is_line_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// Whether toolhost's `printable` escapes `c`: controls, line and
/// paragraph separators, bidi controls and invisible characters.
pub fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c,
            // line and paragraph separators: some terminals break lines there
            '\u{2028}' | '\u{2029}'
            // bidi marks, embeddings, overrides and isolates, which reorder
            // what a terminal shows
            | '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
            // invisible: soft hyphen, zero-width space/joiners, word joiner
            // and invisible operators, deprecated format controls, BOM, and
            // the tag characters that hide text from people but not models
            | '\u{00ad}' | '\u{200b}'..='\u{200d}' | '\u{2060}'..='\u{2064}' | '\u{206a}'..='\u{206f}'
            | '\u{feff}' | '\u{e0000}'..='\u{e007f}')
}
