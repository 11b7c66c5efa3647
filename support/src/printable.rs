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
//!   raw; the values are unchanged ([`to_json_pretty_excerpt`]: its start).

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

/// [`to_json_pretty`], cut after `max_bytes` (at a character's boundary,
/// `…` and a line saying so added): what a person is shown of arguments a
/// peer chose, whose pretty form can be a hundred times their size (each
/// level of nesting indents every line below it). Serializing stops at the
/// limit, so neither time nor memory follows the whole. `None` when the
/// value cannot be serialized.
pub fn to_json_pretty_excerpt<T: Serialize + ?Sized>(value: &T, max_bytes: usize) -> Option<String> {
    let mut out = Bounded { bytes: Vec::new(), max: max_bytes };
    let formatter = EscapingFormatter(serde_json::ser::PrettyFormatter::new());
    let whole = value.serialize(&mut serde_json::Serializer::with_formatter(&mut out, formatter));
    let mut bytes = out.bytes;
    let cut = match whole {
        Ok(()) => false,
        Err(error) if error.is_io() && bytes.len() >= max_bytes => true,
        Err(_) => return None,
    };
    let valid = match std::str::from_utf8(&bytes) {
        Ok(_) => bytes.len(),
        Err(error) => error.valid_up_to(),
    };
    bytes.truncate(valid);
    let mut text = String::from_utf8(bytes).expect("cut at a character's boundary");
    if cut {
        let _ = write!(text, "…\n[cut: only the first {max_bytes} bytes of the arguments are shown]");
    }
    Some(text)
}

/// A writer that takes `max` bytes, then fails.
struct Bounded {
    bytes: Vec<u8>,
    max: usize,
}

impl std::io::Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = self.max - self.bytes.len();
        if room == 0 {
            return Err(std::io::Error::other("the excerpt is full"));
        }
        let taken = buf.len().min(room);
        self.bytes.extend_from_slice(&buf[..taken]);
        Ok(taken)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
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
    fn an_excerpt_is_cut_early_at_a_boundary_and_says_so() {
        let small = serde_json::json!({"path": "a.txt"});
        assert_eq!(to_json_pretty_excerpt(&small, 100).as_deref(), Some(to_json_pretty(&small).unwrap().as_str()));
        // Deep nesting: the pretty form would be some hundred times the
        // compact one; the excerpt stops at its limit.
        let deep: serde_json::Value =
            serde_json::from_str(&format!("{}{}{}", "[".repeat(100), "0,".repeat(5000) + "0", "]".repeat(100))).unwrap();
        let shown = to_json_pretty_excerpt(&deep, 1000).unwrap();
        assert!(shown.len() < 1100 && shown.ends_with("are shown]"), "{}", shown.len());
        let wide = serde_json::json!({"text": "é".repeat(600)});
        let shown = to_json_pretty_excerpt(&wide, 101).unwrap();
        assert!(shown.contains('…') && shown.len() < 200, "{shown}");
    }

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
