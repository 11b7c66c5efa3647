//! The console's record panels: the remembered "allow always" decisions
//! (revoke one) and the audit log, newest first.

use super::Shared;
use super::json_body::JsonBody;
use super::workbench::refuse;
use crate::regular_file::open_regular_file;
use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// The most audit records one request returns.
const MAX_AUDIT_RECORDS: usize = 1000;
/// The most of the audit log read: its end, where the newest records are.
const AUDIT_TAIL_BYTES: u64 = 8 * 1024 * 1024;

/// The remembered decisions.
pub(super) async fn remembered(State(shared): State<Arc<Shared>>) -> Json<Value> {
    let memory = shared.pipeline.approvals().memory();
    Json(json!({ "file": memory.path(), "remembered": memory.entries() }))
}

/// Which remembered decisions to forget.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Revoke {
    tool: String,
    /// Only this agent's; absent: every agent's.
    agent: Option<String>,
}

pub(super) async fn revoke(State(shared): State<Arc<Shared>>, JsonBody(revoke): JsonBody<Revoke>) -> Response {
    let pipeline = shared.pipeline.clone();
    let forgot =
        tokio::task::spawn_blocking(move || pipeline.approvals().memory().revoke(&revoke.tool, revoke.agent.as_deref())).await;
    match forgot {
        Ok(Ok(count)) => {
            shared.feed.publish("approvals", &json!({ "revoked": count }));
            Json(json!({ "revoked": count })).into_response()
        }
        Ok(Err(error)) => refuse(StatusCode::INTERNAL_SERVER_ERROR, error),
        Err(error) => refuse(StatusCode::INTERNAL_SERVER_ERROR, error),
    }
}

#[derive(Deserialize)]
pub(super) struct AuditQuery {
    limit: Option<usize>,
}

/// The newest audit records first (`limit`, at most 1000).
pub(super) async fn audit(State(shared): State<Arc<Shared>>, Query(query): Query<AuditQuery>) -> Response {
    let Some(path) = shared.pipeline.approvals().audit_log().map(std::path::Path::to_owned) else {
        return Json(json!({ "file": null, "records": [] })).into_response();
    };
    shared.pipeline.approvals().flush_audit().await;
    let limit = query.limit.unwrap_or(200).min(MAX_AUDIT_RECORDS);
    let file = path.clone();
    let read = tokio::task::spawn_blocking(move || read_tail(&file)).await;
    let text = match read {
        Ok(Ok(text)) => text,
        Ok(Err(error)) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Ok(Err(error)) => return refuse(StatusCode::INTERNAL_SERVER_ERROR, format!("{}: {error}", path.display())),
        Err(error) => return refuse(StatusCode::INTERNAL_SERVER_ERROR, error),
    };
    let records: Vec<Value> = text.lines().rev().filter_map(|line| serde_json::from_str(line).ok()).take(limit).collect();
    Json(json!({ "file": path, "records": records })).into_response()
}

/// The end of the audit log, from a line's start.
fn read_tail(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = open_regular_file(path)?;
    let start = file.metadata()?.len().saturating_sub(AUDIT_TAIL_BYTES);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    file.take(AUDIT_TAIL_BYTES).read_to_end(&mut bytes)?;
    // Begun mid-file: the first line is a fragment.
    let from = if start > 0 { bytes.iter().position(|&b| b == b'\n').map_or(bytes.len(), |at| at + 1) } else { 0 };
    Ok(String::from_utf8_lossy(&bytes[from..]).into_owned())
}
