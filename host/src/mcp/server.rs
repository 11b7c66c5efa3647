//! [`McpServer`]: the registry's tools served to MCP clients.

use super::bounded_lines::BoundedLines;
use super::direct::Direct;
use super::front::Front;
use super::line_transport::LineTransport;
use super::session::Session;
use super::stdio_guard::StdioGuard;
use super::*;
use crate::agent::{LiveSettings, SettingsWatch};
use crate::pipeline::{Pipeline, Turn};
use rmcp::{Peer, RoleServer, ServiceExt};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// How long telling one client that the tools changed may take.
pub(super) const NOTIFY_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// Serves the registry's tools to MCP clients; clones share the server.
#[derive(Clone)]
pub struct McpServer {
    pub(super) shared: Arc<Shared>,
}

/// What every client's session shares.
pub(crate) struct Shared {
    pub(super) pipeline: Pipeline,
    pub(super) config: McpConfig,
    /// Every call's turn, but for its cancellation token and its settings
    /// (read from `settings` at each call, see [`Shared::turn`]): the
    /// `[mcp]` agent, narrowed by `[mcp]`'s filter.
    pub(super) turn: Turn,
    /// The agent's settings, as the console's page may change them.
    pub(super) settings: LiveSettings,
    /// The clients connected with sessions, told when the tools change.
    pub(super) peers: Mutex<Vec<Peer<RoleServer>>>,
    /// Who approves a client's calls, given the client's name, instead of
    /// its user through elicitation (a console, say).
    pub(super) approver_for: Option<ApproverFor>,
    /// The calls in flight, bounded in all and per client.
    pub(super) in_flight: Arc<bounds::InFlight>,
}

/// An approver for the calls of one MCP client, given the client's name.
pub type ApproverFor = Arc<dyn Fn(&str) -> Arc<dyn crate::approval::Approver> + Send + Sync>;

impl Shared {
    /// Whether clients are offered `spec`: the agent has tool calling on,
    /// and may call it.
    pub(super) fn offers(&self, spec: &crate::manifest::ToolSpec) -> bool {
        self.settings.with(|config| config.enabled && self.turn.offers_under(config, spec))
    }

    /// A call's turn: the agent's settings as they are now.
    pub(super) fn turn(&self) -> Turn {
        Turn { config: self.settings.get(), ..self.turn.clone() }
    }

    /// Wait until the tools offered may have changed: the registry
    /// reloaded with changes, or the agent's settings changed; `None` once
    /// the registry is gone.
    pub(super) fn tool_changes(&self) -> ToolChanges {
        ToolChanges { events: self.pipeline.executor().registry().subscribe(), settings: self.settings.watch() }
    }

    pub(super) fn remember_peer(&self, peer: Peer<RoleServer>) {
        let mut peers = self.peers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        peers.retain(|peer| !peer.is_transport_closed());
        peers.push(peer);
    }
}

/// What may change the tools a client is offered.
pub(super) struct ToolChanges {
    pub(super) events: tokio::sync::broadcast::Receiver<crate::registry::RegistryEvent>,
    pub(super) settings: SettingsWatch,
}

impl ToolChanges {
    /// The next change: `None` once the registry is gone.
    pub(super) async fn next(&mut self) -> Option<()> {
        loop {
            let event = tokio::select! {
                event = self.events.recv() => event,
                () = self.settings.changed() => return Some(()),
            };
            match event {
                Ok(event) if event.added.is_empty() && event.changed.is_empty() && event.removed.is_empty() => continue,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => return Some(()),
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

/// Serve one client as `session` on stdin and stdout, on this thread,
/// reading no further while it is owed the answers of twice
/// `calls_per_client` requests (see [`StdioGuard`]).
async fn serve_stdio_on(session: Session, calls_per_client: usize, shutdown: CancellationToken) -> Result<(), McpError> {
    let (input, output) = rmcp::transport::stdio_pipes();
    serve_lines(session, BoundedLines::new(input), output, calls_per_client, shutdown).await
}

/// Serve one client as `service`, its messages a line each on `input` and
/// its answers on `output`; once it is served, its calls are answered by
/// the transport ([`Direct`]).
pub(super) async fn serve_lines<S, R, W>(
    service: S,
    input: R,
    output: W,
    calls_per_client: usize,
    shutdown: CancellationToken,
) -> Result<(), McpError>
where
    S: rmcp::Service<RoleServer> + Clone,
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let guarded = StdioGuard::new(LineTransport::new(input, output), calls_per_client);
    let peer = Arc::new(std::sync::OnceLock::new());
    let lines = Direct::new(guarded, service.clone(), peer.clone(), shutdown.clone());
    match service.serve_with_ct(lines, shutdown).await {
        Ok(running) => {
            let _ = peer.set(running.peer().clone());
            running.waiting().await.map(|_| ()).map_err(|e| McpError::Transport(std::io::Error::other(e)))
        }
        Err(error) => Err(McpError::Initialize(error.to_string())),
    }
}

/// Why serving stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The client never completed the `initialize` handshake.
    #[error("the MCP client did not initialize: {0}")]
    Initialize(String),
    /// Reading from or writing to the transport failed.
    #[error("the MCP transport failed: {0}")]
    Transport(#[from] std::io::Error),
}

impl McpServer {
    /// A server running calls through `pipeline` (whose approver it
    /// replaces, per call, by the client's user or `config.unattended`), as
    /// `config` says.
    pub fn new(pipeline: Pipeline, config: McpConfig) -> Self {
        Self::build(pipeline, config, None)
    }

    /// A server whose calls that need approval are asked of the approver
    /// `approver_for` gives for the calling client (named as it introduced
    /// itself), whether or not the client supports elicitation: the
    /// console's desk, say.
    pub fn asking(pipeline: Pipeline, config: McpConfig, approver_for: ApproverFor) -> Self {
        Self::build(pipeline, config, Some(approver_for))
    }

    pub(super) fn build(pipeline: Pipeline, config: McpConfig, approver_for: Option<ApproverFor>) -> Self {
        let settings = LiveSettings::new(config.agent_settings.clone());
        let agent = config.agent_settings.clone();
        let turn = Turn { filter: Some(Arc::new(config.filter.clone())), ..Turn::for_agent(config.agent.clone(), agent) };
        let in_flight = Arc::new(bounds::InFlight::new(&config));
        let shared = Shared { pipeline, config, turn, settings, peers: Mutex::new(Vec::new()), approver_for, in_flight };
        McpServer { shared: Arc::new(shared) }
    }

    /// The configuration it serves by.
    pub fn config(&self) -> &McpConfig {
        &self.shared.config
    }

    /// The agent's settings as it serves: a change (the console's page
    /// turning a tool off, say) holds from the next list and call on, and
    /// every client listening is told its tools changed.
    pub fn settings(&self) -> &LiveSettings {
        &self.shared.settings
    }

    /// The names of the tools a client is offered now.
    pub fn offered_tools(&self) -> Vec<String> {
        let catalog = self.shared.pipeline.executor().registry().catalog();
        catalog.tools().filter(|(_, spec)| self.shared.offers(spec)).map(|(_, spec)| spec.name.clone()).collect()
    }

    /// Serve one client on standard input and output until it closes them
    /// or `shutdown` fires. Nothing else may write to stdout meanwhile.
    ///
    /// # Errors
    ///
    /// [`McpError::Initialize`] when the client never completes the handshake;
    /// [`McpError::Transport`] when reading or writing the pipes fails.
    ///
    /// On a runtime of several threads, the client is served on a thread
    /// of its own, which runs a call itself while it is the only one and
    /// hands calls made at once to the runtime's threads: a call alone
    /// wakes no other thread on its way.
    pub async fn serve_stdio(&self, shutdown: CancellationToken) -> Result<(), McpError> {
        let notifier = self.notify_tool_changes(shutdown.clone());
        let pool = tokio::runtime::Handle::current();
        let outcome = match pool.runtime_flavor() {
            tokio::runtime::RuntimeFlavor::CurrentThread => {
                let calls_per_client = self.shared.config.max_calls_per_client;
                serve_stdio_on(Session::new(self.shared.clone(), true), calls_per_client, shutdown.clone()).await
            }
            _ => self.serve_stdio_on_a_thread(pool, &shutdown).await,
        };
        notifier.abort();
        outcome
    }

    /// Serve stdio on a thread of its own, until `shutdown` fires or this
    /// future is dropped.
    async fn serve_stdio_on_a_thread(&self, pool: tokio::runtime::Handle, shutdown: &CancellationToken) -> Result<(), McpError> {
        let stop = shutdown.child_token();
        let _stop_when_dropped = stop.clone().drop_guard();
        let session = Session::on(Front::new(pool), self.shared.clone());
        let calls_per_client = self.shared.config.max_calls_per_client;
        let (done, outcome) = tokio::sync::oneshot::channel();
        std::thread::Builder::new().name("toolhost-mcp-stdio".into()).spawn(move || {
            let served = tokio::runtime::Builder::new_current_thread().enable_all().build().map(|runtime| {
                let outcome = runtime.block_on(serve_stdio_on(session, calls_per_client, stop));
                // Not waiting for a read of stdin that may never end (a
                // terminal's, off the pipe driver), nor for calls' leftovers.
                runtime.shutdown_background();
                outcome
            });
            let _ = done.send(served.map_err(McpError::Transport).and_then(|outcome| outcome));
        })?;
        outcome.await.unwrap_or_else(|_| Err(McpError::Transport(std::io::Error::other("the stdio thread panicked"))))
    }

    /// Tell every connected client when the tools it is offered may have
    /// changed, until `shutdown`.
    pub(super) fn notify_tool_changes(&self, shutdown: CancellationToken) -> tokio::task::JoinHandle<()> {
        let shared = self.shared.clone();
        let mut changes = shared.tool_changes();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    changed = changes.next() => if changed.is_none() { return },
                    () = shutdown.cancelled() => return,
                }
                let peers: Vec<Peer<RoleServer>> = {
                    let mut peers = shared.peers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                    peers.retain(|peer| !peer.is_transport_closed());
                    peers.clone()
                };
                // All at once, each bounded: a client that does not read its
                // stream cannot hold back the others' notices.
                let told = peers.iter().map(|peer| tokio::time::timeout(NOTIFY_WITHIN, peer.notify_tool_list_changed()));
                for result in futures::future::join_all(told).await {
                    match result {
                        Ok(Ok(())) => {}
                        Ok(Err(error)) => tracing::debug!("telling an MCP client its tools changed failed: {error}"),
                        Err(_) => tracing::debug!("an MCP client took no notice of its tools changing within {NOTIFY_WITHIN:?}"),
                    }
                }
            }
        })
    }
}
