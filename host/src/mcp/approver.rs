//! [`ClientApprover`]: approval asked of the MCP client's user, through
//! elicitation, where the client supports it; `[mcp] unattended` decides
//! where it does not.

use super::questions::{Reply, call_form, result_form};
use crate::approval::UnattendedApprover;
use crate::approval::{Answer, Approver, CallDecision, PendingCall, ResultAnswer, ResultDecision};
use crate::log_throttle::warn_throttled;
use crate::manifest::ToolSpec;
use crate::outcome::ToolOutcome;
use crate::printable::printable;
use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientResult, ElicitRequest, ElicitRequestParams, RequestId,
    ServerNotification, ServerRequest,
};
use rmcp::service::{ElicitationMode, PeerRequestOptions, ServiceError};
use rmcp::{Peer, RoleServer};
use std::time::Duration;

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
        let reply = elicit(peer, call_form(call), self.timeout).await;
        if let Reply::Unanswered(why) = &reply {
            warn_throttled!("asking the MCP client to approve `{}`: {why}", printable(&call.tool));
        }
        reply.call_answer()
    }
}

/// Ask the client's user to fill in `form`, waiting at most `timeout`. A
/// question given up on, by the timeout or because the call it is for was
/// cancelled, is withdrawn with `notifications/cancelled`, so the client
/// stops showing it.
async fn elicit(peer: &Peer<RoleServer>, form: ElicitRequestParams, timeout: Duration) -> Reply {
    let request = ServerRequest::ElicitRequest(ElicitRequest::new(form));
    // rmcp withdraws the question itself when the timeout passes.
    let options = PeerRequestOptions::with_timeout(timeout);
    let handle = match peer.send_request_with_option(request, options).await {
        Ok(handle) => handle,
        Err(error) => return Reply::Unanswered(NoAnswer::Failed(error.to_string()).to_string()),
    };
    let pending = Withdrawn { peer: peer.clone(), id: Some(handle.id.clone()) };
    let reply = handle.await_response().await;
    pending.answered();
    let unanswered = match reply {
        Ok(ClientResult::ElicitResult(result)) => return Reply::of(result),
        Ok(_) => NoAnswer::Failed("it answered something else".to_owned()),
        Err(ServiceError::Timeout { timeout }) => NoAnswer::TimedOut(timeout),
        Err(error) => NoAnswer::Failed(error.to_string()),
    };
    Reply::Unanswered(unanswered.to_string())
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
        self.answer_result(outcome, tool).await.decision
    }

    async fn answer_result(&self, outcome: &ToolOutcome, tool: &ToolSpec) -> ResultAnswer {
        let Some(peer) = &self.peer else { return self.unattended.answer_result(outcome, tool).await };
        elicit(peer, result_form(outcome, tool), self.timeout).await.result_answer()
    }
}
