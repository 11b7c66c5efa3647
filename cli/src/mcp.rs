use super::GlobalOptions;
use super::output;
use crate::stops::Stops;
use anyhow::Context;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use tokio::signal::unix::{SignalKind, signal};
use toolhost::{
    CancellationToken, DenyAll, McpServer,
    mcp::{ApproverFor, HttpOptions},
};

/// Serve the loaded tools to MCP clients.
///
/// Serve the loaded tools to MCP clients: on stdin/stdout (the default),
/// or over streamable HTTP at http://ADDR/mcp with --http ADDR.
///
/// Every call goes through the same steps as any other: its arguments are
/// checked, it is approved, and it runs in a fresh sandboxed instance.
/// A call that needs approval is asked of the client's user where the
/// client supports elicitation; elsewhere `[mcp] unattended` decides
/// (deny by default). Which tools are offered, and as which agent, is
/// `[mcp]` in toolhost.toml.
///
/// For a desktop client, one line: `toolhost mcp --plugins DIR`. Logs go
/// to stderr.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  toolhost mcp\n  toolhost mcp --http 127.0.0.1:8765\n  MCP_TOKEN=… toolhost mcp --http 127.0.0.1:8765 --token-env MCP_TOKEN"
)]
pub(super) struct McpCommand {
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio
    ///
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio, e.g.
    /// 127.0.0.1:8808.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// With --http: keep no sessions (replicas behind a load balancer)
    ///
    /// With --http: keep no sessions, so that several servers can serve one URL
    /// behind a load balancer. A 2026-07-28 client is still asked to approve
    /// calls (its retry may reach any replica sharing the key file); a
    /// handshake-era client is not (`[mcp] unattended` decides); no client
    /// is told of tool changes.
    #[arg(long, requires = "http")]
    stateless: bool,
    /// With --http: require the bearer token in this variable
    ///
    /// With --http: require `Authorization: Bearer TOKEN`, the token read from
    /// this environment variable.
    #[arg(long, value_name = "VAR", requires = "http")]
    token_env: Option<String>,
    /// With --http: also accept this Host name; repeatable
    ///
    /// With --http: also accept this Host name (besides localhost, 127.0.0.1, ::1
    /// and `[mcp] allowed_hosts`); repeatable.
    #[arg(long, value_name = "HOST", requires = "http")]
    allow_host: Vec<String>,
    /// Reload when the plugin directories change (the default)
    ///
    /// Reload when components are added, changed or removed in the plugin
    /// directories, and tell the clients their tools changed: the default.
    #[arg(long, overrides_with = "no_watch")]
    watch: bool,
    /// Do not watch the plugin directories (SIGHUP still rescans them).
    #[arg(long, overrides_with = "watch")]
    no_watch: bool,
    /// Ask a person at the console to approve calls that need it
    ///
    /// Ask a person at the console (a local web page, its URL printed on stderr)
    /// to approve the calls that need it, instead of the client's user; optionally
    /// where it listens [default: `[console] listen`]. `[console] approver = true`
    /// does the same.
    #[arg(long, value_name = "ADDR", num_args = 0..=1)]
    console: Option<Option<SocketAddr>>,
    /// Threads that run the calls [default: one per core]
    ///
    /// Threads that run the calls [default: one per core]. Over stdio, one
    /// more thread reads each request, runs its call when no other runs
    /// there and writes the answer, never waking another thread for a call
    /// alone; calls made at once run on these threads. With 1, that one
    /// thread does everything: one client's parallel calls share one core.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<u16>,
}

impl McpCommand {
    /// The runtime to serve on: `--threads` threads, or one per core.
    pub(super) fn runtime(&self) -> tokio::runtime::Builder {
        match self.threads.map(usize::from) {
            Some(1) => tokio::runtime::Builder::new_current_thread(),
            Some(threads) => {
                let mut builder = tokio::runtime::Builder::new_multi_thread();
                builder.worker_threads(threads);
                builder
            }
            None => tokio::runtime::Builder::new_multi_thread(),
        }
    }

    pub(super) async fn execute(self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        let stdio = self.http.is_none();
        match self.serve(global).await {
            // A desktop client shows only "connection closed" when its server
            // ends: its first request is answered with the reason first.
            Err(error) if stdio => {
                explain_to_client(&error);
                Err(error)
            }
            served => served,
        }
    }

    async fn serve(self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        let options = self.http_options()?;
        // The approver is the client's user, or `[mcp] unattended`, per call.
        let policy = global.policy()?;
        let pipeline = global.pipeline_with(&policy, Arc::new(DenyAll)).await?;
        let registry = pipeline.executor().registry().clone();
        let mut config = policy.mcp.clone();
        let shutdown = CancellationToken::new();
        let controlled = Some((config.agent.as_str(), &config.agent_settings));
        let desk = super::console::for_door(self.console, "mcp", controlled, &policy, &pipeline, &shutdown).await?;
        let server = match desk {
            Some(desk) => {
                let desk = Arc::new(desk);
                // A question at the console waits as long as it says.
                config.approval_timeout = desk.approval_timeout(&policy);
                let agent = config.agent.clone();
                let asking = desk.clone();
                let approver_for: ApproverFor = Arc::new(move |client: &str| asking.approver("mcp", &agent, client));
                let server = McpServer::asking(pipeline, config, approver_for);
                // The page's toggles for the agent act on what clients are offered.
                desk.attend("mcp", &server.config().agent, Some(server.settings().clone()), &shutdown);
                server
            }
            None => McpServer::new(pipeline, config),
        };
        if self.watch || !self.no_watch {
            super::watch_plugins(&registry, &shutdown);
        }
        let tools = server.offered_tools();
        let offered = if tools.is_empty() { "no tools".to_owned() } else { tools.join(", ") };
        let mut hangup = signal(SignalKind::hangup()).context("listening for SIGHUP")?;
        let served = {
            let server = server.clone();
            let shutdown = shutdown.clone();
            match self.http {
                None => {
                    output::note(format_args!("serving MCP on stdio as agent `{}`: {offered}", server.config().agent));
                    tokio::spawn(async move { server.serve_stdio(shutdown).await })
                }
                Some(addr) => {
                    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("listening on {addr}"))?;
                    let bound = listener.local_addr().context("reading the address listened on")?;
                    if !bound.ip().is_loopback() && options.token.is_none() {
                        output::alert(format_args!(
                            "warning: listening on {bound} without a token: whoever reaches this port may call the \
                             tools (give --token-env VAR)"
                        ));
                    }
                    output::note(format_args!(
                        "serving MCP at http://{bound}/mcp{} as agent `{}`: {offered}",
                        if options.stateless { " (stateless)" } else { "" },
                        server.config().agent
                    ));
                    tokio::spawn(async move { server.serve_http(listener, &options, shutdown).await })
                }
            }
        };
        tokio::pin!(served);
        let mut stops = Stops::new()?;
        loop {
            tokio::select! {
                result = &mut served => {
                    result.context("the MCP server stopped")??;
                    return Ok(ExitCode::SUCCESS);
                }
                stopped = stops.asked(&shutdown) => {
                    if let Some(at_once) = stopped {
                        return Ok(at_once);
                    }
                }
                _ = hangup.recv() => super::rescan_plugins(&registry).await,
            }
        }
    }

    fn http_options(&self) -> anyhow::Result<HttpOptions> {
        let token = match &self.token_env {
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(token) if token.trim().is_empty() => anyhow::bail!("${var} is empty: the bearer token must not be"),
                // HTTP drops the spaces around a header's value.
                Ok(token) if token.trim() != token => {
                    anyhow::bail!("${var} starts or ends with white space, which no client can send in a header")
                }
                Ok(token) => Some(token),
                Err(_) => anyhow::bail!("--token-env {var}: ${var} is not set (or not UTF-8)"),
            },
        };
        let mut options = HttpOptions::default();
        options.stateless = self.stateless;
        options.token = token;
        options.allowed_hosts = self.allow_host.clone();
        Ok(options)
    }
}

/// How long a server that could not start waits for its client's first
/// request, to answer it with why.
const EXPLAIN_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Answer the client's first request on stdin, if one comes soon, with a
/// JSON-RPC error saying why the server could not start, so that a
/// desktop client shows the reason rather than "connection closed". The
/// reason goes to stderr too, as every error does.
fn explain_to_client(error: &anyhow::Error) {
    let reason = format!("toolhost mcp could not start: {}", toolhost_support::error_chain::error_chain(error.as_ref()));
    let (sent, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufRead::read_line(&mut std::io::stdin().lock(), &mut line);
        let _ = sent.send(line);
    });
    let Ok(line) = received.recv_timeout(EXPLAIN_WITHIN) else { return };
    let id = serde_json::from_str::<serde_json::Value>(&line).ok().and_then(|request| request.get("id").cloned());
    let Some(id) = id else { return };
    let answer = serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32603, "message": reason } });
    println!("{answer}");
}
