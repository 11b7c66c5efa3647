//! One `execute_tool`, answered: every call but a file request becomes a
//! one-call turn through the node's [`Pipeline`](crate::Pipeline) —
//! checked against the exposed tools and coerced, approved, run with its
//! own cancellation token, formatted. A file request is checked by
//! [`files`], then decided, read and audited by the same pipeline as a
//! host action ([`Pipeline::run_host_action`](crate::Pipeline::run_host_action)):
//! approved by the same rules and approver as a call of a moderate tool.

use super::Inner;
use super::budget::Budget;
use super::files::{self, INTERNAL_REQUEST_FILE};
use super::frames::{self, ExecuteTool};
use crate::approval::PendingCall;
use crate::call::ToolCall;
use crate::digest::sha256_hex;
use crate::log_throttle::warn_throttled;
use crate::manifest::{Permission, ToolSpec};
use crate::outcome::{Status, ToolOutcome};
use crate::pipeline::{HostAction, Turn, TurnObserver};
use crate::protocol::vcp::RESERVED_KEYS;
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicBool, Ordering};
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
    let mut turn = inner.turn.clone();
    turn.cancel = cancel.clone();
    let asked = Asked::default();
    let (frame, status, reserved) = if tool == INTERNAL_REQUEST_FILE {
        answer_file_request(inner, &turn, &request_id, &args, budget, &asked).await
    } else {
        let outcome = answer_call(inner, &turn, &request_id, tool.clone(), args, &asked).await;
        (frames::tool_result(&request_id, &outcome), outcome.status, None)
    };
    if cancel.is_cancelled() && asked.waiting.load(Ordering::SeqCst) && status == Status::Cancelled {
        tracing::warn!(
            "{} cancelled call {request_id} ({tool}) while it waited for approval: the question is withdrawn; \
             [vcp] approval_window_ms ({} ms) is the time a person is given per question",
            inner.config.server,
            inner.config.approval_window.as_millis()
        );
    }
    (frame, reserved)
}

/// A call of a tool: a one-call turn, once its plugin's share of the
/// executor is free.
async fn answer_call(
    inner: &Inner,
    turn: &Turn,
    request_id: &str,
    tool: String,
    args: Map<String, Value>,
    asked: &Asked,
) -> ToolOutcome {
    // The server keeps `maid` among the arguments; toolhost keeps VCP's
    // reserved keys apart from them, as for a parsed reply.
    let (reserved, args): (Map<String, Value>, Map<String, Value>) =
        args.into_iter().partition(|(key, _)| RESERVED_KEYS.contains(&key.as_str()));
    let plugin = inner.pipeline.executor().registry().catalog().tool(&tool).map(|(plugin, _)| plugin.name().to_owned());
    let call = ToolCall::with_map(request_id, tool, args).with_reserved(reserved);
    // Cancelled while waiting for the plugin's share: the pipeline answers
    // it as cancelled without running it.
    let _share = match &plugin {
        Some(plugin) => inner.shares.enter(plugin, &turn.cancel).await,
        None => None,
    };
    let mut result = inner.pipeline.run_observed(turn, vec![call], asked).await;
    result.outcomes.swap_remove(0)
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

/// A file request: checked here, then decided, read and audited by the
/// pipeline; its frame, how it ended, and the budget it reserved.
async fn answer_file_request(
    inner: &Inner,
    turn: &Turn,
    request_id: &str,
    args: &Map<String, Value>,
    budget: &Budget,
    observer: &dyn TurnObserver,
) -> (Value, Status, Option<OwnedSemaphorePermit>) {
    let mut spec = ToolSpec::new(INTERNAL_REQUEST_FILE, FILE_REQUEST_PLUGIN, "serve a file from [vcp] serve_dirs");
    spec.permission = FILE_REQUEST_PERMISSION;
    // "Allow always" holds for the directories served when it was given.
    let identity = sha256_hex(format!("{:?}", inner.config.serve_dirs).as_bytes());
    let action = HostAction { id: request_id, spec: &spec, identity: &identity, args };
    let mut reserved = None;
    let reserving = &mut reserved;
    let checked = match files::check(&inner.config, args) {
        Err(refused) => Err((if refused.invalid { Status::InvalidArgs } else { Status::Denied }, refused.why)),
        Ok(request) => Ok(async move {
            // The largest frame the file can make is reserved before it is
            // read, and files are read and encoded a few at a time: each is
            // held about three times over until its frame is queued.
            *reserving = budget.reserve(files::largest_frame(&inner.config)).await;
            let _turn = inner.files_at_once.acquire().await;
            files::read(&inner.config, request).await
        }),
    };
    let served = inner.pipeline.run_host_action(turn, &action, checked, observer).await;
    let server = &inner.config.server;
    let (frame, status) = match served {
        Ok(result) => {
            tracing::info!("served {:?} to {server}", args.get("fileUrl"));
            (frames::success(request_id, result), Status::Success)
        }
        Err((status, why)) => {
            warn_throttled!("refused {INTERNAL_REQUEST_FILE} from {server}: {why}");
            (frames::error(request_id, &why), status)
        }
    };
    (frame, status, reserved)
}
