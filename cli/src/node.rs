use super::GlobalOptions;
use super::output;
use crate::stops::Stops;
use anyhow::{Context, bail};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::signal::unix::{SignalKind, signal};
use toolhost::limits::vcp_node::DEFAULT_STATUS_FILE;
use toolhost::{
    Approver, CancellationToken, Executor, Policy, VcpNode,
    approval::TerminalApprover,
    config::DEFAULT_CONFIG_FILE,
    vcp::{NODE_CONCURRENCY, NodeState, NodeStatus, UnattendedApprover, VcpConfig},
};

/// Join a VCP server as a distributed node.
///
/// Join a VCP server as a distributed node: offer this host's
/// distributed-exposed tools (narrowed by `[vcp] tools`) to every agent on
/// the server, and run the calls it sends — checked, approved and
/// sandboxed like any other call, under the agent name `vcp:HOST:PORT`.
///
/// Runs until Ctrl-C, reconnecting with backoff whenever the connection is
/// lost. Ctrl-C stops taking calls and lets running ones finish within
/// `[vcp] shutdown_grace_ms`; a second Ctrl-C stops at once. SIGHUP rescans
/// the plugin directories, and changed tools are registered again on a new
/// connection.
///
/// The key is read from an environment variable (`VCP_KEY`, `[vcp] key_env`
/// or `--key-env`), never from the command line or the policy file. Calls
/// that need approval ask at the terminal; without one (or with
/// `--unattended`) `[vcp.unattended]` decides, and denies by default.
/// A tool that may ask is registered with a timeout that adds `[vcp]
/// approval_window_ms` (default 5 minutes) per question to its own limit,
/// so the server waits for your answer; a question the server gives up on
/// first (its `cancel_tool`) is withdrawn, and said so.
///
/// While it runs, the node keeps its status in a JSON file (`[vcp]
/// status_file`, default toolhost.node.json beside toolhost.toml);
/// `--status` prints it.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  VCP_KEY=… toolhost node --server ws://127.0.0.1:6005\n  toolhost node --console   # approve the server's calls in a local web page\n  toolhost node --status"
)]
pub(super) struct NodeCommand {
    /// The VCP server, ws:// or wss:// [default: `[vcp] server`]
    ///
    /// The VCP server, ws://HOST:PORT or wss://HOST:PORT [default: `[vcp]
    /// server`].
    #[arg(long, value_name = "URL")]
    server: Option<String>,
    /// The variable holding the key [default: `[vcp] key_env`]
    ///
    /// The environment variable holding the key [default: `[vcp] key_env`, else
    /// VCP_KEY].
    #[arg(long, value_name = "NAME")]
    key_env: Option<String>,
    /// The name to register as [default: `[vcp] node_name`]
    ///
    /// The name to register as [default: `[vcp] node_name`, else toolhost@HOST].
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Decide by `[vcp.unattended]`, even at a terminal
    ///
    /// Decide calls that need approval by `[vcp.unattended]` even at a terminal.
    #[arg(long)]
    unattended: bool,
    /// Ask a person at the console to approve calls that need it
    ///
    /// Ask a person at the console (a local web page, its URL printed on stderr)
    /// to approve the calls that need it; optionally where it listens [default:
    /// `[console] listen`]. `[console] approver = true` does the same.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, conflicts_with = "unattended")]
    console: Option<Option<std::net::SocketAddr>>,
    /// Do not reload when the plugin directories change
    ///
    /// Do not reload when the plugin directories change (SIGHUP still rescans
    /// them). A reload that changes the tools registers them again.
    #[arg(long)]
    no_watch: bool,
    /// Print the status a running node last wrote, and exit.
    #[arg(long)]
    status: bool,
    /// With --status: the status file's JSON.
    #[arg(long, requires = "status")]
    json: bool,
}

impl NodeCommand {
    pub(super) async fn execute(self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        if self.status {
            return self.show_status(global);
        }
        let policy = global.policy()?;
        let mut config = self.config(&policy, global)?;
        let approver: Arc<dyn Approver> = if !self.unattended && std::io::stdin().is_terminal() {
            Arc::new(TerminalApprover::stdio())
        } else {
            // Nobody is asked, so the server need not wait for anyone.
            config.approval_window = Duration::ZERO;
            Arc::new(UnattendedApprover::new(config.unattended))
        };
        let mut pipeline = global.pipeline_with(&policy, approver).await?;
        let concurrency = toolhost::executor::default_concurrency().max(NODE_CONCURRENCY);
        pipeline = pipeline.on_executor(Executor::with_concurrency(pipeline.executor().registry().clone(), concurrency));
        let shutdown = CancellationToken::new();
        let agent = config.agent();
        if let Some(desk) = super::console::for_door(self.console, "vcp", None, &policy, &pipeline, &shutdown).await? {
            // The node's tools are `[vcp] tools`: the page has no toggles for them.
            desk.attend("vcp", &agent, None, &shutdown);
            pipeline = pipeline.with_approver(desk.approver("vcp", &agent, &config.server));
            // The server waits as long as a person at the console has.
            config.approval_window = desk.approval_timeout(&policy);
        }
        let registry = pipeline.executor().registry().clone();
        if !self.no_watch {
            super::watch_plugins(&registry, &shutdown);
        }
        let node = VcpNode::from_env(config, pipeline)?;
        let config = node.config();
        output::note(format_args!(
            "joining {} as `{}` (key from ${}, calls as agent `{}`; status in {})",
            config.server,
            config.node_name,
            config.key_env,
            config.agent(),
            config.status_file.display()
        ));
        let mut running = tokio::spawn({
            let (node, shutdown) = (node.clone(), shutdown.clone());
            async move { node.run(shutdown).await }
        });
        let mut stops = Stops::new()?;
        let mut hangup = signal(SignalKind::hangup()).context("listening for SIGHUP")?;
        let mut changes = node.watch();
        let mut shown = changes.borrow_and_update().clone();
        loop {
            tokio::select! {
                _ = &mut running => break,
                () = stops.next() => {
                    if shutdown.is_cancelled() {
                        output::note("stopping now");
                        running.abort();
                        break;
                    }
                    let grace = config.shutdown_grace;
                    output::note(format_args!("shutting down: running calls have {} (Ctrl-C again to stop now)", seconds(grace)));
                    shutdown.cancel();
                }
                _ = hangup.recv() => super::rescan_plugins(&registry).await,
                Ok(()) = changes.changed() => {
                    let now = changes.borrow_and_update().clone();
                    if let Some(line) = transition(&shown, &now) {
                        output::note(line);
                    }
                    shown = now;
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    }

    /// `[vcp]` with the command line's overrides, or the defaults for
    /// `--server`.
    fn config(&self, policy: &Policy, global: &GlobalOptions) -> anyhow::Result<VcpConfig> {
        let mut config = match (policy.vcp.clone(), &self.server) {
            (Some(mut config), Some(server)) => {
                config.set_server(server)?;
                config
            }
            (Some(config), None) => config,
            (None, Some(server)) => {
                let mut config = VcpConfig::new(server)?;
                config.status_file = config_dir(global).join(DEFAULT_STATUS_FILE);
                config
            }
            (None, None) => {
                bail!("no VCP server: pass --server ws://HOST:PORT, or add [vcp] with server = \"…\" to {DEFAULT_CONFIG_FILE}")
            }
        };
        if let Some(env) = &self.key_env {
            config.key_env.clone_from(env);
        }
        if let Some(name) = &self.name {
            config.node_name.clone_from(name);
        }
        Ok(config)
    }

    fn show_status(&self, global: &GlobalOptions) -> anyhow::Result<ExitCode> {
        let path = match global.policy()?.vcp {
            Some(config) => config.status_file,
            None => config_dir(global).join(DEFAULT_STATUS_FILE),
        };
        let status = NodeStatus::read(&path).context("no node has written its status here (is one running with this config?)")?;
        if self.json {
            output::json(&status)?;
        } else {
            let rows = status_rows(&status, status.process_alive(), SystemTime::now());
            output::table(&rows)?;
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// The directory of the policy file in use, where the status file goes by
/// default.
fn config_dir(global: &GlobalOptions) -> PathBuf {
    let file = global.config_file().unwrap_or_else(|| PathBuf::from(DEFAULT_CONFIG_FILE));
    file.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_owned()
}

/// A line for a person when the connection's state or server id changed.
fn transition(before: &NodeStatus, now: &NodeStatus) -> Option<String> {
    // A new server id while connected is a new connection; elsewhere
    // only the state is told. A connection is told once the server has
    // named it: one that ends first (its id cleared) is not a new one.
    let new_connection = now.state == NodeState::Connected && before.server_id != now.server_id;
    if (before.state == now.state && !new_connection) || (now.state == NodeState::Connected && now.server_id.is_none()) {
        return None;
    }
    Some(match now.state {
        NodeState::Connected => format!(
            "connected to {} (serverId {}); registered {}",
            now.server,
            now.server_id.as_deref().unwrap_or("none"),
            tools(&now.registered)
        ),
        NodeState::Reconnecting => format!(
            "reconnecting{}: {}",
            now.next_attempt_unix_ms.map(|at| format!(" in {}", seconds(until(at, SystemTime::now())))).unwrap_or_default(),
            now.last_error.as_deref().unwrap_or("the connection ended")
        ),
        state => format!("{state}"),
    })
}

/// The status as rows of a two-column table.
fn status_rows(status: &NodeStatus, alive: Option<bool>, now: SystemTime) -> Vec<[String; 2]> {
    let process = match alive {
        Some(false) if status.state != NodeState::Stopped => {
            format!("{} (gone: this status is from before it ended)", status.pid)
        }
        _ => status.pid.to_string(),
    };
    let mut rows = vec![
        ["node".to_owned(), status.node_name.clone()],
        ["process".to_owned(), process],
        ["server".to_owned(), status.server.clone()],
        ["state".to_owned(), status.state.to_string()],
    ];
    if let Some(server_id) = &status.server_id {
        rows.push(["server id".to_owned(), server_id.clone()]);
    }
    rows.push(["registered".to_owned(), tools(&status.registered)]);
    rows.push(["registrations".to_owned(), status.registrations.to_string()]);
    rows.push([
        "calls".to_owned(),
        format!("{} served, {} failed, {} in flight", status.calls_served, status.calls_failed, status.calls_in_flight),
    ]);
    if let Some(error) = &status.last_error {
        rows.push(["last error".to_owned(), error.clone()]);
    }
    if let Some(at) = status.next_attempt_unix_ms {
        rows.push(["next attempt".to_owned(), format!("in {}", seconds(until(at, now)))]);
    }
    let age = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .saturating_sub(Duration::from_millis(status.updated_unix_ms));
    rows.push(["updated".to_owned(), format!("{} ago", seconds(age))]);
    rows
}

/// `a, b` or `no tools`.
fn tools(names: &[String]) -> String {
    if names.is_empty() { "no tools".to_owned() } else { names.join(", ") }
}

/// How long from `now` until `unix_ms`, zero when it has passed.
fn until(unix_ms: u64, now: SystemTime) -> Duration {
    let now = now.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    Duration::from_millis(unix_ms).saturating_sub(now)
}

/// `1.5 s`.
fn seconds(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(json: &str) -> NodeStatus {
        serde_json::from_str(json).unwrap()
    }

    const CONNECTED: &str = r#"{"node_name":"laptop","server":"ws://127.0.0.1:6005","pid":4242,"state":"connected",
        "server_id":"dist-7","client_id":"7","registered":["calculate"],"registrations":2,"calls_served":12,
        "calls_failed":1,"calls_in_flight":0,"last_error":null,"next_attempt_unix_ms":null,"updated_unix_ms":1000}"#;

    #[test]
    fn the_status_table_shows_connection_tools_and_calls() {
        let rows = status_rows(&status(CONNECTED), Some(true), SystemTime::UNIX_EPOCH + Duration::from_millis(3500));
        let text: Vec<String> = rows.iter().map(|[k, v]| format!("{k}: {v}")).collect();
        assert_eq!(
            text,
            [
                "node: laptop",
                "process: 4242",
                "server: ws://127.0.0.1:6005",
                "state: connected",
                "server id: dist-7",
                "registered: calculate",
                "registrations: 2",
                "calls: 12 served, 1 failed, 0 in flight",
                "updated: 2.5 s ago",
            ]
        );
        let gone = status_rows(&status(CONNECTED), Some(false), SystemTime::UNIX_EPOCH);
        assert_eq!(gone[1][1], "4242 (gone: this status is from before it ended)");
    }

    #[test]
    fn transitions_are_told_once() {
        let connected = status(CONNECTED);
        let mut reconnecting = connected.clone();
        reconnecting.state = NodeState::Reconnecting;
        reconnecting.server_id = None;
        reconnecting.last_error = Some("the connection to the VCP server ws://127.0.0.1:6005 was lost: reset".into());
        assert_eq!(transition(&connected, &connected), None);
        let mut closing = connected.clone();
        closing.state = NodeState::ShuttingDown;
        let mut closed = closing.clone();
        closed.server_id = None;
        assert_eq!(transition(&connected, &closing).unwrap(), "shutting-down");
        assert_eq!(transition(&closing, &closed), None, "told once");
        assert_eq!(
            transition(&reconnecting, &connected).unwrap(),
            "connected to ws://127.0.0.1:6005 (serverId dist-7); registered calculate"
        );
        assert_eq!(
            transition(&connected, &reconnecting).unwrap(),
            "reconnecting: the connection to the VCP server ws://127.0.0.1:6005 was lost: reset"
        );
        // A connection whose server id is cleared (it dropped) is no new one.
        let mut dropped = connected.clone();
        (dropped.server_id, dropped.registered) = (None, Vec::new());
        assert_eq!(transition(&connected, &dropped), None, "not \"connected … (serverId none)\"");
        assert_eq!(transition(&reconnecting, &dropped), None, "told once the server names it");
    }
}
