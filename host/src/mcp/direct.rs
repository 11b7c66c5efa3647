//! [`Direct`]: a stdio client's `tools/call` requests run and answered by
//! its transport, past rmcp's service loop.
//!
//! rmcp's loop spawns a task for each request, sends the handler's answer
//! back over a channel, wakes itself to take it, and spawns another task
//! to write it, with a tracing span around each: work a bare responder
//! does not do, on the path of every call (docs/PERFORMANCE.md). Here a
//! `tools/call` read once the client is being served goes to the same
//! handler ([`Service::handle_request`], so every check rmcp makes of a
//! request is made), polled by the transport while rmcp waits on it, and
//! its answer is written through the same writer. Every other message,
//! and a call read before serving starts (during the handshake), goes to
//! rmcp as it did.
//!
//! What rmcp's loop did for a request is kept: a client's
//! `notifications/cancelled` cancels the call and its answer is dropped
//! unwritten; the call's token is a child of serving's, and cancelled once
//! the call is answered; calls still running when the input ends are given
//! [`DRAIN_AT_END`] to be answered, and when serving stops
//! [`DRAIN_AT_STOP`], then stopped. A panic in a call is answered as an
//! internal error (under rmcp's loop it went unanswered). The call runs
//! outside rmcp's task-local record of the request it serves, which only
//! its streamable HTTP transport reads (to send a server's request on the
//! stream of the client's that caused it).

use futures::FutureExt;
use futures::stream::{FuturesUnordered, StreamExt};
use rmcp::model::{
    CallToolRequest, ClientJsonRpcMessage, ClientNotification, ClientRequest, ErrorData, GetExtensions, GetMeta, JsonRpcMessage,
    JsonRpcRequest, RequestId, ServerJsonRpcMessage,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::Transport;
use rmcp::{Peer, Service};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long calls still running are given to be answered once the input
/// has ended, as rmcp gives its own.
const DRAIN_AT_END: Duration = Duration::from_secs(5);
/// How long calls still running (their tokens cancelled) are given to be
/// answered once serving stops, as rmcp gives its own.
const DRAIN_AT_STOP: Duration = Duration::from_secs(2);

/// A call running: its request's id, its number, and its answer.
type Running = Pin<Box<dyn Future<Output = (RequestId, u64, ServerJsonRpcMessage)> + Send>>;
/// An answer being written.
type Sending<E> = Pin<Box<dyn Future<Output = Result<(), E>> + Send>>;

/// `inner`, whose `tools/call` requests `service` answers here once
/// `peer` is set.
pub(super) struct Direct<T: Transport<RoleServer>, S> {
    inner: T,
    service: S,
    /// The client as rmcp serves it, set once serving has started.
    peer: Arc<OnceLock<Peer<RoleServer>>>,
    /// Serving's token: each call's is a child of it.
    serving: CancellationToken,
    running: FuturesUnordered<Running>,
    /// The calls running, by their request's id: the number each was
    /// given (an id may be used again once its call is cancelled) and its
    /// token.
    calls: HashMap<RequestId, (u64, CancellationToken)>,
    numbered: u64,
    /// An answer being written, finished before reading on: rmcp polls
    /// `receive` in a `select!` and may drop it half-way.
    sending: Option<Sending<T::Error>>,
}

impl<T: Transport<RoleServer>, S: Service<RoleServer> + Clone> Direct<T, S> {
    pub(super) fn new(inner: T, service: S, peer: Arc<OnceLock<Peer<RoleServer>>>, serving: CancellationToken) -> Self {
        Direct {
            inner,
            service,
            peer,
            serving,
            running: FuturesUnordered::new(),
            calls: HashMap::new(),
            numbered: 0,
            sending: None,
        }
    }

    /// `message` for rmcp, or `None` when it was taken here: a call
    /// started, or a cancellation noted (and passed on too, for rmcp's
    /// own requests and the guard's ledger).
    fn take(&mut self, message: ClientJsonRpcMessage) -> Option<ClientJsonRpcMessage> {
        match message {
            JsonRpcMessage::Request(JsonRpcRequest { id, request: ClientRequest::CallToolRequest(call), .. })
                if self.peer.get().is_some() =>
            {
                self.start(id, call);
                None
            }
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) = &notification.notification
                    && let Some((_, token)) = cancelled.params.request_id.as_ref().and_then(|id| self.calls.remove(id))
                {
                    token.cancel();
                }
                Some(JsonRpcMessage::Notification(notification))
            }
            other => Some(other),
        }
    }

    /// Run `call`, the request `id`, as rmcp's loop would have.
    fn start(&mut self, id: RequestId, call: CallToolRequest) {
        let Some(peer) = self.peer.get().cloned() else { return };
        let (number, token) = (self.numbered, self.serving.child_token());
        self.numbered += 1;
        self.calls.insert(id.clone(), (number, token.clone()));
        let mut request = ClientRequest::CallToolRequest(call);
        let mut context = RequestContext::new(id.clone(), peer);
        context.ct = token;
        // As rmcp's loop: the `_meta` first, then the rest of the extensions.
        context.meta = std::mem::take(request.get_meta_mut());
        context.extensions = std::mem::take(request.extensions_mut());
        let service = self.service.clone();
        self.running.push(Box::pin(async move {
            let handled = std::panic::AssertUnwindSafe(service.handle_request(request, context)).catch_unwind().await;
            let answer = match handled {
                Ok(Ok(result)) => ServerJsonRpcMessage::response(result, id.clone()),
                Ok(Err(error)) => ServerJsonRpcMessage::error(error, Some(id.clone())),
                Err(_panic) => {
                    tracing::error!("an MCP call panicked in the server");
                    ServerJsonRpcMessage::error(
                        ErrorData::internal_error("the call failed in the server", None),
                        Some(id.clone()),
                    )
                }
            };
            (id, number, answer)
        }));
    }

    /// Write the answer of the call `number`, the request `id`, unless the
    /// client cancelled it meanwhile.
    fn answer(&mut self, id: RequestId, number: u64, answer: ServerJsonRpcMessage) {
        if self.calls.get(&id).is_some_and(|(running, _)| *running == number)
            && let Some((_, token)) = self.calls.remove(&id)
        {
            token.cancel();
            self.sending = Some(Box::pin(self.inner.send(answer)));
        }
    }

    /// Answer the calls running that finish `within`; then stop the rest,
    /// their answers unwritten, and drop a write that has not finished (it
    /// holds the writer, which closing waits for).
    async fn drain(&mut self, within: Duration) {
        let drained = tokio::time::timeout(within, async {
            self.sent().await;
            while let Some((id, number, answer)) = self.running.next().await {
                self.answer(id, number, answer);
                self.sent().await;
            }
        })
        .await;
        if drained.is_err() {
            tracing::debug!("{} MCP call(s) not answered within {within:?} of serving ending", self.calls.len());
        }
        for (_, token) in self.calls.values() {
            token.cancel();
        }
        self.calls.clear();
        self.running = FuturesUnordered::new();
        self.sending = None;
    }

    /// Until the answer being written is.
    async fn sent(&mut self) {
        if let Some(sending) = self.sending.as_mut() {
            if let Err(error) = sending.await {
                tracing::debug!("an MCP answer could not be written: {error}");
            }
            self.sending = None;
        }
    }
}

impl<T: Transport<RoleServer>, S: Service<RoleServer> + Clone> Transport<RoleServer> for Direct<T, S> {
    type Error = T::Error;

    fn send(&mut self, item: ServerJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            self.sent().await;
            tokio::select! {
                biased;
                Some((id, number, answer)) = self.running.next(), if !self.running.is_empty() => self.answer(id, number, answer),
                message = self.inner.receive() => match message {
                    Some(message) => {
                        if let Some(message) = self.take(message) {
                            return Some(message);
                        }
                    }
                    None => {
                        self.drain(DRAIN_AT_END).await;
                        return None;
                    }
                },
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.drain(DRAIN_AT_STOP).await;
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::super::server::serve_lines;
    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, InitializeResult, ServerCapabilities,
    };
    use rmcp::service::RequestContext;
    use rmcp::{ErrorData, RoleServer, ServerHandler};
    use serde_json::{Value, json};
    use std::sync::Arc;
    use std::time::Duration;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf};
    use tokio_util::sync::CancellationToken;

    /// A handler whose calls say which task they ran in (`task`), wait to
    /// be cancelled (`wait`), answer 1 MiB (`big`), or panic (`panic`).
    #[derive(Clone, Default)]
    struct Probe {
        /// Told when a `wait` ends, cancelled or dropped.
        ended: Arc<tokio::sync::Notify>,
    }

    struct TellWhenEnded(Arc<tokio::sync::Notify>);

    impl Drop for TellWhenEnded {
        fn drop(&mut self) {
            self.0.notify_one();
        }
    }

    impl ServerHandler for Probe {
        fn get_info(&self) -> InitializeResult {
            InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
        }

        async fn call_tool(
            &self,
            request: CallToolRequestParams,
            context: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, ErrorData> {
            let said = match request.name.as_ref() {
                "task" => format!("{}", tokio::task::id()),
                "wait" => {
                    let _ended = TellWhenEnded(self.ended.clone());
                    context.ct.cancelled().await;
                    "cancelled".to_owned()
                }
                "big" => "x".repeat(1 << 20),
                _ => panic!("the probe's own"),
            };
            Ok(CallToolResult::success(vec![ContentBlock::text(said)]).into())
        }
    }

    /// A client of `probe` served over lines, past the handshake.
    struct Client {
        write: WriteHalf<DuplexStream>,
        answers: Lines<BufReader<ReadHalf<DuplexStream>>>,
        stop: CancellationToken,
        served: tokio::task::JoinHandle<Result<(), super::super::McpError>>,
    }

    impl Drop for Client {
        fn drop(&mut self) {
            self.stop.cancel();
        }
    }

    impl Client {
        async fn of(probe: Probe) -> Client {
            Client::buffering(probe, 1 << 16).await
        }

        /// A client whose pipes hold `bytes` each way.
        async fn buffering(probe: Probe, bytes: usize) -> Client {
            let (client, server) = tokio::io::duplex(bytes);
            let (server_read, server_write) = tokio::io::split(server);
            let stop = CancellationToken::new();
            let served = tokio::spawn(serve_lines(probe, server_read, server_write, 4, stop.clone()));
            let (read, write) = tokio::io::split(client);
            let mut client = Client { write, answers: BufReader::new(read).lines(), stop, served };
            let hello = json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
            client.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello})).await;
            assert_eq!(client.answer().await["id"], 0);
            client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
            client
        }

        async fn send(&mut self, message: Value) {
            self.write.write_all(format!("{message}\n").as_bytes()).await.unwrap();
        }

        async fn call(&mut self, id: u64, tool: &str) {
            self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool}})).await;
        }

        async fn answer(&mut self) -> Value {
            let line = tokio::time::timeout(Duration::from_secs(10), self.answers.next_line()).await;
            serde_json::from_str(&line.expect("an answer in time").unwrap().expect("a line")).unwrap()
        }
    }

    fn said(answer: &Value) -> &str {
        answer["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {answer}"))
    }

    #[tokio::test]
    async fn calls_are_run_by_the_transport_not_in_a_task_each() {
        let mut client = Client::of(Probe::default()).await;
        let mut tasks = Vec::new();
        for id in 1..=2 {
            client.call(id, "task").await;
            let answer = client.answer().await;
            assert_eq!(answer["id"], id);
            tasks.push(said(&answer).to_owned());
        }
        // rmcp's service loop runs each request in a task of its own.
        assert_eq!(tasks[0], tasks[1], "both calls ran in the serving task");
    }

    #[tokio::test]
    async fn a_call_the_client_cancels_stops_unanswered_and_its_id_is_free_again() {
        let probe = Probe::default();
        let mut client = Client::of(probe.clone()).await;
        client.call(7, "wait").await;
        client.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})).await;
        tokio::time::timeout(Duration::from_secs(10), probe.ended.notified()).await.expect("the call's token cancelled");
        client.call(7, "task").await;
        client.send(json!({"jsonrpc": "2.0", "id": 8, "method": "ping"})).await;
        let (first, second) = (client.answer().await, client.answer().await);
        let reused = if first["id"] == 7 { &first } else { &second };
        assert_eq!(reused["id"], 7, "{first} {second}");
        assert_ne!(said(reused), "cancelled", "the cancelled call's answer was dropped");
        assert!([&first, &second].iter().any(|answer| answer["id"] == 8), "{first} {second}");
    }

    /// Until serving `client` ends, within `within`.
    async fn ended(client: &mut Client, within: Duration) {
        let served = tokio::time::timeout(within, &mut client.served).await;
        assert!(served.is_ok(), "serving did not end within {within:?}");
    }

    #[tokio::test]
    async fn serving_stops_though_an_answer_cannot_be_written() {
        let mut client = Client::buffering(Probe::default(), 4 << 10).await;
        // 1 MiB to a client that reads none of it: the write waits, holding
        // the writer that closing needs.
        client.call(1, "big").await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        client.stop.cancel();
        ended(&mut client, Duration::from_secs(10)).await;
    }

    #[tokio::test]
    async fn calls_left_running_when_the_input_ends_are_given_their_time_then_stopped() {
        let probe = Probe::default();
        let mut client = Client::of(probe.clone()).await;
        client.call(1, "wait").await;
        client.call(2, "task").await;
        assert_eq!(client.answer().await["id"], 2);
        client.write.shutdown().await.unwrap();
        // As rmcp's loop: five seconds, then the call is cancelled.
        tokio::time::timeout(Duration::from_secs(10), probe.ended.notified()).await.expect("the call was stopped");
        ended(&mut client, Duration::from_secs(10)).await;
    }

    #[tokio::test]
    async fn a_call_that_panics_is_an_internal_error_and_serving_goes_on() {
        let mut client = Client::of(Probe::default()).await;
        client.call(3, "panic").await;
        let failed = client.answer().await;
        assert_eq!((failed["id"].clone(), failed["error"]["code"].clone()), (json!(3), json!(-32603)), "{failed}");
        client.call(4, "task").await;
        assert_eq!(client.answer().await["id"], 4);
    }
}
