//! A JSON reader for what models write: it accepts strict JSON and repairs
//! the mistakes models make, reporting each repair. Repairs: trailing
//! commas, single-quoted strings, Python `True`/`False`/`None`, sets (read
//! as arrays) and strings (triple-quoted, raw `r'…'`, `u'…'`), raw
//! newlines and tabs inside strings, unquoted keys. Nesting deeper than
//! [`MAX_DEPTH`] is refused, so hostile input cannot exhaust the stack, and
//! every byte is looked at a bounded number of times.

use serde_json::{Map, Number, Value};

/// Nesting deeper than this is an error rather than a risk to the stack.
pub const MAX_DEPTH: usize = 128;

/// A repair made while reading, at a byte offset of the input.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Repair {
    /// Where, in bytes from the start of the text given to [`parse_prefix`].
    pub offset: usize,
    /// What was repaired.
    pub what: &'static str,
}

/// Why the text is not a value.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JsonError {
    /// Where reading stopped.
    pub offset: usize,
    /// Why.
    pub message: String,
}

/// Read one value from the start of `text` (after whitespace). Returns the
/// value, the byte length consumed, and the repairs made.
///
/// # Errors
///
/// A [`JsonError`], at the offset where reading stopped, when the text does not
/// start with a value, even after the repairs, or nests deeper than [`MAX_DEPTH`].
pub fn parse_prefix(text: &str) -> Result<(Value, usize, Vec<Repair>), JsonError> {
    let mut reader = Reader { bytes: text.as_bytes(), text, at: 0, repairs: Vec::new(), ends_closed: false };
    reader.skip_ws();
    let value = reader.value(0)?;
    Ok((value, reader.at, reader.repairs))
}

/// Read `text` as exactly one value, allowing surrounding whitespace.
///
/// # Errors
///
/// A [`JsonError`] when the text is not one value with only whitespace around it,
/// even after the repairs, or nests deeper than [`MAX_DEPTH`].
pub fn parse(text: &str) -> Result<(Value, Vec<Repair>), JsonError> {
    let (value, used, repairs) = parse_prefix(text)?;
    if text[used..].trim_start().is_empty() {
        Ok((value, repairs))
    } else {
        Err(JsonError { offset: used, message: "text follows the value".into() })
    }
}

/// Read `text`, the whole of a call that markup closes (a `<tool_call>`
/// element, a fenced block), as one value: as [`parse`] does, and also
/// repaired when the text ends with brackets left open (a model that
/// leaves out the last `}` before it closes the element) or when closing
/// brackets are written past the value (one too many, or several).
///
/// # Errors
///
/// As [`parse`]'s, for what these repairs do not mend.
pub(crate) fn parse_closed(text: &str) -> Result<(Value, Vec<Repair>), JsonError> {
    let mut reader = Reader { bytes: text.as_bytes(), text, at: 0, repairs: Vec::new(), ends_closed: true };
    reader.skip_ws();
    let value = reader.value(0)?;
    reader.skip_ws();
    let extra = reader.at;
    while matches!(reader.peek(), Some(b'}' | b']')) {
        reader.at += 1;
        reader.skip_ws();
    }
    if reader.at > extra {
        reader.repair(extra, "closing bracket past the value");
    }
    match reader.peek() {
        None => Ok((value, reader.repairs)),
        Some(_) => Err(JsonError { offset: reader.at, message: "text follows the value".into() }),
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    text: &'a str,
    at: usize,
    repairs: Vec<Repair>,
    /// Whether the text's end closes every container still open.
    ends_closed: bool,
}

impl Reader<'_> {
    fn error<T>(&self, message: impl Into<String>) -> Result<T, JsonError> {
        Err(JsonError { offset: self.at, message: message.into() })
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn repair(&mut self, offset: usize, what: &'static str) {
        self.repairs.push(Repair { offset, what });
    }

    fn value(&mut self, depth: usize) -> Result<Value, JsonError> {
        if depth > MAX_DEPTH {
            return self.error(format!("nested deeper than {MAX_DEPTH} levels"));
        }
        if let Some(opening) = self.python_string_opens() {
            return self.python_string(opening).map(Value::String);
        }
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(quote @ (b'"' | b'\'')) => self.string(quote).map(Value::String),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b) if b.is_ascii_alphabetic() => self.word(),
            Some(_) => self.error("expected a value"),
            None => self.error("the text ends where a value should be"),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, JsonError> {
        let open = self.at;
        self.at += 1;
        let mut map = Map::new();
        while !self.closes(b'}', "object")? {
            let quoted = self.peek().is_some_and(|b| matches!(b, b'"' | b'\'' | b'-' | b'0'..=b'9'));
            if map.is_empty() && (quoted || self.python_string_opens().is_some()) {
                // A Python set, `{'a', 'b'}`, if no `:` follows its first item.
                let (first_at, repairs) = (self.at, self.repairs.len());
                let first = self.value(depth + 1)?;
                self.skip_ws();
                if self.peek() != Some(b':') {
                    self.repairs.insert(repairs, Repair { offset: open, what: "Python set" });
                    return self.set_items(first, depth);
                }
                // A key after all: read again as one.
                self.at = first_at;
                self.repairs.truncate(repairs);
            }
            let key = match (self.python_string_opens(), self.peek()) {
                (Some(opening), _) => self.python_string(opening)?,
                (None, Some(quote @ (b'"' | b'\''))) => self.string(quote)?,
                (None, Some(b)) if b.is_ascii_alphabetic() || b == b'_' => {
                    let start = self.at;
                    while self.peek().is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
                        self.at += 1;
                    }
                    self.repair(start, "unquoted key");
                    self.text[start..self.at].to_owned()
                }
                _ => return self.error("expected a key"),
            };
            self.skip_ws();
            if self.peek() != Some(b':') {
                return self.error("expected `:` after a key");
            }
            self.at += 1;
            self.skip_ws();
            let value = self.value(depth + 1)?;
            map.insert(key, value);
            self.after_item(b'}', "object")?;
        }
        Ok(Value::Object(map))
    }

    /// The rest of a Python set whose first item is read: its items as an
    /// array, as vLLM's pythonic parsers decode a set.
    fn set_items(&mut self, first: Value, depth: usize) -> Result<Value, JsonError> {
        let mut items = vec![first];
        self.after_item(b'}', "set")?;
        while !self.closes(b'}', "set")? {
            items.push(self.value(depth + 1)?);
            self.after_item(b'}', "set")?;
        }
        Ok(Value::Array(items))
    }

    fn array(&mut self, depth: usize) -> Result<Value, JsonError> {
        self.at += 1;
        let mut items = Vec::new();
        while !self.closes(b']', "array")? {
            items.push(self.value(depth + 1)?);
            self.after_item(b']', "array")?;
        }
        Ok(Value::Array(items))
    }

    /// At the start of an item: whether the container closes here.
    fn closes(&mut self, close: u8, what: &str) -> Result<bool, JsonError> {
        self.skip_ws();
        match self.peek() {
            Some(b) if b == close => {
                self.at += 1;
                Ok(true)
            }
            None if self.ends_closed => {
                self.repair(self.at, "closing bracket left out");
                Ok(true)
            }
            None => self.error(format!("the {what} is not closed")),
            _ => Ok(false),
        }
    }

    /// After an item: a `,` (repaired when it trails before `close`) or
    /// `close` itself, left for [`Self::closes`].
    fn after_item(&mut self, close: u8, what: &str) -> Result<(), JsonError> {
        self.skip_ws();
        match self.peek() {
            Some(b',') => {
                let comma = self.at;
                self.at += 1;
                self.skip_ws();
                if self.peek() == Some(close) {
                    self.repair(comma, "trailing comma");
                }
                Ok(())
            }
            Some(b) if b == close => Ok(()),
            None if self.ends_closed => Ok(()),
            None => self.error(format!("the {what} is not closed")),
            _ => self.error(format!("expected `,` or `{}`", close as char)),
        }
    }

    fn string(&mut self, quote: u8) -> Result<String, JsonError> {
        let start = self.at;
        if quote == b'\'' {
            self.repair(start, "single-quoted string");
        }
        self.at += 1;
        let mut out = String::new();
        let mut raw_control = false;
        loop {
            let run_start = self.at;
            while self.peek().is_some_and(|b| b != quote && b != b'\\' && b >= 0x20) {
                self.at += 1;
            }
            out.push_str(&self.text[run_start..self.at]);
            match self.peek() {
                None => return Err(JsonError { offset: start, message: "the string is not closed".into() }),
                Some(b) if b == quote => {
                    self.at += 1;
                    if raw_control {
                        self.repair(start, "raw control character in a string");
                    }
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.at += 1;
                    self.escape(&mut out)?;
                }
                Some(control) => {
                    raw_control = true;
                    out.push(control as char);
                    self.at += 1;
                }
            }
        }
    }

    /// A string as only Python writes it at the position: prefixed (`r'…'`,
    /// `u"…"`) or triple-quoted (`'''…'''`), which strict JSON never is.
    fn python_string_opens(&self) -> Option<PythonString> {
        let (raw, quote_at) = match self.peek()? {
            b'r' | b'R' => (true, self.at + 1),
            b'u' | b'U' => (false, self.at + 1),
            _ => (false, self.at),
        };
        let quote = *self.bytes.get(quote_at).filter(|b| matches!(b, b'"' | b'\''))?;
        let triple = self.bytes.get(quote_at..quote_at + 3) == Some(&[quote; 3]);
        (quote_at > self.at || triple).then_some(PythonString { raw, quote, triple, body: quote_at + if triple { 3 } else { 1 } })
    }

    /// The string that [`Self::python_string_opens`] found: a raw one's
    /// backslashes kept as written, any other's escapes read as Python
    /// reads them ([`python_unescape`]). As in Python, a backslash keeps
    /// the quote after it from ending the string, raw or not.
    fn python_string(&mut self, opening: PythonString) -> Result<String, JsonError> {
        let PythonString { raw, quote, triple, body } = opening;
        let start = self.at;
        self.repair(start, if raw { "Python raw string" } else { "Python string" });
        let closes =
            |at: usize| self.bytes.get(at..at + if triple { 3 } else { 1 }).is_some_and(|q| q.iter().all(|&b| b == quote));
        let mut end = body;
        loop {
            match self.bytes.get(end) {
                None => return Err(JsonError { offset: start, message: "the string is not closed".into() }),
                Some(b'\\') => end += 2,
                Some(_) if closes(end) => break,
                Some(_) => end += 1,
            }
        }
        let text = &self.text[body..end];
        self.at = end + if triple { 3 } else { 1 };
        Ok(if raw { text.to_owned() } else { python_unescape(text) })
    }

    fn escape(&mut self, out: &mut String) -> Result<(), JsonError> {
        let Some(b) = self.peek() else { return self.error("the string ends inside an escape") };
        self.at += 1;
        match b {
            b'"' => out.push('"'),
            b'\'' => out.push('\''),
            b'\\' => out.push('\\'),
            b'/' => out.push('/'),
            b'b' => out.push('\u{8}'),
            b'f' => out.push('\u{c}'),
            b'n' => out.push('\n'),
            b'r' => out.push('\r'),
            b't' => out.push('\t'),
            b'u' => {
                let first = self.hex4()?;
                // A high surrogate joins only a low one that follows; alone
                // it is U+FFFD, and the escape after it is read as itself.
                let c = match self.low_surrogate_next() {
                    Some(second) if (0xD800..0xDC00).contains(&first) => {
                        self.at += 6;
                        char::from_u32(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
                    }
                    _ => char::from_u32(first),
                };
                out.push(c.unwrap_or('\u{FFFD}'));
            }
            other => {
                // An unknown escape keeps its character, as Python does.
                out.push('\\');
                if other.is_ascii() {
                    out.push(other as char);
                } else {
                    self.at -= 1;
                }
            }
        }
        Ok(())
    }

    /// The low surrogate a `\uXXXX` escape at the position writes, if it
    /// writes one.
    fn low_surrogate_next(&self) -> Option<u32> {
        let digits = self.text.get(self.at..self.at + 6)?.strip_prefix("\\u")?;
        let value = u32::from_str_radix(digits, 16).ok().filter(|_| digits.bytes().all(|b| b.is_ascii_hexdigit()))?;
        (0xDC00..0xE000).contains(&value).then_some(value)
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let digits = self.text.get(self.at..self.at + 4).filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()));
        let Some(digits) = digits else { return self.error("expected four hex digits after \\u") };
        self.at += 4;
        Ok(u32::from_str_radix(digits, 16).expect("checked hex digits"))
    }

    fn number(&mut self) -> Result<Value, JsonError> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        while self.peek().is_some_and(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-')) {
            self.at += 1;
        }
        let text = &self.text[start..self.at];
        // `-0` is the float -0.0, as strict JSON reads it: no integer is
        // negative zero.
        let negative_zero = text.starts_with('-') && text[1..].bytes().all(|b| b == b'0');
        if let Ok(n) = text.parse::<i64>()
            && !negative_zero
        {
            return Ok(Value::Number(n.into()));
        }
        if let Ok(n) = text.parse::<u64>() {
            return Ok(Value::Number(n.into()));
        }
        match text.parse::<f64>().ok().and_then(Number::from_f64) {
            Some(n) => Ok(Value::Number(n)),
            None => Err(JsonError { offset: start, message: format!("`{text}` is not a number") }),
        }
    }

    fn word(&mut self) -> Result<Value, JsonError> {
        let start = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_alphabetic()) {
            self.at += 1;
        }
        let value = match &self.text[start..self.at] {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "null" => Value::Null,
            "True" => {
                self.repair(start, "Python True");
                Value::Bool(true)
            }
            "False" => {
                self.repair(start, "Python False");
                Value::Bool(false)
            }
            "None" => {
                self.repair(start, "Python None");
                Value::Null
            }
            other => {
                return Err(JsonError { offset: start, message: format!("`{other}` is not a JSON value") });
            }
        };
        Ok(value)
    }
}

/// A string only Python writes, found at a reader's position: whether it
/// is raw, its quote, whether three of it open and close it, and where its
/// text starts.
#[derive(Debug, Clone, Copy)]
struct PythonString {
    raw: bool,
    quote: u8,
    triple: bool,
    body: usize,
}

/// A Python string literal's text, its escapes read: `\\`, the quote,
/// `\n`, `\t`, `\r`, `\b`, `\f`, `\v`, `\a`, a line break escaped
/// (nothing), and a character by its code (`\xhh`, `\uXXXX`,
/// `\UXXXXXXXX`, octal `\ooo`); any other backslash is kept, as Python
/// keeps it, and so is what is no character (a lone surrogate, too few
/// digits).
pub(crate) fn python_unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\\') => out.push('\\'),
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('v') => out.push('\u{b}'),
            Some('a') => out.push('\u{7}'),
            Some('\n') => {}
            Some(first @ '0'..='7') => {
                let mut code = first.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.clone().next().and_then(|c| c.to_digit(8)) {
                        Some(digit) => {
                            code = code * 8 + digit;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
            }
            Some(q @ ('"' | '\'')) => out.push(q),
            Some(letter @ ('x' | 'u' | 'U')) => {
                let digits = match letter {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let hex: String = chars.clone().take(digits).collect();
                let whole = hex.len() == digits && hex.chars().all(|c| c.is_ascii_hexdigit());
                let code = whole.then(|| u32::from_str_radix(&hex, 16).ok()).flatten();
                match code.and_then(char::from_u32) {
                    Some(c) => {
                        out.push(c);
                        chars.nth(digits - 1);
                    }
                    None => {
                        out.push('\\');
                        out.push(letter);
                    }
                }
            }
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Where `close` stands after the JSON value that starts the text at
/// `body` (after white space), with only white space between: the end of
/// an element or block whose first `close` may stand inside a string of
/// the value. `None` when no value reads there or `close` does not follow.
pub(crate) fn close_after_value(reply: &str, body: usize, close: &str) -> Option<usize> {
    let start = body + (reply[body..].len() - reply[body..].trim_start().len());
    if !reply[start..].starts_with(['{', '[']) {
        return None;
    }
    let (_, used, _) = parse_prefix(&reply[start..]).ok()?;
    let after = start + used;
    let at = after + (reply[after..].len() - reply[after..].trim_start().len());
    reply[at..].starts_with(close).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn repaired(text: &str) -> (Value, Vec<&'static str>) {
        let (value, repairs) = parse(text).unwrap();
        (value, repairs.into_iter().map(|r| r.what).collect())
    }

    #[test]
    fn strict_json_needs_no_repair() {
        let (value, repairs) = repaired(r#"{"a": [1, -2.5, "x\n\u00e9"], "b": {"c": null, "d": true}}"#);
        assert_eq!(value, json!({"a": [1, -2.5, "x\né"], "b": {"c": null, "d": true}}));
        assert!(repairs.is_empty());
    }

    #[test]
    fn found_by_fuzzing_strict_json_reads_the_same() {
        // `-0` was the integer 0; strict JSON reads the float -0.0.
        for text in ["-0", "[-0, 0, -0.0]", "{\"a\": -0}"] {
            assert_eq!(repaired(text).0, serde_json::from_str::<Value>(text).unwrap(), "{text}");
        }
        assert!(repaired("-0").0.as_f64().is_some_and(|z| z == 0.0 && z.is_sign_negative()));
    }

    #[test]
    fn a_lone_surrogate_is_a_replacement_character_and_the_escape_after_it_stays() {
        let (value, _) = repaired(r#"["\ud800\u0041", "\ud83d\u00e9", "\ud83d\ude00", "\udc00x", "\ud800"]"#);
        assert_eq!(value, json!(["\u{FFFD}A", "\u{FFFD}é", "😀", "\u{FFFD}x", "\u{FFFD}"]));
    }

    #[test]
    fn trailing_commas_are_repaired() {
        assert_eq!(repaired(r#"{"a": [1, 2,], }"#), (json!({"a": [1, 2]}), vec!["trailing comma", "trailing comma"]));
    }

    #[test]
    fn single_quotes_are_repaired() {
        assert_eq!(repaired(r#"{'a': 'it"s'}"#), (json!({"a": "it\"s"}), vec!["single-quoted string", "single-quoted string"]));
    }

    #[test]
    fn python_literals_are_repaired() {
        assert_eq!(
            repaired(r#"{"a": True, "b": False, "c": None}"#),
            (json!({"a": true, "b": false, "c": null}), vec!["Python True", "Python False", "Python None"])
        );
    }

    #[test]
    fn python_sets_are_read_as_arrays() {
        assert_eq!(
            repaired("{'urgent', 'bug'}"),
            (json!(["urgent", "bug"]), vec!["Python set", "single-quoted string", "single-quoted string"])
        );
        assert_eq!(repaired("{1, -2,}").0, json!([1, -2]));
        assert_eq!(repaired("{\"a\"}").0, json!(["a"]));
        assert_eq!(repaired("{\"a\": {2}}").0, json!({"a": [2]}));
        assert_eq!(repaired("{}").0, json!({}));
        assert!(parse("{'a', 'b'").is_err());
    }

    #[test]
    fn a_closed_calls_brackets_left_out_or_one_too_many_are_repaired() {
        let closed = |text: &str| {
            parse_closed(text).map(|(value, repairs)| (value, repairs.into_iter().map(|r| r.what).collect::<Vec<_>>()))
        };
        assert_eq!(
            closed(r#"{"name": "f", "arguments": {"a": [1, 2"#).unwrap(),
            (json!({"name": "f", "arguments": {"a": [1, 2]}}), vec!["closing bracket left out"; 3])
        );
        assert_eq!(closed(r#"{"a": 1}} ] "#).unwrap(), (json!({"a": 1}), vec!["closing bracket past the value"]));
        // Not mended: a string, a key or a value cut off, or text after.
        for text in [r#"{"a": "b"#, r#"{"a": "#, r#"{"a"#, r#"{"a": 1} x"#, ""] {
            assert!(closed(text).is_err(), "{text}");
        }
        // Text that is not a call's whole is not mended.
        assert!(parse(r#"{"a": [1"#).is_err() && parse(r#"{"a": 1}}"#).is_err());
    }

    #[test]
    fn python_strings_are_read_as_python_reads_them() {
        // Raw strings keep their backslashes; a backslash still keeps the
        // quote after it from ending one.
        assert_eq!(
            repaired(r#"{"pattern": r'\d+\.\d+', 'path': R"C:\Users\x", "q": r'it\'s'}"#),
            (
                json!({"pattern": r"\d+\.\d+", "path": r"C:\Users\x", "q": r"it\'s"}),
                vec!["Python raw string", "single-quoted string", "Python raw string", "Python raw string"]
            )
        );
        // Prefixed and triple-quoted ones in lists, keys and sets.
        assert_eq!(repaired(r#"[u'caf\u00e9', '''it's "x"\n''', r'''a\b''']"#).0, json!(["café", "it's \"x\"\n", r"a\b"]));
        assert_eq!(repaired(r#"{u'city': u'Paris', r'k': 1}"#).0, json!({"city": "Paris", "k": 1}));
        assert_eq!(repaired(r#"{r'\d', u'x'}"#).0, json!([r"\d", "x"]));
        assert_eq!(repaired("['''\n''', \"\"\"a\nb\"\"\"]").0, json!(["\n", "a\nb"]));
        // Python's other escapes, octal and a line break escaped too.
        assert_eq!(
            repaired("[u'a\\bc\\f\\v\\a\\0\\101\\7777', '''x\\\ny''']").0,
            json!(["a\u{8}c\u{c}\u{b}\u{7}\u{0}A\u{1ff}7", "xy"])
        );
        // What no Python string is stays an error, at the string.
        assert_eq!(parse("[r'open").unwrap_err().offset, 1);
        assert!(parse("[rx'a']").is_err());
        assert!(parse("['''a'']").is_err());
        // Strict JSON that looks like one reads as before.
        assert_eq!(repaired(r#"["", "u", "r"]"#), (json!(["", "u", "r"]), vec![]));
    }

    #[test]
    fn raw_newlines_and_tabs_in_strings_are_repaired() {
        assert_eq!(
            repaired("{\"code\": \"fn main() {\n\tprintln!()\n}\"}"),
            (json!({"code": "fn main() {\n\tprintln!()\n}"}), vec!["raw control character in a string"])
        );
    }

    #[test]
    fn unquoted_keys_are_repaired() {
        assert_eq!(repaired(r#"{name: "calc"}"#), (json!({"name": "calc"}), vec!["unquoted key"]));
    }

    #[test]
    fn depth_is_bounded_and_errors_have_offsets() {
        let deep = "[".repeat(100_000);
        assert!(parse(&deep).unwrap_err().message.contains("nested deeper"));
        let error = parse(r#"{"a": 1"#).unwrap_err();
        assert_eq!(error.message, "the object is not closed");
        assert_eq!(error.offset, 7);
        assert_eq!(parse_prefix(r#"{"a":1} and more"#).unwrap().1, 7);
    }
}
