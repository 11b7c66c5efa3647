//! What an MCP client sees of the tools and their results: a registry
//! tool as an MCP `Tool` (schema, title, annotations by permission level),
//! and a [`ToolOutcome`] as a `CallToolResult`.

use crate::manifest::{Permission, Reach, ToolSpec};
use crate::outcome::{Status, ToolOutcome};
use crate::protocol::native::parameters_schema;
use crate::protocol::result_text;
use rmcp::model::{CallToolResult, ContentBlock, MetaObject, Tool, ToolAnnotations};
use serde_json::{Value, json};
use std::sync::Arc;

/// `tool` as MCP's `tools/list` gives it: its params as the `inputSchema`,
/// a title, what its level means as annotations, and toolhost's own facts
/// (plugin, level and the plugin's own, result approval) under `_meta`.
/// The level is the one the host holds the tool to, so the hints never
/// call a tool read-only that its grants let write.
pub(super) fn mcp_tool(tool: &ToolSpec, plugin_label: &str) -> Tool {
    let Value::Object(schema) = parameters_schema(tool) else { unreachable!("a parameters schema is an object") };
    let title = title(&tool.name);
    let annotations = ToolAnnotations::with_title(title.clone())
        .read_only(tool.permission == Permission::Public && tool.reach != Reach::Write)
        .destructive(tool.permission == Permission::Sensitive)
        .open_world(tool.reach != Reach::Compute);
    let meta = json!({
        "toolhost/plugin": plugin_label,
        "toolhost/permission": tool.permission.as_str(),
        "toolhost/declaredPermission": tool.declared_permission.as_str(),
        "toolhost/resultApproval": tool.result_approval,
    });
    let Value::Object(meta) = meta else { unreachable!("an object literal") };
    Tool::new(tool.name.clone(), tool.description.clone(), Arc::new(schema))
        .with_title(title)
        .with_annotations(annotations)
        .with_meta(MetaObject(meta))
}

/// `read_file` → `Read file`: a title for people, from the tool's name.
fn title(name: &str) -> String {
    let words = name.replace(['_', '-'], " ");
    let mut chars = words.trim().chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => name.to_owned(),
    }
}

/// The result of `tools/call`: the text the model reads of the outcome
/// (the output, or the status and what went wrong, naming any limit hit),
/// `isError` unless it succeeded, and the output as structured content
/// when it is a JSON object. The structured failure (which limit, its
/// value, the plugin) rides in `_meta` for clients that show it.
pub(super) fn call_result(outcome: &ToolOutcome) -> CallToolResult {
    let text = vec![ContentBlock::text(result_text(outcome))];
    if outcome.status == Status::Success {
        let mut result = CallToolResult::success(text);
        if let Ok(Value::Object(object)) = serde_json::from_str(&outcome.output) {
            result.structured_content = Some(Value::Object(object));
        }
        return result;
    }
    let mut meta = serde_json::Map::new();
    meta.insert("toolhost/status".to_owned(), Value::String(outcome.status.as_str().to_owned()));
    if let Some(failure) = outcome.failure.as_ref().and_then(|failure| serde_json::to_value(failure).ok()) {
        meta.insert("toolhost/failure".to_owned(), failure);
    }
    CallToolResult::error(text).with_meta(Some(MetaObject(meta)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{ParamSpec, ParamType};

    #[test]
    fn levels_become_annotations_and_params_the_schema() {
        let mut tool = ToolSpec::new("write_file", "files", "Write a file.");
        tool.permission = Permission::Sensitive;
        tool.reach = Reach::Write;
        tool.params.push(ParamSpec { name: "path".into(), ty: ParamType::String, description: "Where.".into(), required: true });
        let listed = serde_json::to_value(mcp_tool(&tool, "files@1.0.0")).unwrap();
        assert_eq!(listed["title"], "Write file");
        assert_eq!(listed["annotations"]["destructiveHint"], true);
        assert_eq!(listed["annotations"]["readOnlyHint"], false);
        assert_eq!(listed["inputSchema"]["properties"]["path"], json!({"type": "string", "description": "Where."}));
        assert_eq!(listed["inputSchema"]["required"], json!(["path"]));
        assert_eq!(listed["_meta"]["toolhost/permission"], "sensitive");
        assert_eq!(listed["_meta"]["toolhost/declaredPermission"], "public", "the plugin's own beside it");
        let mut public = ToolSpec::new("calculate", "calculator", "");
        public.permission = Permission::Public;
        let listed = serde_json::to_value(mcp_tool(&public, "calculator@1.0.0")).unwrap();
        assert_eq!(
            (listed["annotations"]["readOnlyHint"].clone(), listed["annotations"]["destructiveHint"].clone()),
            (json!(true), json!(false))
        );
    }

    #[test]
    fn outcomes_become_results_errors_and_structured_content() {
        let mut ok = ToolOutcome::without_running("1", "t", Status::Success, String::new());
        ok.output = r#"{"sum": 3}"#.into();
        let result = serde_json::to_value(call_result(&ok)).unwrap();
        assert_eq!(result["structuredContent"], json!({"sum": 3}));
        assert!(result.get("isError").is_none_or(|e| e == false), "{result}");
        ok.output = "42".into();
        assert!(
            serde_json::to_value(call_result(&ok)).unwrap().get("structuredContent").is_none(),
            "only objects are structured"
        );
        let denied = ToolOutcome::without_running("2", "t", Status::Denied, "nobody approved".into());
        let result = serde_json::to_value(call_result(&denied)).unwrap();
        assert_eq!(result["isError"], true);
        assert_eq!(result["content"][0]["text"], "denied: nobody approved");
        assert_eq!(result["_meta"]["toolhost/status"], "denied");
    }
}
