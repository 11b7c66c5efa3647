//! `toolhost console`, and the console `node` and `mcp` open with
//! `--console`: one local web page to try the tools and to approve calls.

use super::GlobalOptions;
use super::model::{self, ModelOptions};
use super::output;
use crate::stops::Stops;
use anyhow::Context;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use toolhost::{
    Approver, CancellationToken, Console, DenyAll, LlmClient, OpenAiClient, Pipeline, Policy, ToolCallConfig,
    agent::LiveSettings,
    console::{Announcement, ConsoleOptions, DEFAULT_CONSOLE_AGENT, RemoteDesk},
};

/// Open a local web page to try the tools, chat, and approve calls.
///
/// The console shows the loaded tools (turn them on or off for the
/// agent), previews the system prompt in each protocol, parses a pasted
/// reply, runs any tool from a form, chats with the agent's model, and
/// asks you to approve the calls and results that need it.
///
/// It prints its URL with an access token, as a notebook server does:
/// open that link (it sets a cookie); a request without the token is
/// refused. It listens on loopback unless told otherwise. Ctrl-C stops it.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  toolhost console\n  toolhost console --agent coder --base-url http://127.0.0.1:8080/v1\n  toolhost mcp --console   # approve an MCP client's calls in the page"
)]
pub(super) struct ConsoleCommand {
    /// Listen on ADDR [default: `[console] listen`, else 127.0.0.1:7800]
    ///
    /// Listen on ADDR [default: `[console] listen`, else 127.0.0.1:7800; port 0
    /// picks a free one].
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// The agent (`[agents.NAME]`) the page works as
    ///
    /// The agent (`[agents.NAME]`) whose tools, prompt and model the page works
    /// with [default: `[console] agent`, else every agent-callable tool].
    #[arg(long)]
    agent: Option<String>,
    #[command(flatten)]
    endpoint: ModelOptions,
    /// Do not reload when the plugin directories change.
    #[arg(long)]
    no_watch: bool,
}

impl ConsoleCommand {
    pub(super) async fn execute(self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        let policy = global.policy()?;
        let name = self.agent.as_deref().or(policy.console.agent.as_deref());
        let (agent, config) = model::agent(&policy, name, DEFAULT_CONSOLE_AGENT)?;
        let profile = self.endpoint.profile(&policy, &config)?;
        let model = format!("model `{}` at {}", profile.model, profile.base_url);
        let llm: Arc<dyn LlmClient> = Arc::new(OpenAiClient::new(profile).context("the model endpoint")?);
        let pipeline = global.pipeline_with(&policy, Arc::new(DenyAll)).await?;
        let shutdown = CancellationToken::new();
        if !self.no_watch {
            super::watch_plugins(pipeline.executor().registry(), &shutdown);
        }
        let mut options = ConsoleOptions::from_section(&policy.console, agent, config);
        options.llm = Some(llm);
        let listen = self.listen.unwrap_or(policy.console.listen);
        let (console, served) = open(pipeline, options, listen, false, &shutdown).await?;
        // Doors started with --console from now on ask here.
        let _announcement = announce(&console);
        output::note(format_args!("the chat talks to the {model}; Ctrl-C stops the console"));
        tokio::pin!(served);
        let mut stops = Stops::new()?;
        loop {
            tokio::select! {
                result = &mut served => {
                    result.context("the console stopped")?.context("the console stopped")?;
                    return Ok(ExitCode::SUCCESS);
                }
                stopped = stops.asked(&shutdown) => {
                    if let Some(at_once) = stopped {
                        return Ok(at_once);
                    }
                }
            }
        }
    }
}

/// Bind `listen`, serve a console for `pipeline` until `shutdown`, and
/// print its URL; the console, and the task serving it. With `fallback`,
/// a taken port gives way to a free one.
pub(super) async fn open(
    pipeline: Pipeline,
    options: ConsoleOptions,
    listen: SocketAddr,
    fallback: bool,
    shutdown: &CancellationToken,
) -> anyhow::Result<(Console, JoinHandle<std::io::Result<()>>)> {
    if listen.ip().is_unspecified() {
        anyhow::bail!(
            "the console cannot listen on {listen}: it answers only to the address it listens on, so name that \
             address (e.g. 192.168.1.5:{}), or keep the default, loopback",
            listen.port()
        );
    }
    let listener = match tokio::net::TcpListener::bind(listen).await {
        Err(error) if fallback && error.kind() == std::io::ErrorKind::AddrInUse => {
            output::note(format_args!("the console's port {} is taken (another console?): it takes a free one", listen.port()));
            tokio::net::TcpListener::bind(SocketAddr::new(listen.ip(), 0)).await
        }
        bound => bound,
    }
    .with_context(|| {
        format!("the console cannot listen on {listen} (another console there? --listen 127.0.0.1:0 picks a free port)")
    })?;
    let bound = listener.local_addr().context("reading the address the console listens on")?;
    if !bound.ip().is_loopback() {
        output::alert(format_args!(
            "warning: the console listens on {bound}, beyond this machine: anyone who has its URL can run tools and approve calls"
        ));
    }
    let console = Console::new(pipeline, options, bound);
    output::note(format_args!("console: open {}", console.url()));
    let served = {
        let (console, shutdown) = (console.clone(), shutdown.clone());
        tokio::spawn(async move { console.serve(listener, shutdown).await })
    };
    Ok((console, served))
}

/// Where a door's questions go: this user's console, open in another
/// process, or one the door opened.
pub(super) enum DoorDesk {
    Own(Console),
    Remote(RemoteDesk),
}

impl DoorDesk {
    /// An approver asking there for calls through `door`, as `agent`, from
    /// `caller`.
    pub(super) fn approver(&self, door: &str, agent: &str, caller: &str) -> Arc<dyn Approver> {
        match self {
            DoorDesk::Own(console) => Arc::new(console.approver(door, caller)),
            DoorDesk::Remote(remote) => Arc::new(remote.approver(door, agent, caller)),
        }
    }

    /// Say that `door` asks there as `agent`, until `shutdown`; with the
    /// `settings` it serves by, the page's toggles for the agent act on
    /// them.
    pub(super) fn attend(&self, door: &str, agent: &str, settings: Option<LiveSettings>, shutdown: &CancellationToken) {
        match self {
            DoorDesk::Own(console) => {
                console.serves(door, agent);
                if let Some(settings) = settings {
                    console.controls(agent, settings);
                }
            }
            DoorDesk::Remote(remote) => remote.attend(door, agent, settings, shutdown.clone()),
        }
    }

    /// How long a question waits there for a person.
    pub(super) fn approval_timeout(&self, policy: &Policy) -> Duration {
        match self {
            DoorDesk::Own(_) => policy.console.approval_timeout,
            DoorDesk::Remote(remote) => remote.approval_timeout(),
        }
    }
}

/// Where a door (`node`, `mcp`, `chat`) asks: `--console [ADDR]`, or
/// `[console] approver = true` (not for `chat`); `None` when neither asks. Without an address, the
/// console this user already has open takes the questions (a desktop
/// client starting its servers opens no page per server); with none open,
/// or with an address named, the door opens one, and announces it to the
/// doors started after it. A door whose agent's tools the page may toggle
/// gives its `agent` and `settings`: a page it opens works as that agent.
/// The door then says it is there with [`DoorDesk::attend`].
pub(super) async fn for_door(
    asked: Option<Option<SocketAddr>>,
    door: &str,
    controlled: Option<(&str, &ToolCallConfig)>,
    policy: &Policy,
    pipeline: &Pipeline,
    shutdown: &CancellationToken,
) -> anyhow::Result<Option<DoorDesk>> {
    // An address named on the command line is that address; the default
    // gives way when taken (an MCP client may start several servers).
    let (listen, fallback) = match asked {
        Some(Some(addr)) => (addr, false),
        Some(None) => (policy.console.listen, true),
        None if policy.console.approver => (policy.console.listen, true),
        None => return Ok(None),
    };
    if fallback && let Some(remote) = RemoteDesk::find().await {
        output::note(format_args!(
            "asking at the console already open at {} (process {}); its page lists this {door} door",
            remote.base(),
            remote.pid()
        ));
        return Ok(Some(DoorDesk::Remote(remote)));
    }
    let (console_agent, config) = match controlled {
        Some((agent, settings)) => (agent.to_owned(), settings.clone()),
        None => model::agent(policy, policy.console.agent.as_deref(), DEFAULT_CONSOLE_AGENT)?,
    };
    let options = ConsoleOptions::from_section(&policy.console, console_agent, config);
    let (console, served) = open(pipeline.clone(), options, listen, fallback, shutdown).await?;
    let announcement = announce(&console);
    // Calls keep coming to its desk: say so if nobody can reach it any more.
    let stopping = shutdown.clone();
    tokio::spawn(async move {
        let ended = served.await;
        drop(announcement);
        if !stopping.is_cancelled() {
            let why = match ended {
                Ok(Ok(())) => "it stopped".to_owned(),
                Ok(Err(error)) => error.to_string(),
                Err(error) => error.to_string(),
            };
            output::alert(format_args!("the console stopped ({why}): calls that need approval are refused from now on"));
        }
    });
    Ok(Some(DoorDesk::Own(console)))
}

/// Announce `console` to this user's doors started after it; a console
/// that cannot be announced still serves, and says why.
fn announce(console: &Console) -> Option<Announcement> {
    match console.announce() {
        Ok(announcement) => {
            tracing::debug!("the console is announced in {}", announcement.path().display());
            Some(announcement)
        }
        Err(error) => {
            output::note(format_args!("the console is not announced to other doors: {error}"));
            None
        }
    }
}
