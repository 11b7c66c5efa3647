//! Typed access to a call's arguments.

use crate::ToolError;
use serde_json::{Map, Value};

/// The arguments of one call: the JSON object the caller sent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Args {
    values: Map<String, Value>,
}

impl Args {
    /// Parse the JSON text the host passes to `invoke`.
    pub fn from_json(text: &str) -> Result<Self, ToolError> {
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(values)) => Ok(Args { values }),
            Ok(other) => Err(ToolError::invalid_args(format!("arguments must be a JSON object, got {}", kind_of(&other)))),
            Err(error) => Err(ToolError::invalid_args(format!("arguments are not valid JSON: {error}"))),
        }
    }

    /// The required argument `name`, converted to `T`. The error names the
    /// argument and the expected type.
    pub fn get<T: FromArg>(&self, name: &str) -> Result<T, ToolError> {
        self.get_opt(name)?
            .ok_or_else(|| ToolError::invalid_args(format!("missing required argument `{name}` ({})", T::EXPECTED)))
    }

    /// The optional argument `name`: `None` when absent or `null`.
    pub fn get_opt<T: FromArg>(&self, name: &str) -> Result<Option<T>, ToolError> {
        match self.values.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => T::from_arg(value).map(Some).ok_or_else(|| {
                ToolError::invalid_args(format!("argument `{name}` must be {}, got {}", T::EXPECTED, kind_of(value)))
            }),
        }
    }

    /// The raw JSON object.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.values
    }
}

/// A Rust type an argument can be read as.
pub trait FromArg: Sized {
    /// The expected JSON type, as an error message names it ("an integer").
    const EXPECTED: &'static str;

    /// Convert `value`, or `None` when it has the wrong type or range.
    fn from_arg(value: &Value) -> Option<Self>;
}

impl FromArg for String {
    const EXPECTED: &'static str = "a string";
    fn from_arg(value: &Value) -> Option<Self> {
        value.as_str().map(str::to_owned)
    }
}

impl FromArg for bool {
    const EXPECTED: &'static str = "a boolean";
    fn from_arg(value: &Value) -> Option<Self> {
        value.as_bool()
    }
}

impl FromArg for f64 {
    const EXPECTED: &'static str = "a number";
    fn from_arg(value: &Value) -> Option<Self> {
        value.as_f64()
    }
}

impl FromArg for i64 {
    const EXPECTED: &'static str = "an integer";
    fn from_arg(value: &Value) -> Option<Self> {
        value.as_i64()
    }
}

impl FromArg for u64 {
    const EXPECTED: &'static str = "a non-negative integer";
    fn from_arg(value: &Value) -> Option<Self> {
        value.as_u64()
    }
}

impl FromArg for u32 {
    const EXPECTED: &'static str = "a non-negative integer below 2^32";
    fn from_arg(value: &Value) -> Option<Self> {
        value.as_u64().and_then(|n| u32::try_from(n).ok())
    }
}

impl FromArg for Value {
    const EXPECTED: &'static str = "any JSON value";
    fn from_arg(value: &Value) -> Option<Self> {
        Some(value.clone())
    }
}

impl FromArg for Vec<String> {
    const EXPECTED: &'static str = "an array of strings";
    fn from_arg(value: &Value) -> Option<Self> {
        value.as_array()?.iter().map(|item| item.as_str().map(str::to_owned)).collect()
    }
}

fn kind_of(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) if s.len() <= 40 => format!("the string {s:?}"),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Args {
        Args::from_json(text).unwrap()
    }

    #[test]
    fn typed_access_returns_values() {
        let a = args(r#"{"n": 42, "s": "x", "b": true, "f": 1.5, "list": ["a", "b"]}"#);
        assert_eq!(a.get::<i64>("n").unwrap(), 42);
        assert_eq!(a.get::<String>("s").unwrap(), "x");
        assert!(a.get::<bool>("b").unwrap());
        assert_eq!(a.get::<f64>("f").unwrap(), 1.5);
        assert_eq!(a.get::<Vec<String>>("list").unwrap(), vec!["a", "b"]);
        assert_eq!(a.get_opt::<i64>("absent").unwrap(), None);
    }

    #[test]
    fn wrong_type_names_argument_and_expected_type() {
        let error = args(r#"{"n": "forty"}"#).get::<i64>("n").unwrap_err();
        assert_eq!(error, ToolError::InvalidArgs(r#"argument `n` must be an integer, got the string "forty""#.into()));
    }

    #[test]
    fn missing_required_argument_is_named() {
        let error = args("{}").get::<String>("path").unwrap_err();
        assert_eq!(error, ToolError::InvalidArgs("missing required argument `path` (a string)".into()));
    }

    #[test]
    fn non_object_arguments_are_refused() {
        assert!(matches!(Args::from_json("[1]"), Err(ToolError::InvalidArgs(m)) if m.contains("an array")));
        assert!(matches!(Args::from_json("{"), Err(ToolError::InvalidArgs(m)) if m.contains("not valid JSON")));
    }
}
