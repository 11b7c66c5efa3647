//! The JSON frames of the distributed-node protocol (`VCP-PROTOCOL.md`
//! §4–§5): what the server sends, read leniently, and what the node sends,
//! in the shapes that keep the model's view clean.

use super::config::{SERVER_TIMEOUT_MARGIN, VcpConfig};
use crate::agent::ToolCallConfig;
use crate::approval::Approvals;
use crate::manifest::ToolSpec;
use crate::outcome::{Status, ToolOutcome};
use crate::protocol::vcp::{VCP, render_tool, request_block};
use crate::protocol::{Protocol, example_arguments, result_text};
use crate::registry::Catalog;
use serde_json::{Map, Value, json};
use toolhost_support::json_text;

/// The prefix of the static placeholder holding the node's tool
/// descriptions; the node name follows (`VCPToolhost_laptop`).
const PLACEHOLDER_PREFIX: &str = "VCPToolhost_";

/// A frame from the server, as far as the node acts on it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Incoming {
    /// `connection_ack`: the connection's ids.
    Ack { server_id: Option<String>, client_id: Option<String> },
    /// `execute_tool`.
    Execute(ExecuteTool),
    /// `execute_tool` that cannot be run as sent; answered with `why` when
    /// it has a request id.
    Malformed { request_id: Option<String>, why: String },
    /// `cancel_tool`.
    Cancel { request_id: String },
    /// Anything else: invalid JSON, unknown types. Ignored, as the server
    /// ignores what it does not know; the text says what it was.
    Ignored(String),
}

/// One `execute_tool`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ExecuteTool {
    /// Answered with the result.
    pub request_id: String,
    /// The tool, as the server names it.
    pub tool: String,
    /// The arguments: strings, and the arrays the server adds
    /// (`river_context`, `vref_files`).
    pub args: Map<String, Value>,
}

impl Incoming {
    /// The frame `text` holds; a lone surrogate escaped in it reads as
    /// U+FFFD ([`json_text`]).
    pub(super) fn parse(text: &[u8]) -> Incoming {
        let Ok(Value::Object(mut frame)) = serde_json::from_slice::<Value>(&json_text::lone_surrogates_replaced(text)) else {
            return Incoming::Ignored("a frame that is not a JSON object".into());
        };
        let kind = frame.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
        let mut data = match frame.remove("data") {
            Some(Value::Object(data)) => data,
            _ => Map::new(),
        };
        let mut text_of = |key: &str| match data.remove(key) {
            Some(Value::String(s)) => Some(s),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        match kind.as_str() {
            "connection_ack" => Incoming::Ack { server_id: text_of("serverId"), client_id: text_of("clientId") },
            "cancel_tool" => match text_of("requestId") {
                Some(request_id) => Incoming::Cancel { request_id },
                None => Incoming::Ignored("cancel_tool without a requestId".into()),
            },
            "execute_tool" => {
                let request_id = text_of("requestId");
                let tool = text_of("toolName");
                let args = data.remove("toolArgs");
                match (request_id, tool, args) {
                    (None, ..) => Incoming::Malformed { request_id: None, why: "execute_tool without a requestId".into() },
                    (Some(request_id), None, _) => {
                        Incoming::Malformed { request_id: Some(request_id), why: "execute_tool without a toolName".into() }
                    }
                    (Some(request_id), Some(tool), None | Some(Value::Null)) => {
                        Incoming::Execute(ExecuteTool { request_id, tool, args: Map::new() })
                    }
                    (Some(request_id), Some(tool), Some(Value::Object(args))) => {
                        Incoming::Execute(ExecuteTool { request_id, tool, args })
                    }
                    (Some(request_id), Some(_), Some(_)) => {
                        Incoming::Malformed { request_id: Some(request_id), why: "toolArgs must be a JSON object".into() }
                    }
                }
            }
            "" => Incoming::Ignored("a frame without a type".into()),
            other => Incoming::Ignored(format!("a `{other}` frame")),
        }
    }
}

/// What the node registers on a connection.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Registration {
    /// The tools, in catalog order.
    pub tools: Vec<String>,
    /// `register_tools`.
    pub register: Value,
    /// `update_static_placeholders`.
    pub placeholders: Value,
    /// Names in `[vcp] tools` that no loaded tool exposes, with why.
    pub unmatched: Vec<String>,
}

impl Registration {
    /// The exposed tools of `catalog` (as `exposure` says, the same rule
    /// calls are checked by), each as a VCP manifest whose timeout covers
    /// the questions `approvals` may put to a person about a call of it by
    /// `agent` (see [`VcpConfig::approval_window`]).
    pub(super) fn of(
        catalog: &Catalog,
        exposure: &ToolCallConfig,
        config: &VcpConfig,
        approvals: &Approvals,
        agent: &str,
    ) -> Registration {
        let exposed: Vec<_> = catalog.tools().filter(|(_, spec)| exposure.exposes(spec)).collect();
        let manifests: Vec<Value> = exposed
            .iter()
            .map(|(plugin, spec)| {
                let questions =
                    u32::from(approvals.may_ask(agent, exposure.require_confirmation, spec)) + u32::from(spec.result_approval);
                let timeout = plugin.limits.timeout + config.approval_window * questions + SERVER_TIMEOUT_MARGIN;
                json!({
                    "name": spec.name,
                    "displayName": spec.name,
                    "version": plugin.manifest.version.to_string(),
                    "description": spec.description,
                    "pluginType": "synchronous",
                    "entryPoint": { "type": "toolhost", "plugin": plugin.label() },
                    "communication": { "protocol": "toolhost-node", "timeout": timeout.as_millis() as u64 },
                    "capabilities": { "invocationCommands": [invocation(spec)] },
                })
            })
            .collect();
        let specs: Vec<&ToolSpec> = exposed.iter().map(|(_, spec)| *spec).collect();
        let unmatched = config
            .tools
            .iter()
            .flatten()
            .filter(|name| !specs.iter().any(|spec| &spec.name == *name))
            .map(|name| match catalog.tool(name) {
                Some(_) => format!("`{name}` is in [vcp] tools but is not distributed-exposed: not offered"),
                None => format!("`{name}` is in [vcp] tools but no loaded plugin has it"),
            })
            .collect();
        Registration {
            tools: specs.iter().map(|spec| spec.name.clone()).collect(),
            register: json!({
                "type": "register_tools",
                "data": {
                    "serverName": config.node_name,
                    "tools": manifests,
                    "capabilities": { "cancelTool": true },
                },
            }),
            placeholders: json!({
                "type": "update_static_placeholders",
                "data": {
                    "serverName": config.node_name,
                    "placeholders": { placeholder_name(&config.node_name): VCP.render(&specs) },
                },
            }),
            unmatched,
        }
    }
}

/// One tool's invocation command: how the server tells a model to call it,
/// rendered by the VCP protocol (parameters, types, permission, an example
/// block).
fn invocation(spec: &ToolSpec) -> Value {
    json!({
        "commandIdentifier": spec.name,
        "command": spec.name,
        "description": render_tool(spec),
        "example": request_block(&spec.name, &example_arguments(spec)),
    })
}

/// `VCPToolhost_` and the node name, every character outside
/// `[A-Za-z0-9_]` replaced by `_`.
fn placeholder_name(node_name: &str) -> String {
    let name: String = node_name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    format!("{PLACEHOLDER_PREFIX}{name}")
}

/// `report_ip`: the address this node reaches the server from.
pub(super) fn report_ip(node_name: &str, local_ips: &[String]) -> Value {
    json!({
        "type": "report_ip",
        "data": { "serverName": node_name, "localIPs": local_ips, "publicIP": Value::Null },
    })
}

/// `tool_result` for `outcome`: a success as one text part in a `content`
/// array, which the server passes to the model as it is; anything else as
/// an error whose message names the status and what went wrong.
pub(super) fn tool_result(request_id: &str, outcome: &ToolOutcome) -> Value {
    if outcome.status == Status::Success {
        success(request_id, json!({ "content": [{ "type": "text", "text": outcome.output }] }))
    } else {
        error(request_id, &result_text(outcome))
    }
}

/// `tool_result` with `status: "success"` and `result`.
pub(super) fn success(request_id: &str, result: Value) -> Value {
    json!({ "type": "tool_result", "data": { "requestId": request_id, "status": "success", "result": result } })
}

/// `tool_result` with `status: "error"` and `message`.
pub(super) fn error(request_id: &str, message: &str) -> Value {
    json!({ "type": "tool_result", "data": { "requestId": request_id, "status": "error", "error": message } })
}

/// Whether `frame` (built here) is a success.
pub(super) fn is_success(frame: &Value) -> bool {
    frame["data"]["status"] == "success"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_frames_are_read_leniently() {
        let ack = br#"{"type":"connection_ack","message":"hi","data":{"serverId":"dist-7","clientId":"7"}}"#;
        assert_eq!(Incoming::parse(ack), Incoming::Ack { server_id: Some("dist-7".into()), client_id: Some("7".into()) });
        let call = br#"{"type":"execute_tool","data":{"requestId":"r1","toolName":"calculate","toolArgs":{"expression":"1+1","vref_files":["file:///a"]}}}"#;
        let Incoming::Execute(call) = Incoming::parse(call) else { panic!() };
        assert_eq!((call.request_id.as_str(), call.tool.as_str()), ("r1", "calculate"));
        assert_eq!(Value::Object(call.args), json!({"expression": "1+1", "vref_files": ["file:///a"]}));
        assert_eq!(
            Incoming::parse(br#"{"type":"execute_tool","data":{"requestId":"r2","toolName":"t","toolArgs":"x"}}"#),
            Incoming::Malformed { request_id: Some("r2".into()), why: "toolArgs must be a JSON object".into() }
        );
        assert_eq!(
            Incoming::parse(br#"{"type":"cancel_tool","data":{"requestId":"r1"}}"#),
            Incoming::Cancel { request_id: "r1".into() }
        );
        assert_eq!(Incoming::parse(b"not json"), Incoming::Ignored("a frame that is not a JSON object".into()));
        // A Node.js server's JSON.stringify of a string cut inside an emoji.
        let cut = br#"{"type":"execute_tool","data":{"requestId":"r3","toolName":"t","toolArgs":{"text":"a\ud83d"}}}"#;
        let Incoming::Execute(call) = Incoming::parse(cut) else { panic!("a lone surrogate lost the call") };
        assert_eq!(Value::Object(call.args), json!({"text": "a\u{fffd}"}));
        assert_eq!(Incoming::parse(br#"{"type":"heartbeat"}"#), Incoming::Ignored("a `heartbeat` frame".into()));
    }

    #[test]
    fn results_keep_the_models_view_clean() {
        let ok = ToolOutcome::without_running("r1", "calculate", Status::Success, r#"{"value":2}"#.into());
        assert_eq!(
            tool_result("r1", &ok),
            json!({"type":"tool_result","data":{"requestId":"r1","status":"success",
                   "result":{"content":[{"type":"text","text":"{\"value\":2}"}]}}})
        );
        let failed = ToolOutcome::without_running("r2", "spin", Status::OutOfFuel, "out of fuel after 1,000 units".into());
        assert_eq!(
            tool_result("r2", &failed),
            json!({"type":"tool_result","data":{"requestId":"r2","status":"error","error":"out-of-fuel: out of fuel after 1,000 units"}})
        );
        assert!(is_success(&tool_result("r1", &ok)) && !is_success(&tool_result("r2", &failed)));
    }

    #[test]
    fn placeholder_names_are_word_characters() {
        assert_eq!(placeholder_name("toolhost@my-laptop"), "VCPToolhost_toolhost_my_laptop");
    }
}
