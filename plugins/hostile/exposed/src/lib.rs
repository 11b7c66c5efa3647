//! `exposed`: tools offered to a VCP server, for the node tests: one with a
//! parameter of every type, one that spins until stopped, one that waits,
//! one that needs approval, and one that is loaded but not exposed.

use toolhost_sdk::Value;
use toolhost_sdk::prelude::*;

struct Exposed;

impl Plugin for Exposed {
    fn manifest() -> Manifest {
        Manifest::new("exposed", env!("CARGO_PKG_VERSION"), "Tools a VCP node test offers to its server")
            .tool(
                Tool::new("typed_echo", "Return every argument with the JSON type it arrived as.")
                    .param("text", Type::String, "any text", Required)
                    .param("count", Type::Integer, "a whole number", Required)
                    .param("ratio", Type::Number, "any number", Required)
                    .param("flag", Type::Boolean, "true or false", Required)
                    .param("items", Type::Json, "any JSON value", Required)
                    .distributed_exposed(true)
                    .example(json!({ "text": "hi", "count": 2, "ratio": 0.5, "flag": true, "items": [1, 2] })),
            )
            .tool(Tool::new("exposed_spin", "Loop until stopped.").distributed_exposed(true))
            .tool(
                Tool::new("exposed_wait", "Wait, as a tool waiting on I/O does.")
                    .param("ms", Type::Integer, "how long", Required)
                    .distributed_exposed(true),
            )
            .tool(
                Tool::new("moderate_echo", "Echo text; needs approval once.")
                    .param("text", Type::String, "any text", Required)
                    .permission(Permission::Moderate)
                    .distributed_exposed(true),
            )
            .tool(Tool::new("unexposed_echo", "Loaded, but never offered to a VCP server.").param(
                "text",
                Type::String,
                "any text",
                Required,
            ))
    }

    fn invoke(tool: &str, args: Args) -> Result<Output, ToolError> {
        match tool {
            "typed_echo" => {
                let typed = args
                    .as_map()
                    .iter()
                    .map(|(key, value)| (key.clone(), json!({ "type": kind(value), "value": value })))
                    .collect();
                Ok(Value::Object(typed).into())
            }
            "exposed_spin" => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "exposed_wait" => {
                std::thread::sleep(std::time::Duration::from_millis(args.get("ms")?));
                Ok("waited".into())
            }
            "moderate_echo" | "unexposed_echo" => Ok(args.get::<String>("text")?.into()),
            other => Err(ToolError::unknown_tool(other)),
        }
    }
}

/// The JSON type of `value`, as a word.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

toolhost_sdk::export_plugin!(Exposed);
