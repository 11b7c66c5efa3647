//! `{{name}}`: a toolhost tool plugin.

use toolhost_sdk::prelude::*;

struct Tools;

impl Plugin for Tools {
    fn manifest() -> Manifest {
        Manifest::new("{{name}}", env!("CARGO_PKG_VERSION"), "Count words in text")
            .tool(Tool::new("{{name}}", "Count the words in a text")
                .param("text", Type::String, "the text to count", Required)
                .agent_callable(true)
                .example(json!({ "text": "one two three" })))
    }

    fn invoke(tool: &str, args: Args) -> Result<Output, ToolError> {
        match tool {
            "{{name}}" => {
                let text: String = args.get("text")?;
                Ok(json!({ "words": text.split_whitespace().count() }).into())
            }
            other => Err(ToolError::unknown_tool(other)),
        }
    }
}

toolhost_sdk::export_plugin!(Tools);
