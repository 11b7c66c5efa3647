//! One `execute_tool`, answered: every call but a file request becomes a
//! one-call turn through the node's [`Pipeline`](crate::Pipeline) —
//! checked against the exposed tools and coerced, approved, run with its
//! own cancellation token, formatted. A file request is served by
//! [`files`], through the same steps: checked, approved by the same rules
//! and approver as a call of a moderate tool, read, audited.

use super::Inner;
use super::budget::Budget;
use super::files::{self, INTERNAL_REQUEST_FILE};
use super::frames::{self, ExecuteTool};
use crate::approval::{Assessment, AuditRecord, PendingCall};
use crate::call::ToolCall;
use crate::digest::sha256_hex;
use crate::manifest::{Permission, ToolSpec};
use crate::outcome::{Status, ToolOutcome};
use crate::pipeline::TurnObserver;
use crate::protocol::vcp::RESERVED_KEYS;
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;

/// What a file request is approved as: reading a local file, as the
/// `files` example's `read_file` does, which is moderate. A node nobody
/// watches serves files only where `[vcp.unattended] moderate` or an
/// allow rule for `internal_request_file` says so.
const FILE_REQUEST_PERMISSION: Permission = Permission::Moderate;
/// The plugin a file request is approved, remembered and audited under:
/// the host serves it itself.
const FILE_REQUEST_PLUGIN: &str = "toolhost";

/// The `tool_result` frame for `request`, and for a file its share of the
/// connection's byte `budget`, taken before the file was read (a plugin's
/// result is bounded by its output limit and takes its share once it is
/// written out).
pub(super) async fn answer(
    inner: &Inner,
    request: ExecuteTool,
    cancel: CancellationToken,
    budget: &Budget,
) -> (Value, Option<OwnedSemaphorePermit>) {
    let ExecuteTool { request_id, tool, args } = request;
    if tool == INTERNAL_REQUEST_FILE {
        return answer_file_request(inner, &request_id, &args, &cancel, budget).await;
    }
    // The server keeps `maid` among the arguments; toolhost keeps VCP's
    // reserved keys apart from them, as for a parsed reply.
    let (reserved, args): (Map<String, Value>, Map<String, Value>) =
        args.into_iter().partition(|(key, _)| RESERVED_KEYS.contains(&key.as_str()));
    let plugin = inner.pipeline.executor().registry().catalog().tool(&tool).map(|(plugin, _)| plugin.name().to_owned());
    let call = ToolCall::with_map(&request_id, tool, args).with_reserved(reserved);
    // Cancelled while waiting for the plugin's share: the pipeline answers
    // it as cancelled without running it.
    let _share = match &plugin {
        Some(plugin) => inner.shares.enter(plugin, &cancel).await,
        None => None,
    };
    let mut turn = inner.turn.clone();
    turn.cancel = cancel.clone();
    let asked = Asked::default();
    let result = inner.pipeline.run_observed(&turn, vec![call], &asked).await;
    let outcome = &result.outcomes[0];
    if cancel.is_cancelled() && asked.waiting.load(Ordering::SeqCst) && outcome.status == Status::Cancelled {
        tracing::warn!(
            "{} cancelled call {request_id} ({}) while it waited for approval: the question is withdrawn; \
             [vcp] approval_window_ms ({} ms) is the time a person is given per question",
            inner.config.server,
            outcome.tool,
            inner.config.approval_window.as_millis()
        );
    }
    (frames::tool_result(&request_id, outcome), None)
}

/// Whether the call waits for a person now.
#[derive(Default)]
struct Asked {
    waiting: AtomicBool,
}

impl TurnObserver for Asked {
    fn awaiting_approval(&self, _calls: &[PendingCall]) {
        self.waiting.store(true, Ordering::SeqCst);
    }

    fn executing(&self, _calls: &[crate::checked_call::CheckedCall]) {
        self.waiting.store(false, Ordering::SeqCst);
    }
}

/// A file request: checked, approved, read, audited like a call.
async fn answer_file_request(
    inner: &Inner,
    request_id: &str,
    args: &Map<String, Value>,
    cancel: &CancellationToken,
    budget: &Budget,
) -> (Value, Option<OwnedSemaphorePermit>) {
    let start = Instant::now();
    let mut reserved = None;
    let (served, approval) = match files::check(&inner.config, args) {
        Err(refused) => (Err((if refused.invalid { Status::InvalidArgs } else { Status::Denied }, refused.why)), None),
        Ok(request) => match approve_file_request(inner, request_id, args, cancel).await {
            None => (Err((Status::Cancelled, "cancelled while waiting for approval".to_owned())), None),
            Some(decided) => {
                let served = match &decided {
                    Assessment::Run { .. } => {
                        // The largest frame the file can make is reserved
                        // before it is read, and files are read and encoded
                        // a few at a time: each is held about three times
                        // over until its frame is queued.
                        reserved = budget.reserve(files::largest_frame(&inner.config)).await;
                        let _turn = inner.files_at_once.acquire().await;
                        files::read(&inner.config, request).await.map_err(|why| (Status::Error, why))
                    }
                    Assessment::Deny { reason, .. } => Err((Status::Denied, reason.clone())),
                    Assessment::Ask(_) => unreachable!("a settled call runs or is denied"),
                };
                (served, Some(decided))
            }
        },
    };
    let server = &inner.config.server;
    let (status, said) = match &served {
        Ok(_) => {
            tracing::info!("served {:?} to {server}", args.get("fileUrl"));
            (Status::Success, String::new())
        }
        Err((status, why)) => {
            tracing::warn!("refused {INTERNAL_REQUEST_FILE} from {server}: {why}");
            (*status, why.clone())
        }
    };
    let approvals = inner.pipeline.approvals();
    if approvals.audits() {
        let mut outcome = ToolOutcome::without_running(request_id, INTERNAL_REQUEST_FILE, status, said);
        outcome.duration = start.elapsed();
        approvals.audit(&AuditRecord::new(inner.agent(), Some(FILE_REQUEST_PLUGIN), args, approval.as_ref(), &outcome));
    }
    let frame = match served {
        Ok(result) => frames::success(request_id, result),
        Err((_, why)) => frames::error(request_id, &why),
    };
    (frame, reserved)
}

/// How approval of a file request ends: run or deny; `None` when `cancel`
/// fired while a person was asked.
async fn approve_file_request(
    inner: &Inner,
    request_id: &str,
    args: &Map<String, Value>,
    cancel: &CancellationToken,
) -> Option<Assessment> {
    let (approvals, agent) = (inner.pipeline.approvals(), inner.agent());
    let mut spec = ToolSpec::new(INTERNAL_REQUEST_FILE, FILE_REQUEST_PLUGIN, "serve a file from [vcp] serve_dirs");
    spec.permission = FILE_REQUEST_PERMISSION;
    // "Allow always" holds for the directories served when it was given.
    let identity = sha256_hex(format!("{:?}", inner.config.serve_dirs).as_bytes());
    // The file is resolved inside `serve_dirs` by the node itself, not by a plugin.
    let reason = match approvals.assess(agent, inner.turn.config.require_confirmation, &identity, &spec, args, &[]) {
        Assessment::Ask(reason) => reason,
        decided => return Some(decided),
    };
    let pending = PendingCall {
        id: request_id.to_owned(),
        agent: agent.to_owned(),
        plugin: FILE_REQUEST_PLUGIN.to_owned(),
        tool: INTERNAL_REQUEST_FILE.to_owned(),
        permission: spec.permission,
        args: args.clone(),
        reason,
    };
    let answers = tokio::select! {
        answers = approvals.ask(inner.pipeline.approver(), std::slice::from_ref(&pending)) => answers,
        () = cancel.cancelled() => return None,
    };
    let answer = answers.into_iter().next().expect("one answer per call asked");
    Some(approvals.settle(&pending, &identity, answer).await)
}
