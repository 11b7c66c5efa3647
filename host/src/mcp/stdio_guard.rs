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
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::Notify;

/// The fewest answers a client may be owed before its requests are read
/// no further.
const MIN_OWED: usize = 256;

/// `inner`, reading no request while its most answers are owed.
pub(super) struct StdioGuard<T> {
    inner: T,
    ledger: Arc<Ledger>,
    /// Whether the client has sent a request yet (see `receive`).
    asked: bool,
}

/// The ids of the requests whose answers are owed.
struct Ledger {
    ids: Mutex<HashSet<RequestId>>,
    most: usize,
    /// Rung when an answer is settled; one reader waits on it.
    settled: Notify,
}

impl<T> StdioGuard<T> {
    /// `inner`, for a client that may run `calls_per_client` calls at once.
    pub(super) fn new(inner: T, calls_per_client: usize) -> Self {
        let most = calls_per_client.saturating_mul(2).max(MIN_OWED);
        StdioGuard { inner, ledger: Arc::new(Ledger { ids: Mutex::default(), most, settled: Notify::new() }), asked: false }
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
                    if let Err(error) = self.inner.send(JsonRpcMessage::error(refusal, Some(id))).await {
                        tracing::debug!("a refusal could not be written: {error}");
                    }
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

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
