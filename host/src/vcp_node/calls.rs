//! One `execute_tool`, answered: a file request is served by [`files`];
//! every other call becomes a one-call turn through the node's
//! [`Pipeline`](crate::Pipeline) — checked against the exposed tools and
//! coerced, approved, run with its own cancellation token, formatted.

use super::Inner;
use super::files::{self, INTERNAL_REQUEST_FILE};
use super::frames::{self, ExecuteTool};
use crate::call::ToolCall;
use crate::protocol::vcp::RESERVED_KEYS;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

/// The `tool_result` frame for `request`.
pub(super) async fn answer(inner: &Inner, request: ExecuteTool, cancel: CancellationToken) -> Value {
    let ExecuteTool { request_id, tool, args } = request;
    if tool == INTERNAL_REQUEST_FILE {
        let served = files::serve(&inner.config, &args).await;
        match &served {
            Ok(_) => tracing::info!("served {:?} to {}", args.get("fileUrl"), inner.config.server),
            Err(why) => tracing::warn!("refused {INTERNAL_REQUEST_FILE} from {}: {why}", inner.config.server),
        }
        return match served {
            Ok(result) => frames::success(&request_id, result),
            Err(why) => frames::error(&request_id, &why),
        };
    }
    // The server keeps `maid` among the arguments; toolhost keeps VCP's
    // reserved keys apart from them, as for a parsed reply.
    let (reserved, args): (Map<String, Value>, Map<String, Value>) =
        args.into_iter().partition(|(key, _)| RESERVED_KEYS.contains(&key.as_str()));
    let call = ToolCall { reserved, ..ToolCall::with_map(&request_id, tool, args) };
    let mut turn = inner.turn.clone();
    turn.cancel = cancel;
    let result = inner.pipeline.run(&turn, vec![call]).await;
    frames::tool_result(&request_id, &result.outcomes[0])
}
