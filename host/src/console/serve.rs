//! [`Console`]: the browser console, served.

use super::access::Access;
use super::agents::Agents;
use super::desk::Desk;
use super::doors::Doors;
use super::feed::Feed;
use super::*;
use crate::agent::{LiveSettings, ToolCallConfig};
use crate::discovery::PromptCache;
use crate::llm::LlmClient;
use crate::pipeline::Pipeline;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::middleware::Next;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The most a door's hello may hold (its toggles): it may be held open.
pub(super) const HELLO_BYTES: usize = 256 << 10;
/// The largest body of any other request (axum's default, said here so
/// that the check before reading agrees with the extractors).
const MAX_BODY_BYTES: usize = 2 << 20;

/// A request announcing a body larger than any the console reads is `413`
/// at once (its extractors would else wait for it, up to the read timeout).
async fn refuse_announced_too_large(request: Request, next: Next) -> axum::response::Response {
    if crate::http_server::announced_past(&request, MAX_BODY_BYTES) {
        let why = format!("a request's body may be at most {} KiB\n", MAX_BODY_BYTES >> 10);
        return (axum::http::StatusCode::PAYLOAD_TOO_LARGE, why).into_response();
    }
    next.run(request).await
}

/// The agent the console works as when none is named.
pub const DEFAULT_CONSOLE_AGENT: &str = "console";

/// What a console works with besides its pipeline.
#[derive(Clone)]
#[non_exhaustive]
pub struct ConsoleOptions {
    /// The agent: its name (remembered approvals, audit records) and
    /// settings (tools, protocol, system prompt). The page edits a copy of
    /// the settings (the policy file is not written), and the settings of
    /// each door's agent it is given ([`Console::controls`]).
    pub agent: String,
    /// Its settings.
    pub config: ToolCallConfig,
    /// How long a pending call or result waits for a person.
    pub approval_timeout: Duration,
    /// The model the chat talks to; `None`: the chat says there is none.
    pub llm: Option<Arc<dyn LlmClient>>,
    /// What the requests waiting at the desk may hold in all, in bytes
    /// (`[console] max_waiting_kib`).
    pub max_waiting_bytes: usize,
    /// What the chat's conversation may hold, in bytes (`[console]
    /// max_chat_kib`).
    pub max_chat_bytes: usize,
}

impl Default for ConsoleOptions {
    fn default() -> Self {
        ConsoleOptions {
            agent: DEFAULT_CONSOLE_AGENT.to_owned(),
            config: ToolCallConfig::on(),
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
            llm: None,
            max_waiting_bytes: config::DEFAULT_MAX_WAITING_BYTES,
            max_chat_bytes: config::DEFAULT_MAX_CHAT_BYTES,
        }
    }
}

impl ConsoleOptions {
    /// Options for `agent` with `config`, with the limits a `[console]`
    /// section sets and no model.
    pub fn from_section(section: &ConsoleConfig, agent: impl Into<String>, config: ToolCallConfig) -> Self {
        ConsoleOptions {
            agent: agent.into(),
            config,
            approval_timeout: section.approval_timeout,
            llm: None,
            max_waiting_bytes: section.max_waiting_bytes,
            max_chat_bytes: section.max_chat_bytes,
        }
    }
}

/// The console for one registry; clones share it.
#[derive(Clone)]
pub struct Console {
    pub(super) shared: Arc<Shared>,
}

/// What every request shares.
pub(crate) struct Shared {
    /// Calls run here, asked at the console's desk.
    pub(super) pipeline: Pipeline,
    pub(super) access: Access,
    pub(super) addr: SocketAddr,
    pub(super) feed: Feed,
    pub(super) desk: Arc<Desk>,
    /// The doors whose questions come to the desk.
    pub(super) doors: Doors,
    /// The agents the page works with: its own, and its doors'.
    pub(super) agents: Agents,
    pub(super) prompts: Arc<PromptCache>,
    pub(super) chat: chat::ChatRoom,
    /// Fired when the console shuts down: ends its own calls' waits.
    pub(super) closing: CancellationToken,
}

impl Shared {
    /// Shutting down: stop the chat's turn and the Run form's calls, end
    /// every event stream, and answer whatever waits at the desk as
    /// refused, so that nothing waits for a page that can no longer
    /// connect.
    pub(super) fn close(&self) {
        self.closing.cancel();
        self.chat.stop();
        self.feed.close();
        self.desk.close();
    }
}

impl Console {
    /// A console for `pipeline`'s registry, to be served at `addr` (bind
    /// the listener first: the token's cookie is named by its port). Its
    /// own calls (the Run panel, the chat) are approved at its desk.
    pub fn new(pipeline: Pipeline, options: ConsoleOptions, addr: SocketAddr) -> Self {
        let feed = Feed::new();
        let desk = Arc::new(Desk::new(feed.clone(), options.approval_timeout, options.max_waiting_bytes));
        let pipeline = pipeline.with_approver(Arc::new(desk.approver("console", "this page")));
        let shared = Shared {
            pipeline,
            access: Access::new(addr),
            addr,
            feed,
            desk,
            doors: Doors::default(),
            agents: Agents::new(&options.agent, LiveSettings::new(options.config)),
            prompts: Arc::new(PromptCache::new()),
            chat: chat::ChatRoom::new(options.llm, options.max_chat_bytes),
            closing: CancellationToken::new(),
        };
        shared.doors.seen("console", std::process::id(), shared.agents.own_name(), Some("this page"));
        Console { shared: Arc::new(shared) }
    }

    /// The address to open: it carries the token, which sets the cookie.
    pub fn url(&self) -> String {
        format!("http://{}/?token={}", self.shared.addr, self.shared.access.token())
    }

    /// The token (for clients that send `Authorization: Bearer TOKEN`).
    pub fn token(&self) -> &str {
        self.shared.access.token()
    }

    /// An approver that asks at this console, for calls arriving through
    /// `door` (`mcp`, `vcp`, …) from `caller`: the page shows both, the
    /// arguments, and the time left.
    pub fn approver(&self, door: &str, caller: &str) -> ConsoleApprover {
        self.shared.doors.seen(door, std::process::id(), "", Some(caller));
        self.shared.desk.approver(door, caller)
    }

    /// Say that `door` of this process asks here for calls of `agent`: the
    /// page lists it (doors of other processes say so themselves).
    pub fn serves(&self, door: &str, agent: &str) {
        self.shared.doors.seen(door, std::process::id(), agent, None);
    }

    /// Let the page's tool toggles act on `settings`, which a door of this
    /// process serves `agent` by: the page offers the agent by name (its
    /// own agent, when that has the name), and a tool turned off there is
    /// off for the door's clients from their next list and call on.
    pub fn controls(&self, agent: &str, settings: LiveSettings) {
        self.shared.agents.control(agent, settings);
        self.shared.feed.publish("toggles", &serde_json::json!({}));
    }

    /// Announce this console to this user's other processes (see
    /// [`announcement_path`]), so a door they start with `--console` asks
    /// here instead of opening a page of its own; the announcement is
    /// withdrawn when the returned value is dropped.
    ///
    /// # Errors
    ///
    /// When no home for the file is known, or it cannot be written.
    pub fn announce(&self) -> std::io::Result<Announcement> {
        let path = announcement_path()
            .ok_or_else(|| std::io::Error::other("neither XDG_RUNTIME_DIR, XDG_STATE_HOME nor HOME is set"))?;
        let announced = announce::Announced {
            base: format!("http://{}", self.shared.addr),
            token: self.shared.access.token().to_owned(),
            pid: std::process::id(),
        };
        Announcement::write(path, &announced)
    }

    /// The web application: the page, its API and its event stream, behind
    /// the token and origin checks.
    pub(crate) fn router(&self) -> Router {
        let shared = self.shared.clone();
        let api = Router::new()
            .route("/api/events", get(workbench::events))
            .route("/api/state", get(workbench::state))
            .route("/api/tools", get(workbench::tools))
            .route("/api/toggles", post(workbench::toggle))
            .route("/api/prompt", get(workbench::prompt))
            .route("/api/parse", post(workbench::parse))
            .route("/api/run", post(workbench::run))
            .route("/api/pending", get(workbench::pending))
            .route("/api/pending/{id}", post(workbench::decide))
            .route("/api/desk", get(remote::desk_info))
            .route("/api/desk/ask", post(remote::ask))
            .route("/api/doors", get(remote::doors).post(remote::hello).layer(DefaultBodyLimit::max(HELLO_BYTES)))
            .route("/api/chat", get(chat::history).post(chat::send))
            .route("/api/chat/stop", post(chat::stop))
            .route("/api/chat/reset", post(chat::reset))
            .route("/api/approvals", get(records::remembered).delete(records::revoke))
            .route("/api/audit", get(records::audit))
            .with_state(shared.clone());
        page::routes()
            .merge(api)
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
            .layer(axum::middleware::from_fn(refuse_announced_too_large))
            .layer(axum::middleware::from_fn(move |request: Request, next: Next| {
                let shared = shared.clone();
                async move { shared.access.guard(request, next).await }
            }))
    }

    /// Serve on `listener` until `shutdown` fires; then the chat's turn and
    /// the Run form's calls are cancelled, and whatever waits at the desk
    /// (from any door) is refused, saying the console closed.
    ///
    /// # Errors
    ///
    /// The I/O error of the listener, when serving it fails.
    pub async fn serve(&self, listener: tokio::net::TcpListener, shutdown: CancellationToken) -> std::io::Result<()> {
        let shared = self.shared.clone();
        let stopping = shutdown.clone();
        tokio::spawn(async move {
            stopping.cancelled().await;
            shared.close();
        });
        let served = crate::http_server::serve(listener, self.router(), shutdown).await;
        // However serving ended, nobody can reach the desk any more.
        self.shared.close();
        served
    }
}
