//! [`ClientApprover`]: approval asked of the MCP client's user, through
//! elicitation, where the client supports it; `[mcp] unattended` decides
//! where it does not.

use crate::approval::{Answer, Approver, AskReason, CallDecision, DecidedBy, PendingCall, ResultDecision};
use crate::manifest::{Permission, ToolSpec};
use crate::outcome::ToolOutcome;
use crate::printable::{printable, printable_lines, to_json_pretty};
use crate::vcp_node::UnattendedApprover;
use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientResult, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationSchema, RequestId, ServerNotification, ServerRequest,
};
use rmcp::service::{ElicitationMode, PeerRequestOptions, ServiceError};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use std::time::Duration;

/// How much of a result a person is shown when asked to pass it on.
const RESULT_EXCERPT_CHARS: usize = 4000;

/// Asks the user of one MCP client, one call at a time.
pub(super) struct ClientApprover {
    /// The client, when it can be asked (it declared form elicitation and
    /// the server keeps sessions); `None` leaves every call to `unattended`.
    peer: Option<Peer<RoleServer>>,
    unattended: UnattendedApprover,
    /// How long a question waits for the user (`[mcp] approval_timeout_ms`).
    timeout: Duration,
}

impl ClientApprover {
    /// Asking `peer`'s user where its client supports form elicitation,
    /// else deciding by `unattended`.
    pub(super) fn new(peer: Option<Peer<RoleServer>>, unattended: UnattendedApprover, timeout: Duration) -> Self {
        let peer = peer.filter(|peer| peer.supported_elicitation_modes().contains(&ElicitationMode::Form));
        ClientApprover { peer, unattended, timeout }
    }

    async fn ask_call(&self, peer: &Peer<RoleServer>, call: &PendingCall) -> Answer {
        let message = format!(
            "Run `{}` (plugin {}, {})? It needs approval because {}.\n\nArguments:\n{}",
            printable(&call.tool),
            printable(&call.plugin),
            call.permission.as_str(),
            call.reason,
            to_json_pretty(&Value::Object(call.args.clone())).unwrap_or_default()
        );
        let mut properties = json!({
            "approve": {"type": "boolean", "title": "Run this call", "default": true},
            "reason": {"type": "string", "title": "Why not (if you deny it)"},
        });
        // "Allow always" means something only for moderate tools.
        if call.permission == Permission::Moderate && call.reason == AskReason::Moderate {
            properties["always"] = json!({"type": "boolean", "title": "Allow this tool from now on", "default": false});
        }
        let reply = elicit(peer, message, properties, "approve", self.timeout).await;
        let decision = match reply {
            Ok(Some(content)) if content["approve"] == true => {
                if content["always"] == true {
                    CallDecision::AllowAlways
                } else {
                    CallDecision::AllowOnce
                }
            }
            Ok(Some(content)) => CallDecision::Deny {
                reason: Some(match content["reason"].as_str().map(str::trim).filter(|reason| !reason.is_empty()) {
                    Some(reason) => format!("the user denied it: {reason}"),
                    None => "the user denied it".to_owned(),
                }),
            },
            Ok(None) => CallDecision::Deny { reason: Some("the user declined it in the MCP client".to_owned()) },
            Err(why) => {
                tracing::warn!("asking the MCP client to approve `{}`: {why}", printable(&call.tool));
                return Answer { decision: CallDecision::Deny { reason: Some(why.to_string()) }, by: DecidedBy::NoAnswer };
            }
        };
        Answer { decision, by: DecidedBy::Person }
    }
}

/// Ask the client's user to fill in a form of `properties`, `required`
/// among them, waiting at most `timeout`: the content on accept, `None` on
/// decline or cancel. A question given up on, by the timeout or because
/// the call it is for was cancelled, is withdrawn with
/// `notifications/cancelled`, so the client stops showing it.
async fn elicit(
    peer: &Peer<RoleServer>,
    message: String,
    properties: Value,
    required: &str,
    timeout: Duration,
) -> Result<Option<Value>, NoAnswer> {
    let schema = json!({"type": "object", "properties": properties, "required": [required]});
    let Value::Object(schema) = schema else { unreachable!("an object literal") };
    let requested_schema =
        ElicitationSchema::from_json_schema(schema).map_err(|e| NoAnswer::Failed(format!("the form is invalid: {e}")))?;
    let params = ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema };
    let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
    // rmcp withdraws the question itself when the timeout passes.
    let options = PeerRequestOptions::with_timeout(timeout);
    let handle = peer.send_request_with_option(request, options).await.map_err(|error| NoAnswer::Failed(error.to_string()))?;
    let pending = Withdrawn { peer: peer.clone(), id: Some(handle.id.clone()) };
    let reply = handle.await_response().await;
    pending.answered();
    match reply {
        Ok(ClientResult::ElicitResult(ElicitResult { action: ElicitationAction::Accept, content, .. })) => {
            Ok(Some(content.unwrap_or(Value::Null)))
        }
        Ok(ClientResult::ElicitResult(_)) => Ok(None),
        Ok(_) => Err(NoAnswer::Failed("it answered something else".to_owned())),
        Err(ServiceError::Timeout { timeout }) => Err(NoAnswer::TimedOut(timeout)),
        Err(error) => Err(NoAnswer::Failed(error.to_string())),
    }
}

/// Why a question got no answer.
#[derive(Debug, thiserror::Error)]
enum NoAnswer {
    #[error("nobody answered in the MCP client within {} ms ([mcp] approval_timeout_ms)", .0.as_millis())]
    TimedOut(Duration),
    #[error("the MCP client could not be asked: {0}")]
    Failed(String),
}

/// A question sent to the client and not yet answered: dropped unanswered
/// (the call it is for was cancelled), it is withdrawn.
struct Withdrawn {
    peer: Peer<RoleServer>,
    id: Option<RequestId>,
}

impl Withdrawn {
    fn answered(mut self) {
        self.id = None;
    }
}

impl Drop for Withdrawn {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        let reason = "the call it asks about was cancelled".to_owned();
        let notice = CancelledNotification::new(CancelledNotificationParam::new(Some(id), Some(reason)));
        if peer.is_transport_closed() {
            return;
        }
        // Dropped while the runtime runs: the notice goes out on its own,
        // given up on if the client does not take it in time.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let sent = peer.send_notification(ServerNotification::CancelledNotification(notice));
                let _ = tokio::time::timeout(super::NOTIFY_WITHIN, sent).await;
            });
        }
    }
}

#[async_trait::async_trait]
impl Approver for ClientApprover {
    async fn approve_calls(&self, calls: &[PendingCall]) -> Vec<CallDecision> {
        self.answer_calls(calls).await.into_iter().map(|answer| answer.decision).collect()
    }

    async fn answer_calls(&self, calls: &[PendingCall]) -> Vec<Answer> {
        let Some(peer) = &self.peer else { return self.unattended.answer_calls(calls).await };
        let mut answers = Vec::with_capacity(calls.len());
        for call in calls {
            answers.push(self.ask_call(peer, call).await);
        }
        answers
    }

    async fn approve_result(&self, outcome: &ToolOutcome, tool: &ToolSpec) -> ResultDecision {
        let Some(peer) = &self.peer else { return self.unattended.approve_result(outcome, tool).await };
        let shown: String = outcome.output.chars().take(RESULT_EXCERPT_CHARS).collect();
        let cut = if shown.len() < outcome.output.len() { "\n[…]" } else { "" };
        let message = format!(
            "`{}` (plugin {}) asks that its result be approved before it goes on. Result ({}):\n{}{cut}",
            printable(&tool.name),
            printable(&tool.plugin),
            outcome.status.as_str(),
            printable_lines(&shown)
        );
        let properties = json!({
            "pass": {"type": "boolean", "title": "Pass this result on", "default": true},
            "reason": {"type": "string", "title": "Why not (if you reject it)"},
        });
        match elicit(peer, message, properties, "pass", self.timeout).await {
            Ok(Some(content)) if content["pass"] == true => ResultDecision::Pass,
            Ok(Some(content)) => ResultDecision::Reject {
                reason: content["reason"].as_str().map(str::trim).filter(|reason| !reason.is_empty()).map(str::to_owned),
            },
            Ok(None) => ResultDecision::Reject { reason: Some("the user declined it in the MCP client".to_owned()) },
            Err(why) => ResultDecision::Reject { reason: Some(why.to_string()) },
        }
    }
}
