//! The console's panels that work with the registry: the tools and an
//! agent's toggles (the console's own, or a door's), the prompt preview, the parser, the Run form, and the
//! approval desk's answers.

use super::Shared;
use super::desk::Verdict;
use super::json_body::JsonBody;
use crate::agent::LiveSettings;
use crate::call::ToolCall;
use crate::manifest::ToolSpec;
use crate::parse_report::ParseReport;
use crate::pipeline::Turn;
use crate::protocol::ProtocolId;
use crate::registry::LoadedPlugin;
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// A refusal the page shows as it is.
pub(super) fn refuse(status: StatusCode, message: impl std::fmt::Display) -> Response {
    (status, Json(json!({ "error": message.to_string() }))).into_response()
}

/// The live event stream.
pub(super) async fn events(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    shared.feed.stream()
}

/// Which agent a panel shows: `?agent=NAME`, else the console's own.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct Which {
    agent: Option<String>,
}

impl Which {
    /// The agent asked for, with its name; why not, naming the agents
    /// there are, when it is not here.
    fn settings(&self, shared: &Shared) -> Result<(String, LiveSettings), String> {
        shared.agents.named(self.agent.as_deref())
    }
}

/// Who the console works as (or the agent asked for), what it serves, and
/// the agents the page can switch to.
pub(super) async fn state(State(shared): State<Arc<Shared>>, Query(which): Query<Which>) -> Response {
    let (agent, settings) = match which.settings(&shared) {
        Ok(found) => found,
        Err(why) => return refuse(StatusCode::NOT_FOUND, why),
    };
    let config = settings.get();
    let catalog = shared.pipeline.executor().registry().catalog();
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "agent": agent,
        "agents": shared.agents.names(),
        "enabled": config.enabled,
        "protocol": config.protocol,
        "default_tool_enabled": config.default_tool_enabled,
        "tool_toggles": config.tool_toggles,
        "plugins": catalog.plugins.iter().map(|p| p.label()).collect::<Vec<_>>(),
        "chat": shared.chat.describe(),
    }))
    .into_response()
}

/// Every loaded tool, with what it asks for and what it was granted, and
/// whether the agent is offered it.
pub(super) async fn tools(State(shared): State<Arc<Shared>>, Query(which): Query<Which>) -> Response {
    let config = match which.settings(&shared) {
        Ok((_, settings)) => settings.get(),
        Err(why) => return refuse(StatusCode::NOT_FOUND, why),
    };
    let catalog = shared.pipeline.executor().registry().catalog();
    let tools: Vec<Value> = catalog
        .tools()
        .map(|(plugin, spec)| {
            json!({
                "name": spec.name,
                "plugin": plugin.name(),
                "version": plugin.manifest.version,
                "description": spec.description,
                "level": spec.permission.as_str(),
                "result_approval": spec.result_approval,
                "agent_callable": spec.agent_callable,
                "distributed_exposed": spec.distributed_exposed,
                "tags": spec.tags,
                "params": spec.params,
                "example": spec.example,
                "offered": config.enabled && config.offers(spec),
                "toggle": config.tool_toggles.get(&spec.name),
                "capabilities": capabilities(plugin),
            })
        })
        .collect();
    Json(json!({ "tools": tools })).into_response()
}

/// Each capability the plugin asks for, granted (and how) or withheld.
fn capabilities(plugin: &LoadedPlugin) -> Value {
    json!(plugin.grants.asked(&plugin.manifest.capabilities))
}

/// A change to an agent's toggles: one tool's, or the default.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Toggle {
    /// The agent; absent: the console's own.
    agent: Option<String>,
    /// The tool; absent: `default_tool_enabled`.
    tool: Option<String>,
    /// On or off; `null` for a tool: back to the default.
    enabled: Option<bool>,
}

/// Turn a tool (or the default) on or off for an agent, at once: for a
/// door's agent, the door's next list and call follow it.
pub(super) async fn toggle(State(shared): State<Arc<Shared>>, JsonBody(toggle): JsonBody<Toggle>) -> Response {
    let which = Which { agent: toggle.agent };
    let settings = match which.settings(&shared) {
        Ok((_, settings)) => settings,
        Err(why) => return refuse(StatusCode::NOT_FOUND, why),
    };
    let catalog = shared.pipeline.executor().registry().catalog();
    match (&toggle.tool, toggle.enabled) {
        (Some(tool), _) if catalog.tool(tool).is_none() => {
            let names: Vec<&str> = catalog.tools().map(|(_, t)| t.name.as_str()).collect();
            return refuse(StatusCode::NOT_FOUND, crate::suggest::unknown_tool(tool, &names));
        }
        (Some(tool), Some(on)) => settings.update(|config| config.tool_toggles.insert(tool.clone(), on) != Some(on)),
        (Some(tool), None) => settings.update(|config| config.tool_toggles.remove(tool).is_some()),
        (None, Some(on)) => settings.update(|config| std::mem::replace(&mut config.default_tool_enabled, on) != on),
        (None, None) => return refuse(StatusCode::BAD_REQUEST, "`enabled` is required for the default"),
    }
    shared.feed.publish("toggles", &json!({}));
    state(State(shared), Query(which)).await
}

/// The agent's system prompt as each protocol renders it, with its size.
pub(super) async fn prompt(State(shared): State<Arc<Shared>>, Query(which): Query<Which>) -> Response {
    let (agent, config) = match which.settings(&shared) {
        Ok((agent, settings)) => (agent, settings.get()),
        Err(why) => return refuse(StatusCode::NOT_FOUND, why),
    };
    let template = match config.system_prompt_template() {
        Ok(template) => template,
        Err(error) => return refuse(StatusCode::INTERNAL_SERVER_ERROR, format!("the agent's system prompt file: {error}")),
    };
    let catalog = shared.pipeline.executor().registry().catalog();
    let offered: Vec<&ToolSpec> = crate::discovery::visible_tools(&catalog, &config);
    let prompts: Vec<Value> = ProtocolId::ALL
        .into_iter()
        .filter(|&protocol| protocol != ProtocolId::Auto)
        .map(|protocol| {
            let rendered = shared.prompts.render(&catalog, &agent, &config, protocol, &template);
            json!({
                "protocol": protocol,
                "agent_default": protocol == config.protocol,
                "text": rendered.text,
                "tokens": rendered.tokens(),
                "bytes": rendered.text.len(),
            })
        })
        .collect();
    Json(json!({ "tools": offered.iter().map(|t| &t.name).collect::<Vec<_>>(), "prompts": prompts })).into_response()
}

/// A reply to parse.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ParseRequest {
    text: String,
    #[serde(default = "auto")]
    protocol: ProtocolId,
}

fn auto() -> ProtocolId {
    ProtocolId::Auto
}

/// The calls, prose and warnings in a pasted reply.
pub(super) async fn parse(State(shared): State<Arc<Shared>>, JsonBody(request): JsonBody<ParseRequest>) -> Json<ParseReport> {
    let catalog = shared.pipeline.executor().registry().catalog();
    let specs: Vec<&ToolSpec> = catalog.tools().map(|(_, t)| t).collect();
    Json(ParseReport::of(&request.text, request.protocol, &specs, &[]))
}

/// One call to run from the Run form.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RunRequest {
    tool: String,
    #[serde(default)]
    arguments: Map<String, Value>,
}

/// Run one call through the pipeline as a direct call (as `toolhost call`
/// does: any loaded tool, whatever the agent's toggles): checked, run in a
/// fresh instance, its result approved at the desk if its tool asks for
/// that. The person who pressed Run chose the call, so it is not asked
/// again (deny rules still hold).
pub(super) async fn run(State(shared): State<Arc<Shared>>, JsonBody(request): JsonBody<RunRequest>) -> Json<Value> {
    let mut turn = Turn::direct(ProtocolId::JsonBlock);
    turn.chosen_by_person = true;
    turn.cancel = shared.closing.child_token();
    let call = ToolCall::with_map("console-run", &request.tool, request.arguments);
    let result = shared.pipeline.run(&turn, vec![call]).await;
    let outcome = &result.outcomes[0];
    let output_json = serde_json::from_str::<Value>(&outcome.output).ok().filter(|v| v.is_object() || v.is_array());
    Json(json!({ "outcome": outcome, "output_json": output_json, "summary": result.summary() }))
}

/// What waits at the desk now.
pub(super) async fn pending(State(shared): State<Arc<Shared>>) -> Json<Value> {
    Json(json!({ "pending": shared.desk.waiting() }))
}

/// A person's decision on a pending request.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Decision {
    /// allow | always | deny for calls; pass | reject for a result.
    verdict: Verdict,
    /// One call of the batch; absent: every call not yet decided.
    index: Option<usize>,
    /// Why (deny, reject): the model is told.
    reason: Option<String>,
}

pub(super) async fn decide(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<u64>,
    JsonBody(decision): JsonBody<Decision>,
) -> Response {
    match shared.desk.decide(id, decision.index, decision.verdict, decision.reason) {
        Ok(()) => Json(json!({ "ok": true })).into_response(),
        Err(error @ super::desk::DeskError::Gone(_)) => refuse(StatusCode::GONE, error),
        Err(error) => refuse(StatusCode::BAD_REQUEST, error),
    }
}
