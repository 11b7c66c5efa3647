//! A stand-in VCP server: a real WebSocket server on loopback that behaves
//! as `VCP-PROTOCOL.md` §4–§5 describe — a wrong key loses the TCP
//! connection before the upgrade with no HTTP answer, `connection_ack` is
//! the first frame with a new `serverId` per connection, `register_tools`
//! is never answered — and lets a test send `execute_tool` and
//! `cancel_tool`, drop or silence a connection, and stop and restart.

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{Notify, broadcast, mpsc};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;

/// How long a test waits for something the node should send.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// How many frames a [`StandIn::subscribe`]r may fall behind by.
const FRAME_BACKLOG: usize = 1 << 16;

/// One frame a node sent, with the connection it came on (from 1).
#[derive(Debug, Clone)]
pub struct Received {
    pub connection: usize,
    pub frame: Value,
}

impl Received {
    pub fn kind(&self) -> &str {
        self.frame["type"].as_str().unwrap_or_default()
    }
}

/// One TCP connection attempt: when, and whether its key was right.
#[derive(Debug, Clone, Copy)]
pub struct Attempt {
    pub at: Instant,
    pub accepted: bool,
}

enum Command {
    Send(Value),
    Drop,
    Silence,
}

struct Shared {
    received: Mutex<Vec<Received>>,
    attempts: Mutex<Vec<Attempt>>,
    commands: Mutex<Vec<mpsc::UnboundedSender<Command>>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    closes: AtomicUsize,
    connections: AtomicUsize,
    changed: Notify,
    frames: broadcast::Sender<Received>,
}

pub struct StandIn {
    pub port: u16,
    key: String,
    shared: Arc<Shared>,
}

impl StandIn {
    /// A server accepting `key`, on a free loopback port.
    pub async fn start(key: &str) -> StandIn {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Shared {
            received: Mutex::default(),
            attempts: Mutex::default(),
            commands: Mutex::default(),
            tasks: Mutex::default(),
            closes: AtomicUsize::new(0),
            connections: AtomicUsize::new(0),
            changed: Notify::new(),
            frames: broadcast::Sender::new(FRAME_BACKLOG),
        };
        let standin = StandIn { port, key: key.to_owned(), shared: Arc::new(shared) };
        standin.accept(listener);
        standin
    }

    /// `ws://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("ws://127.0.0.1:{}", self.port)
    }

    fn accept(&self, listener: TcpListener) {
        let (shared, key) = (self.shared.clone(), self.key.clone());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let task = tokio::spawn(serve(stream, key.clone(), shared.clone()));
                shared.tasks.lock().unwrap().push(task);
            }
        });
        self.shared.tasks.lock().unwrap().push(task);
    }

    /// Kill the server: every connection is lost without a close frame, and
    /// nothing listens on the port.
    pub fn stop(&self) {
        for task in self.shared.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
        self.shared.commands.lock().unwrap().clear();
    }

    /// Stop, then listen on the same port again.
    pub async fn restart(&self) {
        self.stop();
        let address = format!("127.0.0.1:{}", self.port).parse().unwrap();
        let listener = loop {
            let socket = TcpSocket::new_v4().unwrap();
            socket.set_reuseaddr(true).unwrap();
            // The aborted listener closes as its task unwinds.
            match socket.bind(address) {
                Ok(()) => break socket.listen(16).unwrap(),
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        };
        self.accept(listener);
    }

    fn command(&self, command: Command) {
        let commands = self.shared.commands.lock().unwrap();
        commands.last().expect("a node is connected").send(command).unwrap();
    }

    /// Send `frame` on the latest connection.
    pub fn send(&self, frame: Value) {
        self.command(Command::Send(frame));
    }

    /// `execute_tool` of `tool` with `args`, as request `id`.
    pub fn execute(&self, id: &str, tool: &str, args: Value) {
        self.send(json!({"type": "execute_tool", "data": {"requestId": id, "toolName": tool, "toolArgs": args}}));
    }

    /// `cancel_tool` for request `id`.
    pub fn cancel(&self, id: &str) {
        self.send(json!({"type": "cancel_tool", "data": {"requestId": id}}));
    }

    /// Lose the latest connection without a close frame.
    pub fn drop_connection(&self) {
        self.command(Command::Drop);
    }

    /// Stop reading the latest connection: no pongs, nothing; the socket
    /// stays open (a half-open connection, as the node sees it).
    pub fn silence(&self) {
        self.command(Command::Silence);
    }

    /// Every connection attempt so far.
    pub fn attempts(&self) -> Vec<Attempt> {
        self.shared.attempts.lock().unwrap().clone()
    }

    /// How many close frames nodes sent.
    pub fn closes(&self) -> usize {
        self.shared.closes.load(Ordering::SeqCst)
    }

    /// Every frame received from now on, as it arrives.
    pub fn subscribe(&self) -> broadcast::Receiver<Received> {
        self.shared.frames.subscribe()
    }

    /// Every frame received so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    /// The first frame received that `matches`, waiting up to [`PATIENCE`].
    pub async fn wait_for(&self, what: &str, matches: impl Fn(&Received) -> bool) -> Received {
        self.wait_until(what, |received| received.iter().find(|r| matches(r)).cloned()).await
    }

    /// What `found` finds among the frames received so far, waiting up to
    /// [`PATIENCE`] for it.
    pub async fn wait_until<T>(&self, what: &str, found: impl Fn(&[Received]) -> Option<T>) -> T {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let changed = self.shared.changed.notified();
            if let Some(found) = found(&self.received()) {
                return found;
            }
            let left = deadline.checked_duration_since(Instant::now()).unwrap_or_else(|| panic!("no {what} within {PATIENCE:?}"));
            let _ = tokio::time::timeout(left.min(Duration::from_millis(50)), changed).await;
        }
    }

    /// The `n`th `register_tools` (from 1).
    pub async fn registration(&self, n: usize) -> Received {
        self.wait_until(&format!("registration {n}"), |received| {
            received.iter().filter(|r| r.kind() == "register_tools").nth(n - 1).cloned()
        })
        .await
    }

    /// The `data` of the `tool_result` for request `id`.
    pub async fn result(&self, id: &str) -> Value {
        let found = self
            .wait_for(&format!("tool_result {id}"), |r| r.kind() == "tool_result" && r.frame["data"]["requestId"] == id)
            .await;
        found.frame["data"].clone()
    }

    /// The names registered by `registration`.
    pub fn tool_names(registration: &Received) -> Vec<String> {
        let tools = registration.frame["data"]["tools"].as_array().expect("tools is an array");
        tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One connection: the key checked on the raw request line, then the
/// upgrade, `connection_ack`, and frames both ways.
async fn serve(stream: TcpStream, key: String, shared: Arc<Shared>) {
    let Some(path) = request_path(&stream).await else { return };
    // Everything after `VCP_Key=`, compared literally; a query is ignored.
    let given = path.strip_prefix("/vcp-distributed-server/VCP_Key=").map(|rest| rest.split('?').next().unwrap_or(rest));
    let accepted = given == Some(key.as_str());
    shared.attempts.lock().unwrap().push(Attempt { at: Instant::now(), accepted });
    if !accepted {
        return; // dropped before the upgrade, with no HTTP answer
    }
    let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else { return };
    let n = shared.connections.fetch_add(1, Ordering::SeqCst) + 1;
    let (commands, mut orders) = mpsc::unbounded_channel();
    shared.commands.lock().unwrap().push(commands);
    let ack = json!({"type": "connection_ack", "message": "welcome", "data": {"serverId": format!("dist-{n}"), "clientId": n.to_string()}});
    if ws.send(Message::text(ack.to_string())).await.is_err() {
        return;
    }
    let mut silent = false;
    loop {
        tokio::select! {
            frame = ws.next(), if !silent => match frame {
                Some(Ok(Message::Text(text))) => {
                    let frame: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                    let received = Received { connection: n, frame };
                    let _ = shared.frames.send(received.clone());
                    shared.received.lock().unwrap().push(received);
                    shared.changed.notify_waiters();
                }
                Some(Ok(Message::Close(_))) => {
                    shared.closes.fetch_add(1, Ordering::SeqCst);
                    shared.changed.notify_waiters();
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return,
            },
            order = orders.recv() => match order {
                Some(Command::Send(frame)) => {
                    if ws.send(Message::text(frame.to_string())).await.is_err() {
                        return;
                    }
                }
                Some(Command::Silence) => silent = true,
                Some(Command::Drop) | None => return,
            },
        }
    }
}

/// The path of the HTTP request line, read without consuming the request
/// (the upgrade reads it again).
async fn request_path(stream: &TcpStream) -> Option<String> {
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + PATIENCE;
    loop {
        let n = stream.peek(&mut buf).await.ok()?;
        let head = &buf[..n];
        if n == 0 || Instant::now() > deadline {
            return None;
        }
        if head.windows(4).any(|w| w == b"\r\n\r\n") || n == buf.len() {
            let text = String::from_utf8_lossy(head);
            return text.lines().next()?.split(' ').nth(1).map(str::to_owned);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}
