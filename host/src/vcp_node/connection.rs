//! One connection to the server: connect, wait for `connection_ack`,
//! register, then serve calls until the connection is lost, shutdown is
//! asked for, or the exposed tools change.

use super::budget::Budget;
use super::config::{
    ACK_TIMEOUT, CANCEL_FLUSH, CONNECT_TIMEOUT, DISTRIBUTED_PATH, MAX_FRAME_BYTES, MAX_PENDING_BYTES, MAX_PENDING_CALLS,
    SILENT_INTERVALS,
};
use super::error::NodeError;
use super::frames::{self, ExecuteTool, Incoming, Registration};
use super::status::NodeState;
use super::{InFlight, Inner, calls};
use crate::log_throttle::warn_throttled;
use crate::registry::RegistryEvent;
use futures::{SinkExt, StreamExt};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, broadcast, mpsc};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::error::ProtocolError;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tokio_util::sync::CancellationToken;

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A connection the server acknowledged.
pub(super) struct Joined {
    socket: Socket,
    server_id: Option<String>,
    client_id: Option<String>,
}

/// Connect and wait for `connection_ack`.
pub(super) async fn join(inner: &Inner) -> Result<Joined, NodeError> {
    let mut socket = connect(inner).await?;
    let server = inner.config.server.clone();
    let deadline = Instant::now() + ACK_TIMEOUT;
    loop {
        let frame = tokio::time::timeout_at(deadline, socket.next()).await.map_err(|_| NodeError::Timeout {
            server: server.clone(),
            what: "send connection_ack",
            limit_name: "ACK_TIMEOUT",
            limit: ACK_TIMEOUT,
        })?;
        let message = match frame {
            Some(Ok(message)) => message,
            Some(Err(error)) => return Err(lost(&server, error)),
            None => return Err(NodeError::Lost { server, message: "closed before connection_ack".into() }),
        };
        let incoming = match &message {
            Message::Text(text) => Incoming::parse(text.as_bytes()),
            Message::Binary(bytes) => Incoming::parse(bytes),
            Message::Close(_) => return Err(NodeError::Lost { server, message: "closed before connection_ack".into() }),
            _ => continue,
        };
        match incoming {
            Incoming::Ack { server_id, client_id } => return Ok(Joined { socket, server_id, client_id }),
            other => warn_throttled!("{server} sent {other:?} before connection_ack; ignored"),
        }
    }
}

/// TCP, TLS for `wss://`, and the WebSocket upgrade, within
/// [`CONNECT_TIMEOUT`].
async fn connect(inner: &Inner) -> Result<Socket, NodeError> {
    let server = &inner.config.server;
    let url = format!("{server}{DISTRIBUTED_PATH}/VCP_Key={}", inner.key);
    let limits = WebSocketConfig::default().max_message_size(Some(MAX_FRAME_BYTES)).max_frame_size(Some(MAX_FRAME_BYTES));
    let connecting = tokio_tungstenite::connect_async_with_config(url, Some(limits), false);
    let timeout = |_| NodeError::Timeout {
        server: server.clone(),
        what: "complete the connection and WebSocket upgrade",
        limit_name: "CONNECT_TIMEOUT",
        limit: CONNECT_TIMEOUT,
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, connecting).await.map_err(timeout)? {
        Ok((socket, _response)) => Ok(socket),
        Err(WsError::Http(response)) => Err(NodeError::Http { server: server.clone(), status: response.status().as_u16() }),
        Err(error) if dropped_in_handshake(&error) => {
            Err(NodeError::Dropped { server: server.clone(), env: inner.config.key_env.clone() })
        }
        // The error text never holds the URL, so never the key.
        Err(error) => Err(NodeError::Connect { server: server.clone(), message: error.to_string() }),
    }
}

/// Whether the server hung up after the TCP connection was made and
/// before the upgrade was answered: what a VCP server does with a wrong key.
fn dropped_in_handshake(error: &WsError) -> bool {
    use std::io::ErrorKind;
    match error {
        WsError::Protocol(ProtocolError::HandshakeIncomplete) => true,
        WsError::Io(io) => matches!(io.kind(), ErrorKind::ConnectionReset | ErrorKind::UnexpectedEof | ErrorKind::BrokenPipe),
        _ => false,
    }
}

fn lost(server: &str, error: WsError) -> NodeError {
    NodeError::Lost { server: server.to_owned(), message: error.to_string() }
}

/// The most results gathered into one write.
const MAX_REPLIES_PER_WRITE: u64 = 64;

/// A finished call's `tool_result`, written out, holding its share of the
/// connection's [`MAX_PENDING_BYTES`] until it is sent.
struct Reply {
    request_id: String,
    text: String,
    success: bool,
    _held: OwnedSemaphorePermit,
}

/// `write`, given up after `limit`: a server that stops reading would
/// otherwise hold the session in it, its pings and silence check with it.
async fn within(
    server: &str,
    limit: Duration,
    write: impl std::future::Future<Output = Result<(), WsError>>,
) -> Result<(), NodeError> {
    match tokio::time::timeout(limit, write).await {
        Ok(written) => written.map_err(|error| lost(server, error)),
        Err(_) => Err(NodeError::Timeout {
            server: server.to_owned(),
            what: "take what the node wrote",
            limit_name: "[vcp] write_timeout_ms",
            limit,
        }),
    }
}

/// How a session ended.
#[derive(Debug)]
pub(super) enum Ended {
    /// Shutdown was asked for; running calls had their grace period and
    /// the socket was closed.
    Shutdown,
    /// The exposed tools changed; the socket was closed so that a new
    /// connection registers them (the server ignores a second
    /// registration on a live connection).
    Reregister,
    /// The connection failed.
    Lost(NodeError),
}

/// Finishing up: no new calls, running ones until `deadline`.
struct Drain {
    then: fn() -> Ended,
    deadline: Instant,
    cancelled: bool,
}

/// A registered connection serving calls.
pub(super) struct Session {
    inner: Arc<Inner>,
    socket: Socket,
    registration: Registration,
    /// Calls running or waiting for a slot, by request id.
    calls: HashMap<String, CancellationToken>,
    /// The parent of every call's token: a lost connection cancels them all.
    all_calls: CancellationToken,
    /// [`MAX_PENDING_BYTES`]: requests running or waiting hold their
    /// size, results not yet written theirs.
    budget: Budget,
    replies_to: mpsc::UnboundedSender<Reply>,
    replies: mpsc::UnboundedReceiver<Reply>,
    last_heard: Instant,
}

impl Session {
    /// Register on `joined` and serve it.
    pub(super) async fn run(
        inner: Arc<Inner>,
        joined: Joined,
        shutdown: &CancellationToken,
        events: &mut broadcast::Receiver<RegistryEvent>,
    ) -> Ended {
        let catalog = inner.pipeline.executor().registry().catalog();
        let registration = inner.registration(&catalog);
        let (replies_to, replies) = mpsc::unbounded_channel();
        let mut session = Session {
            inner,
            socket: joined.socket,
            registration,
            calls: HashMap::new(),
            all_calls: CancellationToken::new(),
            budget: Budget::new(),
            replies_to,
            replies,
            last_heard: Instant::now(),
        };
        let ended = match session.register(joined.server_id, joined.client_id).await {
            Ok(()) => session.serve(shutdown, events).await,
            Err(error) => Ended::Lost(error),
        };
        // Results on this connection can no longer be delivered.
        session.all_calls.cancel();
        if !matches!(ended, Ended::Lost(_)) {
            let _ = tokio::time::timeout(CANCEL_FLUSH, session.socket.close(None)).await;
        }
        session.inner.update(|status| {
            status.registered.clear();
            status.server_id = None;
            status.client_id = None;
        });
        ended
    }

    /// `register_tools`, `report_ip`, `update_static_placeholders`. The
    /// server answers none of them, so what was sent is logged.
    async fn register(&mut self, server_id: Option<String>, client_id: Option<String>) -> Result<(), NodeError> {
        let inner = self.inner.clone();
        let config = &inner.config;
        for unmatched in &self.registration.unmatched {
            tracing::warn!("{unmatched}");
        }
        let local_ips: Vec<String> = local_address(&self.socket).into_iter().collect();
        let frames = [
            self.registration.register.clone(),
            frames::report_ip(&config.node_name, &local_ips),
            self.registration.placeholders.clone(),
        ];
        for frame in &frames {
            self.send(frame).await?;
        }
        tracing::info!(
            "registered {} tool(s) with {} as `{}` (serverId {}): {}",
            self.registration.tools.len(),
            config.server,
            config.node_name,
            server_id.as_deref().unwrap_or("none"),
            self.registration.tools.join(", ")
        );
        tracing::debug!("register_tools sent: {}", self.registration.register);
        let tools = self.registration.tools.clone();
        self.inner.update(|status| {
            status.state = NodeState::Connected;
            status.server_id = server_id;
            status.client_id = client_id;
            status.registered = tools;
            status.registrations += 1;
            status.last_error = None;
            status.next_attempt_unix_ms = None;
        });
        Ok(())
    }

    async fn serve(&mut self, shutdown: &CancellationToken, events: &mut broadcast::Receiver<RegistryEvent>) -> Ended {
        let interval = self.inner.config.ping_interval;
        let mut ping = tokio::time::interval_at(Instant::now() + interval, interval);
        ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut drain: Option<Drain> = None;
        let mut events_open = true;
        loop {
            if let Some(finishing) = drain.as_ref().filter(|_| self.calls.is_empty()) {
                return (finishing.then)();
            }
            let deadline = drain.as_ref().map(|d| d.deadline);
            tokio::select! {
                biased;
                () = shutdown.cancelled(), if drain.is_none() => {
                    self.inner.update(|status| status.state = NodeState::ShuttingDown);
                    drain = Some(self.drain(|| Ended::Shutdown));
                }
                frame = self.socket.next() => {
                    self.last_heard = Instant::now();
                    let result = match frame {
                        Some(Ok(message)) => self.receive(message, drain.is_some()).await,
                        Some(Err(error)) => Err(lost(&self.inner.config.server, error)),
                        None => Err(NodeError::Lost { server: self.inner.config.server.clone(), message: "the stream ended".into() }),
                    };
                    if let Err(error) = result {
                        return Ended::Lost(error);
                    }
                }
                Some(reply) = self.replies.recv() => {
                    if let Err(error) = self.send_replies(reply).await {
                        return Ended::Lost(error);
                    }
                }
                _ = ping.tick() => {
                    let silent = self.last_heard.elapsed();
                    if silent >= interval * SILENT_INTERVALS {
                        let server = self.inner.config.server.clone();
                        return Ended::Lost(NodeError::Silent { server, silent, interval, intervals: SILENT_INTERVALS });
                    }
                    let (server, limit) = (&self.inner.config.server, self.inner.config.write_timeout);
                    if let Err(error) = within(server, limit, self.socket.send(Message::Ping(Default::default()))).await {
                        return Ended::Lost(error);
                    }
                }
                event = events.recv(), if drain.is_none() && events_open => {
                    events_open = !matches!(event, Err(broadcast::error::RecvError::Closed));
                    if events_open && self.tools_changed() {
                        drain = Some(self.drain(|| Ended::Reregister));
                    }
                }
                () = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                    let finishing = drain.as_mut().expect("a deadline comes from a drain");
                    if finishing.cancelled {
                        tracing::warn!("{} call(s) did not end within {CANCEL_FLUSH:?} of being cancelled", self.calls.len());
                        return (finishing.then)();
                    }
                    tracing::info!("cancelling {} call(s) still running after the grace period", self.calls.len());
                    self.all_calls.cancel();
                    finishing.cancelled = true;
                    finishing.deadline = Instant::now() + CANCEL_FLUSH;
                }
            }
        }
    }

    /// Stop taking calls; running ones have the grace period.
    fn drain(&self, then: fn() -> Ended) -> Drain {
        Drain { then, deadline: Instant::now() + self.inner.config.shutdown_grace, cancelled: false }
    }

    /// Whether the tools to register differ from those registered.
    fn tools_changed(&self) -> bool {
        let catalog = self.inner.pipeline.executor().registry().catalog();
        let now = self.inner.registration(&catalog);
        let changed = now != self.registration;
        if changed {
            tracing::info!(
                "the exposed tools changed (now: {}); reconnecting to {} to register them",
                now.tools.join(", "),
                self.inner.config.server
            );
        }
        changed
    }

    async fn receive(&mut self, message: Message, draining: bool) -> Result<(), NodeError> {
        let size = message.len();
        let incoming = match &message {
            Message::Text(text) => Incoming::parse(text.as_bytes()),
            Message::Binary(bytes) => Incoming::parse(bytes),
            Message::Close(frame) => {
                let why = frame.as_ref().map(|f| format!(" ({} {})", f.code, f.reason)).unwrap_or_default();
                let server = self.inner.config.server.clone();
                return Err(NodeError::Lost { server, message: format!("the server closed the connection{why}") });
            }
            // Pings are answered by the WebSocket layer; any frame counts as heard.
            Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => return Ok(()),
        };
        match incoming {
            Incoming::Execute(request) => {
                drop(message);
                self.start(request, size, draining).await?;
            }
            Incoming::Malformed { request_id: Some(request_id), why } => {
                self.send_result(&frames::error(&request_id, &why)).await?;
            }
            Incoming::Cancel { request_id } => match self.calls.get(&request_id) {
                Some(call) => {
                    tracing::info!("{} cancelled call {request_id}", self.inner.config.server);
                    call.cancel();
                }
                None => tracing::debug!("cancel_tool for {request_id}, which is not running"),
            },
            Incoming::Malformed { request_id: None, why } => warn_throttled!("ignored from {}: {why}", self.inner.config.server),
            Incoming::Ack { .. } => tracing::debug!("a second connection_ack ignored"),
            Incoming::Ignored(what) => tracing::debug!("ignored from {}: {what}", self.inner.config.server),
        }
        Ok(())
    }

    /// Run `request` (`size` bytes as it came) on its own task with its own
    /// cancellation token, unless the node is finishing up or holds too
    /// many calls, or too many bytes of them, already.
    async fn start(&mut self, request: ExecuteTool, size: usize, draining: bool) -> Result<(), NodeError> {
        let request_id = request.request_id.clone();
        let held = self.budget.try_take(size);
        let refusal = if draining {
            Some(
                "the node is closing this connection (shutting down, or re-registering changed tools); call again shortly"
                    .to_owned(),
            )
        } else if self.calls.len() >= MAX_PENDING_CALLS {
            Some(format!(
                "the node has {MAX_PENDING_CALLS} calls running or waiting, its limit (MAX_PENDING_CALLS); call again shortly"
            ))
        } else if self.calls.contains_key(&request_id) {
            Some(format!("a call with requestId `{request_id}` is already running on this node"))
        } else if held.is_none() {
            Some(format!(
                "the node holds {} MiB of calls running, waiting or answered but not yet sent, its limit \
                 (MAX_PENDING_BYTES); call again shortly",
                MAX_PENDING_BYTES >> 20
            ))
        } else {
            None
        };
        let (Some(held), None) = (held, refusal.as_ref()) else {
            let why = refusal.expect("a refusal when nothing was held");
            return self.send_result(&frames::error(&request_id, &why)).await;
        };
        let cancel = self.all_calls.child_token();
        self.calls.insert(request_id.clone(), cancel.clone());
        let (inner, replies_to, budget) = (self.inner.clone(), self.replies_to.clone(), self.budget.clone());
        let in_flight = InFlight::enter(&inner);
        tokio::spawn(async move {
            let (frame, reserved) = calls::answer(&inner, request, cancel, &budget).await;
            drop(in_flight);
            let (text, success) = (frame.to_string(), frames::is_success(&frame));
            drop((frame, held));
            // The result holds its share until written; a closed channel
            // means the connection is gone, and the result with it.
            let held = match reserved {
                Some(reserved) => Some(reserved),
                None => budget.reserve(text.len()).await,
            };
            let Some(held) = held else { return };
            let _ = replies_to.send(Reply { request_id, text, success, _held: held });
        });
        Ok(())
    }

    /// Send `first` and the results that are ready with it, flushed once:
    /// under load one write carries many.
    async fn send_replies(&mut self, first: Reply) -> Result<(), NodeError> {
        let (server, limit) = (self.inner.config.server.clone(), self.inner.config.write_timeout);
        let mut reply = Some(first);
        let (mut served, mut failed) = (0, 0);
        // Each result's share of the budget is let go once it is flushed.
        let mut written = Vec::new();
        while let Some(Reply { request_id, text, success, _held: held }) = reply.take() {
            self.calls.remove(&request_id);
            within(&server, limit, self.socket.feed(Message::text(text))).await?;
            written.push(held);
            if success {
                served += 1;
            } else {
                failed += 1;
            }
            if served + failed < MAX_REPLIES_PER_WRITE {
                reply = self.replies.try_recv().ok();
            }
        }
        within(&server, limit, self.socket.flush()).await?;
        drop(written);
        self.count(served, failed);
        Ok(())
    }

    /// Send a `tool_result` and count it.
    async fn send_result(&mut self, frame: &Value) -> Result<(), NodeError> {
        self.send(frame).await?;
        let success = frames::is_success(frame);
        self.count(u64::from(success), u64::from(!success));
        Ok(())
    }

    fn count(&self, served: u64, failed: u64) {
        self.inner.update(|status| {
            status.calls_served += served;
            status.calls_failed += failed;
        });
    }

    async fn send(&mut self, frame: &Value) -> Result<(), NodeError> {
        let (server, limit) = (&self.inner.config.server, self.inner.config.write_timeout);
        within(server, limit, self.socket.send(Message::text(frame.to_string()))).await
    }
}

/// The address this end of the connection has: the one the server sees
/// the node at.
fn local_address(socket: &Socket) -> Option<String> {
    let tcp = match socket.get_ref() {
        MaybeTlsStream::Plain(tcp) => tcp,
        MaybeTlsStream::Rustls(tls) => tls.get_ref().0,
        _ => return None,
    };
    tcp.local_addr().ok().map(|address| address.ip().to_string())
}
