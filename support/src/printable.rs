//! Text from plugins, made safe to show a person or write into a log line.
//!
//! A plugin chooses every byte of its descriptions, tags, examples, output
//! and errors, and the plugin directories choose file names. Shown raw, a
//! control character is an instruction to the terminal (clear the screen,
//! move the cursor, overwrite a line, set the title, write the clipboard),
//! and a bidirectional override or an invisible character makes text read
//! as something it is not. [`printable`] writes each such character as an
//! escape instead (`\e`, `\r`, `\u{202e}`), so the text reads as what it is.
//! Backslashes are left alone: the result is for reading, not for parsing.
//!
//! - [`printable`]: one line — a name, a description, a table cell, a
//!   `refused:` line. Newlines and tabs are escaped too, so a plugin cannot
//!   start a line of its own.
//! - [`printable_lines`]: a body of text — tool output on a terminal, an
//!   error message — where newlines and tabs keep their meaning.
//! - [`to_json_pretty`]: JSON whose strings carry none of these characters
//!   raw; the values are unchanged.

use serde::Serialize;
use std::borrow::Cow;
use std::fmt::Write as _;
use toolhost_protocol::text::needs_escape;

/// `text` with control characters (C0, DEL, C1), line and paragraph
/// separators, bidirectional controls and invisible format characters
/// escaped: `\n`, `\r`, `\t`, `\e` and `\u{…}` for the rest. Other text is
/// unchanged.
pub fn printable(text: &str) -> Cow<'_, str> {
    escape(text, |_| true)
}

/// [`printable`], keeping newlines and tabs: for multi-line text.
pub fn printable_lines(text: &str) -> Cow<'_, str> {
    escape(text, |c| !matches!(c, '\n' | '\t'))
}

/// `value` as pretty JSON in which every character [`printable`] escapes is
/// written as a `\uXXXX` escape. serde_json escapes C0 already; this adds
/// DEL, C1, bidirectional and invisible characters. The JSON means the same.
///
/// # Errors
///
/// serde_json's error when `value` cannot be serialized (a map with keys that
/// are not strings, say).
pub fn to_json_pretty<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    escaped_json(value, serde_json::ser::PrettyFormatter::new())
}

/// [`to_json_pretty`] on one line: for JSON-lines output.
///
/// # Errors
///
/// serde_json's error when `value` cannot be serialized (a map with keys that
/// are not strings, say).
pub fn to_json_line<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    escaped_json(value, serde_json::ser::CompactFormatter)
}

fn escaped_json<T: Serialize + ?Sized, F: serde_json::ser::Formatter>(value: &T, formatter: F) -> serde_json::Result<String> {
    let mut out = Vec::new();
    value.serialize(&mut serde_json::Serializer::with_formatter(&mut out, EscapingFormatter(formatter)))?;
    Ok(String::from_utf8(out).expect("serde_json writes UTF-8"))
}

fn escape(text: &str, also: impl Fn(char) -> bool) -> Cow<'_, str> {
    let escaped = |c: char| needs_escape(c) && also(c);
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !escaped(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{1b}' => out.push_str("\\e"),
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

/// JSON laid out by `F`, with [`needs_escape`] characters in strings as
/// `\uXXXX`.
struct EscapingFormatter<F>(F);

impl<F: serde_json::ser::Formatter> serde_json::ser::Formatter for EscapingFormatter<F> {
    fn write_string_fragment<W: ?Sized + std::io::Write>(&mut self, writer: &mut W, fragment: &str) -> std::io::Result<()> {
        let mut rest = fragment;
        while let Some(at) = rest.find(needs_escape) {
            writer.write_all(&rest.as_bytes()[..at])?;
            let c = rest[at..].chars().next().expect("found a char");
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                write!(writer, "\\u{unit:04x}")?;
            }
            rest = &rest[at + c.len_utf8()..];
        }
        writer.write_all(rest.as_bytes())
    }

    // The rest is layout, delegated.
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_value(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert!(matches!(printable("plain text, ünïcode, 日本"), Cow::Borrowed(_)));
        assert_eq!(printable("a\nb\r\x1b[2Jc\x08\x7f\u{9b}"), "a\\nb\\r\\e[2Jc\\u{8}\\u{7f}\\u{9b}");
        assert_eq!(printable("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(printable("x\u{200b}y\u{e0041}\u{feff}"), "x\\u{200b}y\\u{e0041}\\u{feff}");
    }

    #[test]
    fn multi_line_text_keeps_its_lines() {
        assert_eq!(printable_lines("one\n\ttwo\r\x1b[K"), "one\n\ttwo\\r\\e[K");
        assert!(matches!(printable_lines("one\ntwo"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_escapes_what_serde_leaves_raw_and_means_the_same() {
        let value = serde_json::json!({ "k\u{202e}": ["\x1b[2J\u{7f}\u{9b}", "tag\u{e0041}", "ok ü"] });
        let text = to_json_pretty(&value).unwrap();
        assert_eq!(
            text,
            "{\n  \"k\\u202e\": [\n    \"\\u001b[2J\\u007f\\u009b\",\n    \"tag\\udb40\\udc41\",\n    \"ok ü\"\n  ]\n}"
        );
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), value);
        let line = to_json_line(&value).unwrap();
        assert_eq!(line, "{\"k\\u202e\":[\"\\u001b[2J\\u007f\\u009b\",\"tag\\udb40\\udc41\",\"ok ü\"]}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&line).unwrap(), value);
    }
}
