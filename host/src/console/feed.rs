//! What the page is told as it happens: a broadcast of JSON events, served
//! as server-sent events. A page that falls behind is told to fetch the
//! state again rather than miss something silently.

use axum::response::sse::{Event, KeepAlive, Sse};
use futures::{Stream, StreamExt};
use serde::Serialize;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// Events kept for a slow page before it is told it lagged.
const BACKLOG: usize = 256;
/// The largest event sent as it is: a larger one (a request with huge
/// arguments, a tool's long output) is sent as a `resync`, after which the
/// page fetches what it would have said. So what the feed holds for slow
/// pages is bounded in bytes (`BACKLOG` of these), not only in events.
pub(super) const MAX_EVENT_BYTES: usize = 64 << 10;
/// How often an idle stream carries a comment, so proxies and the
/// browser keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The console's event broadcast; clones share it.
#[derive(Clone)]
pub(super) struct Feed {
    sender: broadcast::Sender<Arc<str>>,
    /// Fired when the console shuts down: every stream ends, so the
    /// server's graceful shutdown does not wait on open pages.
    closed: CancellationToken,
}

impl Feed {
    pub(super) fn new() -> Self {
        Feed { sender: broadcast::channel(BACKLOG).0, closed: CancellationToken::new() }
    }

    /// Tell every open page `event` (`{"type": kind, …event's fields}`).
    pub(super) fn publish(&self, kind: &str, event: &impl Serialize) {
        let mut value = serde_json::to_value(event).unwrap_or_default();
        match &mut value {
            serde_json::Value::Object(map) => {
                map.insert("type".into(), kind.into());
            }
            other => *other = serde_json::json!({ "type": kind, "value": other.take() }),
        }
        let mut json = value.to_string();
        if json.len() > MAX_EVENT_BYTES {
            json = r#"{"type":"resync"}"#.to_owned();
        }
        // Nobody listening is fine: the page fetches the state when it opens.
        let _ = self.sender.send(json.into());
    }

    /// End every stream.
    pub(super) fn close(&self) {
        self.closed.cancel();
    }

    /// The stream one page reads: every event from now on.
    pub(super) fn stream(&self) -> Sse<impl Stream<Item = Result<Event, Infallible>> + use<>> {
        let receiver = self.sender.subscribe();
        let events = futures::stream::unfold(receiver, |mut receiver| async move {
            let event = match receiver.recv().await {
                Ok(json) => Event::default().data(&*json),
                Err(broadcast::error::RecvError::Lagged(_)) => Event::default().data(r#"{"type":"resync"}"#),
                Err(broadcast::error::RecvError::Closed) => return None,
            };
            Some((Ok(event), receiver))
        })
        .take_until(self.closed.clone().cancelled_owned());
        Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
    }
}
