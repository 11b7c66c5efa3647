//! [`StdioGuard`]: a stdio client's transport that stops reading its
//! requests while too many answers are owed to it. rmcp writes each answer from
//! a task of its own and reads on meanwhile, so a client that sends and
//! never reads had the server hold every answer it could not write: 200 000
//! `tools/list` requests took 6.5 GB. Stopping the reading leaves the rest
//! in the pipe, where the client's own writes then wait.
//!
//! It also reads past what a client sends before its first request (a
//! notification or an answer there had made rmcp fail its handshake, and
//! the server end), and refuses a request whose id one in flight has (rmcp
//! dropped the first one's answer).
//!
//! An answer is owed from the moment its request is read until it is
//! written, or until the client cancels the request (rmcp then drops the
//! answer unwritten). The most owed is twice the calls a client may run at
//! once, and at least [`MIN_OWED`], so that a client reading its answers
//! never waits on this.

use rmcp::model::{ClientJsonRpcMessage, ClientNotification, ErrorData, JsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::Notify;

/// The fewest answers a client may be owed before its requests are read
/// no further.
const MIN_OWED: usize = 256;

/// `inner`, reading no request while its most answers are owed.
pub(super) struct StdioGuard<T: Transport<RoleServer>> {
    inner: T,
    ledger: Arc<Ledger>,
    /// Whether the client has sent a request yet (see `receive`).
    asked: bool,
    /// A refusal being written, finished before reading on: rmcp polls
    /// `receive` in a `select!` and may drop it half-way, and the refusal
    /// with it (a probe's 2 000 requests of one id got 12-22 answers too
    /// few).
    refusing: Option<Sending<T::Error>>,
}

/// A message being written.
type Sending<E> = Pin<Box<dyn Future<Output = Result<(), E>> + Send>>;

/// The ids of the requests whose answers are owed.
struct Ledger {
    ids: Mutex<HashSet<RequestId>>,
    most: usize,
    /// Rung when an answer is settled; one reader waits on it.
    settled: Notify,
}

impl<T: Transport<RoleServer>> StdioGuard<T> {
    /// `inner`, for a client that may run `calls_per_client` calls at once.
    pub(super) fn new(inner: T, calls_per_client: usize) -> Self {
        let most = calls_per_client.saturating_mul(2).max(MIN_OWED);
        let ledger = Arc::new(Ledger { ids: Mutex::default(), most, settled: Notify::new() });
        StdioGuard { inner, ledger, asked: false, refusing: None }
    }
}

impl Ledger {
    /// Owe the answer to `id`; false when it is owed already.
    fn owe(&self, id: RequestId) -> bool {
        self.ids.lock().unwrap_or_else(PoisonError::into_inner).insert(id)
    }

    fn settle(&self, id: &RequestId) {
        if self.ids.lock().unwrap_or_else(PoisonError::into_inner).remove(id) {
            self.settled.notify_one();
        }
    }

    /// Until fewer than the most answers are owed. A settling between the
    /// count and the wait leaves its permit, so none is missed.
    async fn room(&self) {
        while self.ids.lock().unwrap_or_else(PoisonError::into_inner).len() >= self.most {
            self.settled.notified().await;
        }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for StdioGuard<T> {
    type Error = T::Error;

    fn send(&mut self, item: ServerJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answers = match &item {
            JsonRpcMessage::Response(response) => Some(response.id.clone()),
            JsonRpcMessage::Error(error) => error.id.clone(),
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => None,
        };
        let (sending, ledger) = (self.inner.send(item), self.ledger.clone());
        async move {
            let sent = sending.await;
            // Written or failed, it is no longer held.
            if let Some(id) = answers {
                ledger.settle(&id);
            }
            sent
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            if let Some(refusing) = self.refusing.as_mut() {
                if let Err(error) = refusing.await {
                    tracing::debug!("a refusal could not be written: {error}");
                }
                self.refusing = None;
            }
            self.ledger.room().await;
            let message = self.inner.receive().await?;
            // Before its first request a client has nothing to notify or
            // answer: rmcp failed its handshake on such a message, and the
            // server ended (found by a hostile client). Read past it.
            if !self.asked && !matches!(message, JsonRpcMessage::Request(_)) {
                tracing::debug!("a message before the client's first request is ignored");
                continue;
            }
            self.asked = true;
            match &message {
                JsonRpcMessage::Request(request) if !self.ledger.owe(request.id.clone()) => {
                    // rmcp keys a request's answer by its id: the second of
                    // two in flight took the first's place, whose call ran
                    // and whose answer was dropped. Refused, it never runs.
                    let id = request.id.clone();
                    let refusal =
                        ErrorData::invalid_request(format!("the id {id} is already in use by a request in flight"), None);
                    self.refusing = Some(Box::pin(self.inner.send(JsonRpcMessage::error(refusal, Some(id)))));
                    continue;
                }
                JsonRpcMessage::Notification(notification) => {
                    if let ClientNotification::CancelledNotification(cancelled) = &notification.notification
                        && let Some(id) = &cancelled.params.request_id
                    {
                        self.ledger.settle(id);
                    }
                }
                JsonRpcMessage::Request(_) | JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {}
            }
            return Some(message);
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // A refusal still being written holds the writer, which closing
        // waits for: serving has ended, so it is dropped.
        self.refusing = None;
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ServerJsonRpcMessage;
    use tokio::sync::{Semaphore, mpsc};

    /// A transport whose messages come from a channel, and whose writes
    /// wait for a permit of `gate` before they are kept in `written`.
    struct Scripted {
        incoming: mpsc::UnboundedReceiver<ClientJsonRpcMessage>,
        gate: Arc<Semaphore>,
        written: Arc<Mutex<Vec<ServerJsonRpcMessage>>>,
    }

    impl Transport<RoleServer> for Scripted {
        type Error = std::io::Error;

        fn send(&mut self, item: ServerJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            let (gate, written) = (self.gate.clone(), self.written.clone());
            async move {
                gate.acquire().await.expect("open").forget();
                written.lock().unwrap().push(item);
                Ok(())
            }
        }

        async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
            self.incoming.recv().await
        }

        async fn close(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    fn ping(id: i64) -> ClientJsonRpcMessage {
        serde_json::from_value(serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "ping"})).unwrap()
    }

    #[tokio::test]
    async fn a_refusal_dropped_half_way_is_still_written() {
        let (client, incoming) = mpsc::unbounded_channel();
        let (gate, written) = (Arc::new(Semaphore::new(0)), Arc::new(Mutex::new(Vec::new())));
        let mut guard = StdioGuard::new(Scripted { incoming, gate: gate.clone(), written: written.clone() }, 4);
        for id in [1, 1, 2] {
            client.send(ping(id)).unwrap();
        }
        assert!(guard.receive().await.is_some(), "the first request");
        // The refusal of the second waits to be written; rmcp's `select!`
        // drops the reading meanwhile.
        let dropped = tokio::time::timeout(std::time::Duration::from_millis(50), guard.receive()).await;
        assert!(dropped.is_err(), "the refusal's write is held");
        gate.add_permits(1);
        let third = guard.receive().await.expect("the third request");
        assert!(matches!(third, JsonRpcMessage::Request(r) if r.id == RequestId::Number(2)));
        let written = written.lock().unwrap();
        assert_eq!(written.len(), 1, "the refusal was written: {written:?}");
        assert!(matches!(&written[0], JsonRpcMessage::Error(e) if e.id == Some(RequestId::Number(1))), "{:?}", written[0]);
    }
}
