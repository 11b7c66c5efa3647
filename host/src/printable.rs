//! Text from plugins, made safe to show a person or write into a log line.
//!
//! A plugin chooses every byte of its descriptions, log messages, output
//! and errors. Shown raw, a control character is an instruction to the
//! terminal (clear the screen, move the cursor, overwrite a line) or forges
//! a new log line. [`printable`] writes each such character as an escape
//! instead, so the text reads as what it is.

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with control characters (C0, DEL, C1), line and paragraph
/// separators and bidirectional-override characters escaped: `\n`, `\r`,
/// `\t`, `\e` and `\u{…}` for the rest. Other text is unchanged.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{1b}' => out.push_str("\\e"),
            c if needs_escape(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c.is_control()
        // line/paragraph separators and the bidi embeddings, overrides and
        // isolates that reorder what a terminal shows
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert!(matches!(printable("plain text, ünïcode"), Cow::Borrowed(_)));
        assert_eq!(printable("a\nb\r\x1b[2Jc\x08\x7f\u{9b}"), "a\\nb\\r\\e[2Jc\\u{8}\\u{7f}\\u{9b}");
        assert_eq!(printable("abc\u{202e}fed"), "abc\\u{202e}fed");
    }
}
