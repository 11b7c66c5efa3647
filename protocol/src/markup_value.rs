//! A value an XML-style family writes as text (`<parameter=days>3</parameter>`,
//! `<arg_value>true</arg_value>`), typed without a schema as vLLM's and
//! SGLang's parsers type it: `null`, `true`, `false`, a number and a JSON
//! object or array are decoded, anything else stays text.
//!
//! Only text a value writes back exactly is decoded, so that the check step
//! can give a string parameter its text unchanged ([`text`]): `1.10`, a
//! 24-digit id or `{"a":1}` stay text, and the check step types them by the
//! declaration as before.

use serde_json::Value;
use serde_json::ser::Formatter;
use std::io;

/// `text` decoded, when it is a JSON literal, number, object or array
/// written exactly as [`text`] writes it back; else the text itself.
pub(crate) fn decode(text: &str) -> Value {
    match text {
        "null" => return Value::Null,
        "true" => return Value::Bool(true),
        "false" => return Value::Bool(false),
        _ => {}
    }
    if let Some(number) = exact_number(text) {
        return Value::Number(number);
    }
    if text.starts_with(['{', '['])
        && let Ok(value @ (Value::Object(_) | Value::Array(_))) = serde_json::from_str::<Value>(text)
        && self::text(&value) == text
    {
        return value;
    }
    Value::String(text.to_owned())
}

/// A value the model tagged as JSON (DeepSeek's `string="false"`, Kimi
/// K3's `type="integer"`, Cohere's `type="json"`), decoded; text that does
/// not parse stays text, for the check step to judge.
pub(crate) fn tagged_json(raw: &str) -> Value {
    crate::lenient_json::parse(raw.trim()).map_or_else(|_| Value::String(raw.to_owned()), |(value, _)| value)
}

/// `value` as the text a model writes it in (Python's `json.dumps` spacing,
/// `{"a": 1, "b": [1, 2]}`, without escaping what is not ASCII): the inverse
/// of [`decode`].
pub(crate) fn text(value: &Value) -> String {
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, SpacedFormatter);
    // Writing to a Vec cannot fail, nor can serializing a Value.
    if serde::Serialize::serialize(value, &mut serializer).is_err() {
        return value.to_string();
    }
    String::from_utf8(out).unwrap_or_else(|_| value.to_string())
}

/// JSON with a space after each `,` and `:`.
struct SpacedFormatter;

impl Formatter for SpacedFormatter {
    fn begin_array_value<W: ?Sized + io::Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { writer.write_all(b", ") }
    }

    fn begin_object_key<W: ?Sized + io::Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { writer.write_all(b", ") }
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }
}

/// `text` as a JSON number, when the number is written exactly so: text
/// that a number would rewrite (`1.10`, `018956`, a 24-digit id) stays
/// text, for the check step to type by the declaration.
pub(crate) fn exact_number(text: &str) -> Option<serde_json::Number> {
    let number = serde_json::from_str::<serde_json::Number>(text).ok()?;
    (number.to_string() == text).then_some(number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn literals_numbers_and_json_written_exactly_are_decoded() {
        // SGLang's Qwen3-Coder and MiniMax-M2 detectors decode a value
        // with json.loads when no schema types it (sglang
        // srt/function_call/qwen3_coder_detector.py).
        for (written, value) in [
            ("null", json!(null)),
            ("true", json!(true)),
            ("false", json!(false)),
            ("42", json!(42)),
            ("-0.5", json!(-0.5)),
            ("{\"theme\": \"dark\", \"fontSize\": 14}", json!({"theme": "dark", "fontSize": 14})),
            ("[1, 2, {\"a\": []}]", json!([1, 2, {"a": []}])),
            ("{\"city\": \"北京\"}", json!({"city": "北京"})),
            ("[]", json!([])),
        ] {
            assert_eq!(decode(written), value, "{written}");
            assert_eq!(text(&value), written, "{written} written back");
        }
    }

    #[test]
    fn text_a_value_would_rewrite_stays_text() {
        for written in
            ["1.10", "018956", "123456789012345678901234", "{\"a\":1}", "{\n  \"a\": 1\n}", "True", "Paris", " 5", "\"quoted\""]
        {
            assert_eq!(decode(written), json!(written), "{written}");
        }
    }
}
