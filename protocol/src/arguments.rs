//! Checking a parsed call against its tool's declaration: the tool must
//! exist, required parameters must be there, and values are coerced to the
//! declared types (`"42"` → 42 for an integer, `"true"` → true, JSON text
//! for a json parameter), and an input given as one text goes to the one
//! parameter it can be for. What cannot be fixed becomes a message for the
//! model that names the parameter and the expected type.

use crate::call::{TEXT_INPUT_KEY, ToolCall};
use crate::lenient_json;
use crate::manifest::{ParamType, ToolSpec};
use crate::markup_value;
use crate::suggest::unknown_tool;
use serde_json::{Map, Number, Value};
use std::borrow::Cow;

/// Why a call cannot run, worded for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct ArgumentError {
    /// The tool named by the call.
    pub tool: String,
    /// Whether the tool is unknown (else the arguments are wrong).
    pub unknown_tool: bool,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// Check `call` against the declared `tools`: the tool must exist (else
/// the message names the closest), required parameters must be there, and
/// values are coerced to the declared types. Returns the call with its
/// arguments coerced; id, raw text and reserved keys are kept.
///
/// # Errors
///
/// An [`ArgumentError`], with a message for the model, when the tool is not
/// declared (naming the closest names), a required parameter is missing, or a
/// value cannot be coerced to its declared type.
pub fn check(call: &ToolCall, tools: &[&ToolSpec]) -> Result<ToolCall, ArgumentError> {
    let error = |message: String| ArgumentError { tool: call.tool.clone(), unknown_tool: false, message };
    let Some(spec) = tools.iter().find(|t| t.name == call.tool) else {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        return Err(ArgumentError { unknown_tool: true, ..error(unknown_tool(&call.tool, &names)) });
    };
    if let Some(why) = call.unusable_args() {
        return Err(error(format!("`{}`: {why}", spec.name)));
    }
    let text_input = call.reserved.get(TEXT_INPUT_KEY).filter(|_| call.args.is_empty());
    let given = match text_input {
        Some(text) => Cow::Owned(text_arguments(spec, text).map_err(error)?),
        None => Cow::Borrowed(&call.args),
    };
    let mut args = Map::new();
    for param in &spec.params {
        match given.get(&param.name).filter(|value| !is_null(value, param.ty)) {
            None if param.required => {
                return Err(error(format!(
                    "`{}` needs the parameter `{}` ({}): {}",
                    spec.name,
                    param.name,
                    param.ty.as_str(),
                    param.description
                )));
            }
            None => {}
            Some(value) => {
                let coerced = coerce(value, param.ty).ok_or_else(|| {
                    error(format!(
                        "the parameter `{}` of `{}` must be {}, got {}",
                        param.name,
                        spec.name,
                        article(param.ty),
                        describe(value)
                    ))
                })?;
                args.insert(param.name.clone(), coerced);
            }
        }
    }
    // Undeclared arguments pass through; the plugin may ignore them.
    for (key, value) in given.iter() {
        if spec.param(key).is_none() {
            args.insert(key.clone(), value.clone());
        }
    }
    let mut checked = call.clone().with_args(args);
    checked.reserved.remove(TEXT_INPUT_KEY);
    Ok(checked)
}

/// `call` with an input given as one text ([`TEXT_INPUT_KEY`]) made the
/// value of the parameter it can be for, as [`check`] makes it, where its
/// tool among `tools` has one; else `call` as it is, for [`check`] to
/// refuse saying why. What records a call before checking it (a
/// conversation's transcript, a person deciding on it, the count of
/// repeated calls) then holds what will run.
pub fn resolve_text_input(call: ToolCall, tools: &[&ToolSpec]) -> ToolCall {
    let Some(text) = call.reserved.get(TEXT_INPUT_KEY).filter(|_| call.args.is_empty()).cloned() else { return call };
    let Some(Ok(args)) = tools.iter().find(|spec| spec.name == call.tool).map(|spec| text_arguments(spec, &text)) else {
        return call;
    };
    let mut resolved = call.with_args(args);
    resolved.reserved.remove(TEXT_INPUT_KEY);
    resolved
}

/// The arguments a call whose input is one text ([`TEXT_INPUT_KEY`]) gives
/// `spec`: the text for its one required parameter, else for its only
/// parameter; nothing for a tool of no parameters, which LangChain's agents
/// give a text all the same (`None`).
fn text_arguments(spec: &ToolSpec, text: &Value) -> Result<Map<String, Value>, String> {
    let mut required = spec.params.iter().filter(|param| param.required);
    let param = match (required.next(), required.next(), spec.params.as_slice()) {
        (Some(only), None, _) => only,
        (None, _, []) => return Ok(Map::new()),
        (None, _, [only]) => only,
        _ => {
            let names: Vec<String> =
                spec.params.iter().map(|param| format!("`{}` ({})", param.name, param.ty.as_str())).collect();
            return Err(format!(
                "`{}` takes its arguments as a JSON object of {}, not as one text ({})",
                spec.name,
                names.join(", "),
                describe(text)
            ));
        }
    };
    Ok(Map::from_iter([(param.name.clone(), text.clone())]))
}

/// Whether `value` is null for a parameter of type `ty`: JSON `null`, or,
/// but for a string (whose text is kept exactly), `null` or Python's
/// `None` written as text, as XML-style families write it. A null
/// parameter is an absent one, but for a json parameter (what a schema
/// typed `null`, or not typed, becomes), which keeps it as the engines do.
fn is_null(value: &Value, ty: ParamType) -> bool {
    match value {
        _ if ty == ParamType::Json => false,
        Value::Null => true,
        Value::String(text) => ty != ParamType::String && matches!(text.trim(), "null" | "None"),
        _ => false,
    }
}

/// `value` as type `ty`, or `None` when it cannot be.
pub fn coerce(value: &Value, ty: ParamType) -> Option<Value> {
    match (ty, value) {
        (ParamType::String, Value::String(_)) => Some(value.clone()),
        (ParamType::String, Value::Number(_) | Value::Bool(_)) => Some(Value::String(value.to_string())),
        // An XML-style value typed without the declaration: its text back.
        (ParamType::String, Value::Array(_) | Value::Object(_)) => Some(Value::String(markup_value::text(value))),
        (ParamType::String, Value::Null) => None,
        (ParamType::Integer, Value::Number(n)) => integer(n),
        (ParamType::Integer, Value::String(s)) => integer(&number(s)?),
        (ParamType::Number, Value::Number(_)) => Some(value.clone()),
        (ParamType::Number, Value::String(s)) => number(s).map(Value::Number),
        (ParamType::Boolean, Value::Bool(_)) => Some(value.clone()),
        (ParamType::Boolean, Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => Some(Value::Bool(true)),
            "false" | "no" | "0" => Some(Value::Bool(false)),
            _ => None,
        },
        (ParamType::Boolean, Value::Number(n)) => match n.as_i64() {
            Some(1) => Some(Value::Bool(true)),
            Some(0) => Some(Value::Bool(false)),
            _ => None,
        },
        (ParamType::Json, Value::String(s)) => Some(json_text(s).unwrap_or_else(|| value.clone())),
        (ParamType::Json, _) => Some(value.clone()),
        _ => None,
    }
}

/// The JSON value `text` writes: as it stands, or escaped as inside a JSON
/// string (`[{\"id\": 1}]`, as GLM 4.7 writes an array in its markup at
/// times).
fn json_text(text: &str) -> Option<Value> {
    if let Ok((value, _)) = lenient_json::parse(text) {
        return Some(value);
    }
    let trimmed = text.trim();
    if !(trimmed.starts_with(['[', '{']) && trimmed.contains("\\\"")) {
        return None;
    }
    // Line breaks between its items are white space once it is unescaped.
    let quoted = format!("\"{}\"", trimmed.replace('\n', "\\n").replace('\r', "\\r").replace('\t', "\\t"));
    let unescaped: String = serde_json::from_str(&quoted).ok()?;
    lenient_json::parse(&unescaped).ok().map(|(value, _)| value)
}

/// 2^53, the largest magnitude below which every integer is a float: past
/// it, a whole float may not be the integer that was written.
const MAX_EXACT_FLOAT_INTEGER: f64 = 9_007_199_254_740_992.0;

/// Number text, trimmed: an integer that fits i64 or u64 exactly, anything
/// else as a float; `None` unless it is a finite number.
fn number(text: &str) -> Option<Number> {
    let text = text.trim();
    if let Ok(i) = text.parse::<i64>() {
        return Some(i.into());
    }
    if let Ok(u) = text.parse::<u64>() {
        return Some(u.into());
    }
    Number::from_f64(text.parse().ok()?)
}

/// `n` as an integer: as it is when it is one, or a whole float that is
/// exactly an integer.
fn integer(n: &Number) -> Option<Value> {
    if n.is_i64() || n.is_u64() {
        return Some(Value::Number(n.clone()));
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0 && f.abs() <= MAX_EXACT_FLOAT_INTEGER).then(|| Value::from(f as i64))
}

fn article(ty: ParamType) -> &'static str {
    match ty {
        ParamType::String => "a string",
        ParamType::Integer => "an integer",
        ParamType::Number => "a number",
        ParamType::Boolean => "true or false",
        ParamType::Json => "JSON",
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::String(s) if s.chars().count() <= 40 => format!("the string {s:?}"),
        Value::String(_) => "a long string".into(),
        Value::Number(n) => format!("the number {n}"),
        Value::Bool(b) => format!("{b}"),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
        Value::Null => "null".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{ParamSpec, Permission};
    use serde_json::json;

    fn spec() -> ToolSpec {
        let param = |name: &str, ty, required| ParamSpec { name: name.into(), ty, description: format!("the {name}"), required };
        ToolSpec {
            name: "search".into(),
            plugin: "p".into(),
            description: String::new(),
            params: vec![
                param("query", ParamType::String, true),
                param("limit", ParamType::Integer, false),
                param("ratio", ParamType::Number, false),
                param("exact", ParamType::Boolean, false),
                param("filter", ParamType::Json, false),
            ],
            permission: Permission::Public,
            declared_permission: Permission::Public,
            result_approval: false,
            agent_callable: true,
            distributed_exposed: false,
            tags: vec![],
            example: None,
            reach: crate::manifest::Reach::Compute,
        }
    }

    fn run(name: &str, args: Value) -> Result<Value, String> {
        let spec = spec();
        let call = ToolCall::new("1", name, args.as_object().unwrap().clone());
        check(&call, &[&spec]).map(|c| Value::Object(c.args)).map_err(|e| e.message)
    }

    #[test]
    fn strings_are_coerced_to_declared_types() {
        assert_eq!(
            run("search", json!({"query": "q", "limit": "42", "ratio": "0.5", "exact": "true", "filter": "{\"a\": [1]}"})),
            Ok(json!({"query": "q", "limit": 42, "ratio": 0.5, "exact": true, "filter": {"a": [1]}}))
        );
        assert_eq!(run("search", json!({"query": 7, "limit": 3.0})), Ok(json!({"query": "7", "limit": 3})));
    }

    #[test]
    fn json_written_escaped_as_in_a_string_is_decoded() {
        // GLM 4.7 writes an array argument so inside its markup at times.
        let escaped = r#"[{\"id\": \"1\", \"task\": \"a \\\"quoted\\\" word\"}]"#;
        assert_eq!(
            run("search", json!({"query": "q", "filter": escaped})),
            Ok(json!({"query": "q", "filter": [{"id": "1", "task": "a \"quoted\" word"}]}))
        );
        let spread = "{\\\"lang\\\": \\\"en\\\",\n \\\"year\\\": 2020}";
        assert_eq!(
            run("search", json!({"query": "q", "filter": spread})),
            Ok(json!({"query": "q", "filter": {"lang": "en", "year": 2020}}))
        );
        // Text that is no JSON either way stays text, for the tool to judge.
        assert_eq!(run("search", json!({"query": "q", "filter": "not json"})), Ok(json!({"query": "q", "filter": "not json"})));
    }

    #[test]
    fn null_written_as_text_is_absent_but_for_a_string() {
        assert_eq!(run("search", json!({"query": "null", "limit": "null", "exact": " None "})), Ok(json!({"query": "null"})));
        // vLLM tests/tool_parsers/test_minimax_m2_tool_parser.py: a nullable
        // parameter given `null` is null in the arguments, not left out.
        assert_eq!(run("search", json!({"query": "q", "filter": "null"})), Ok(json!({"query": "q", "filter": null})));
        assert_eq!(run("search", json!({"query": "q", "filter": null})), Ok(json!({"query": "q", "filter": null})));
        // An object or array typed before the declaration said string: its
        // text, as the model wrote it (vLLM's qwen3coder test_..._string_type).
        assert_eq!(run("search", json!({"query": {"key": "value"}})), Ok(json!({"query": "{\"key\": \"value\"}"})));
        assert_eq!(run("search", json!({"query": "None"})), Ok(json!({"query": "None"})));
        assert_eq!(
            run("search", json!({"limit": "null"})).unwrap_err(),
            "`search` needs the parameter `query` (string): the query"
        );
    }

    #[test]
    fn a_value_that_cannot_be_coerced_names_param_and_type() {
        assert_eq!(
            run("search", json!({"query": "q", "limit": "many"})),
            Err("the parameter `limit` of `search` must be an integer, got the string \"many\"".into())
        );
        assert_eq!(
            run("search", json!({"query": "q", "exact": "perhaps"})),
            Err("the parameter `exact` of `search` must be true or false, got the string \"perhaps\"".into())
        );
    }

    #[test]
    fn integers_of_any_magnitude_json_carries_are_kept_exactly() {
        let integer = |value: Value| coerce(&value, ParamType::Integer);
        for exact in [json!(-10000000000000000_i64), json!(i64::MIN), json!(i64::MAX), json!(u64::MAX)] {
            assert_eq!(integer(exact.clone()), Some(exact.clone()), "{exact}");
            assert_eq!(integer(json!(exact.to_string())), Some(exact.clone()), "{exact} as a string");
        }
        assert_eq!(integer(json!(" -10000000000000000 ")), Some(json!(-10000000000000000_i64)));
        assert_eq!(integer(json!(-4096.0)), Some(json!(-4096)), "a whole float is an integer");
        assert_eq!(integer(json!("1e3")), Some(json!(1000)));
        assert_eq!(integer(json!(1.0e16)), None, "a float past 2^53 may not be the integer that was written");
        assert_eq!(integer(json!("18446744073709551616")), None, "past u64, JSON carries no integer");
        assert_eq!(integer(json!(0.5)), None);
    }

    #[test]
    fn numbers_written_as_strings_keep_their_integer_digits() {
        let number = |value: Value| coerce(&value, ParamType::Number);
        assert_eq!(number(json!("-10000000000000000")), Some(json!(-10000000000000000_i64)));
        assert_eq!(number(json!("18446744073709551615")), Some(json!(u64::MAX)));
        assert_eq!(number(json!(" 2.5e300 ")), Some(json!(2.5e300)));
        assert_eq!(number(json!(-10000000000000000_i64)), Some(json!(-10000000000000000_i64)));
        assert_eq!(number(json!("1e400")), None, "JSON carries no infinity");
        assert_eq!(number(json!("NaN")), None);
    }

    #[test]
    fn a_text_input_is_the_value_of_the_one_parameter_it_can_be_for() {
        let with_params = |params: Vec<ParamSpec>| ToolSpec { params, ..spec() };
        let param = |name: &str, ty, required| ParamSpec { name: name.into(), ty, description: String::new(), required };
        let text = |text: &str| Map::from_iter([(TEXT_INPUT_KEY.to_owned(), json!(text))]);
        let run_text = |spec: &ToolSpec, input: &str| {
            let call = ToolCall::with_map("1", "search", Map::new()).with_reserved(text(input));
            check(&call, &[spec]).map(|checked| (Value::Object(checked.args), checked.reserved)).map_err(|e| e.message)
        };
        // The one required parameter, among optional ones; its reserved
        // key taken out once it is.
        assert_eq!(run_text(&spec(), "rust wasm"), Ok((json!({"query": "rust wasm"}), Map::new())));
        // The only parameter, coerced to its type.
        let limit = with_params(vec![param("limit", ParamType::Integer, false)]);
        assert_eq!(run_text(&limit, "42"), Ok((json!({"limit": 42}), Map::new())));
        assert_eq!(
            run_text(&limit, "many"),
            Err("the parameter `limit` of `search` must be an integer, got the string \"many\"".into())
        );
        // A tool of no parameters runs without it.
        assert_eq!(run_text(&with_params(vec![]), "None"), Ok((json!({}), Map::new())));
        // Two it could be for: the model is told the object's keys.
        let two = with_params(vec![param("path", ParamType::String, true), param("content", ParamType::String, true)]);
        let optional = with_params(vec![param("path", ParamType::String, false), param("depth", ParamType::Integer, false)]);
        for spec in [&two, &optional] {
            let error = run_text(spec, "/tmp/x").expect_err("no one parameter");
            assert!(error.starts_with("`search` takes its arguments as a JSON object of `path` (string), "), "{error}");
            assert!(error.ends_with("not as one text (the string \"/tmp/x\")"), "{error}");
        }
        // Named arguments beside it win: the reserved key is no argument.
        let both = ToolCall::with_map("1", "search", Map::from_iter([("query".to_owned(), json!("a"))])).with_reserved(text("b"));
        assert_eq!(check(&both, &[&spec()]).map(|c| Value::Object(c.args)), Ok(json!({"query": "a"})));
    }

    #[test]
    fn a_missing_required_param_is_named() {
        assert_eq!(run("search", json!({"limit": 1})), Err("`search` needs the parameter `query` (string): the query".into()));
    }

    #[test]
    fn an_unknown_tool_names_the_closest() {
        assert_eq!(run("serch", json!({})), Err("no tool named `serch` is loaded; did you mean `search`?".into()));
    }
}
