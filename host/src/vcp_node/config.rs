//! `[vcp]` in `toolhost.toml`: which VCP server to join, as whom, with
//! which tools, and how. Every default and fixed limit of the node is a
//! constant here.
//!
//! ```toml
//! [vcp]
//! server = "ws://127.0.0.1:6005"      # ws:// or wss://; the key is never written here
//! key_env = "VCP_KEY"                 # the environment variable holding the key (default VCP_KEY)
//! node_name = "laptop"                # the serverName it registers as (default toolhost@<host name>)
//! tools = ["calculate"]               # narrows the distributed-exposed tools (default: all of them)
//! status_file = "toolhost.node.json"  # where a running node writes its status (default: beside this file)
//! serve_dirs = ["shared"]             # internal_request_file serves files only from these (default: none)
//! max_file_kib = 8192                 # the largest file it serves (default 8 MiB)
//! ping_interval_ms = 20_000           # a WebSocket ping this often; silence for two intervals drops the connection
//! shutdown_grace_ms = 5_000           # on Ctrl-C, how long running calls may finish before they are cancelled
//! write_timeout_ms = 10_000           # a server that takes no write this long is left, and rejoined
//! approval_window_ms = 300_000        # a person's time to answer each question a call may put (default 5 min)
//!
//! [vcp.unattended]                    # a call that needs approval while no person is attached
//! moderate = "deny"                   # deny (default) | allow
//! sensitive = "deny"                  # deny (default) | allow
//!
//! [vcp.reconnect]                     # exponential backoff with jitter between attempts
//! initial_ms = 500
//! max_ms = 5_000
//! ```

use crate::approval::{Unattended, UnattendedAction};
use crate::config_error::{ConfigError, in_range};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The environment variable the key is read from by default.
pub const DEFAULT_KEY_ENV: &str = "VCP_KEY";
/// The status file's name by default, beside `toolhost.toml`.
pub const DEFAULT_STATUS_FILE: &str = "toolhost.node.json";
/// The first wait before reconnecting, by default; each failed attempt
/// doubles it, up to [`DEFAULT_RECONNECT_MAX`].
pub const DEFAULT_RECONNECT_INITIAL: Duration = Duration::from_millis(500);
/// The longest step between attempts, by default: each wait is a random
/// point between half the step and the step, so a node is back within 5 s
/// of its server, and nodes restarted together do not knock together.
pub const DEFAULT_RECONNECT_MAX: Duration = Duration::from_secs(5);
/// How often a ping is sent, by default. A connection silent for
/// [`SILENT_INTERVALS`] of these is taken for dead.
pub const DEFAULT_PING_INTERVAL: Duration = Duration::from_secs(20);
/// How long running calls may finish on shutdown, by default.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// The largest file `internal_request_file` serves, by default: it travels
/// base64-encoded in one frame.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 8 << 20;

/// Ping intervals without a frame from the server (a pong, anything) after
/// which the connection is taken for half-open and dropped.
pub const SILENT_INTERVALS: u32 = 2;
/// The most a connection attempt (TCP, TLS, the WebSocket upgrade) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most the server may take to send `connection_ack`.
pub const ACK_TIMEOUT: Duration = Duration::from_secs(10);
/// Calls one connection may have running or waiting for a slot; past it,
/// `execute_tool` is answered with an error at once.
pub const MAX_PENDING_CALLS: usize = 1024;
/// Added to a tool's own time limit in the `communication.timeout` it is
/// registered with, so that the node's error (naming the limit) reaches
/// the server before the server's own "timed out".
pub const SERVER_TIMEOUT_MARGIN: Duration = Duration::from_secs(1);
/// A connection that lasted this long resets the backoff: the server was
/// fine, so the next drop is retried quickly.
pub const STABLE_CONNECTION: Duration = Duration::from_secs(30);
/// The status file is rewritten at most this often while calls run.
pub const STATUS_WRITE_INTERVAL: Duration = Duration::from_millis(250);
/// The largest frame accepted from the server.
pub const MAX_FRAME_BYTES: usize = 16 << 20;
/// The bytes of calls one connection may hold: the requests running or
/// waiting, and the results not yet written. Past it, `execute_tool` is
/// answered with an error at once, and a finished call's result waits to
/// be queued. (The count alone, [`MAX_PENDING_CALLS`] frames of
/// [`MAX_FRAME_BYTES`], would allow 16 GiB.)
pub const MAX_PENDING_BYTES: usize = 64 << 20;
/// Files `internal_request_file` reads and encodes at once; more wait.
pub const FILES_AT_ONCE: usize = 2;
/// How long a person has to answer each approval question a call may
/// put, by default: the 5 minutes the VCP server gives its own approvals.
/// The server is told it in the timeout it waits for the call.
pub const DEFAULT_APPROVAL_WINDOW: Duration = Duration::from_secs(300);
/// How long one write to the server may take, by default: a server that
/// stops reading is left, and the node reconnects.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// After cancelling the calls left at the end of a grace period, how long
/// their (cancelled) results may take to be sent before the socket closes.
pub const CANCEL_FLUSH: Duration = Duration::from_secs(1);

/// How the node joins a VCP server: `[vcp]`, or [`VcpConfig::new`] and the
/// defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VcpConfig {
    /// The server, `ws://host:port` or `wss://…`, without the key path.
    pub server: String,
    /// The environment variable the key is read from.
    pub key_env: String,
    /// The `serverName` the node registers as.
    pub node_name: String,
    /// Narrows the distributed-exposed tools to these names; `None` offers
    /// all of them.
    pub tools: Option<Vec<String>>,
    /// What becomes of calls that need approval while nobody is attached.
    pub unattended: Unattended,
    /// Waits between connection attempts.
    pub reconnect: Reconnect,
    /// How often a ping is sent.
    pub ping_interval: Duration,
    /// How long running calls may finish on shutdown.
    pub shutdown_grace: Duration,
    /// How long one write to the server may take. Default
    /// [`DEFAULT_WRITE_TIMEOUT`].
    pub write_timeout: Duration,
    /// A person's time to answer each approval question a call may put
    /// (the call itself, then its result where the tool asks for that).
    /// Default [`DEFAULT_APPROVAL_WINDOW`]; zero when nobody is asked (an
    /// [`UnattendedApprover`](super::UnattendedApprover)). A tool that may
    /// put a question is registered with a timeout of its own limit, this
    /// window per question and [`SERVER_TIMEOUT_MARGIN`], so a person's
    /// thinking time does not count against the server's timeout; a
    /// question the server gives up on first is withdrawn when its
    /// `cancel_tool` comes.
    pub approval_window: Duration,
    /// The directories `internal_request_file` may serve files from; empty
    /// refuses every request.
    pub serve_dirs: Vec<PathBuf>,
    /// The largest file served, in bytes.
    pub max_file_bytes: u64,
    /// Where the running node writes its [`NodeStatus`](super::NodeStatus).
    pub status_file: PathBuf,
}

/// Exponential backoff between connection attempts: the wait starts at
/// `initial`, doubles per failed attempt up to `max`, and each wait is
/// drawn between half of it and all of it (jitter, so that nodes that lost
/// one server do not come back at the same instant).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reconnect {
    /// The first wait. Default [`DEFAULT_RECONNECT_INITIAL`].
    pub initial: Duration,
    /// The longest. Default [`DEFAULT_RECONNECT_MAX`].
    pub max: Duration,
}

impl Default for Reconnect {
    fn default() -> Self {
        Reconnect { initial: DEFAULT_RECONNECT_INITIAL, max: DEFAULT_RECONNECT_MAX }
    }
}

/// A server URL that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the VCP server URL {url:?} is invalid: {why}")]
#[non_exhaustive]
pub struct InvalidServerUrl {
    /// The URL given.
    pub url: String,
    /// What it must be.
    pub why: String,
}

/// The path a node connects to under the server URL; the key follows.
pub(super) const DISTRIBUTED_PATH: &str = "/vcp-distributed-server";

impl VcpConfig {
    /// Joining `server` with every default: the key from
    /// [`DEFAULT_KEY_ENV`], every distributed-exposed tool, unattended
    /// calls that need approval denied, no files served, the status file
    /// [`DEFAULT_STATUS_FILE`] in the working directory.
    ///
    /// # Errors
    ///
    /// An [`InvalidServerUrl`] when `server` is not a `ws://` or `wss://` URL a
    /// node can join.
    pub fn new(server: &str) -> Result<Self, InvalidServerUrl> {
        Ok(VcpConfig {
            server: server_url(server)?,
            key_env: DEFAULT_KEY_ENV.to_owned(),
            node_name: default_node_name(),
            tools: None,
            unattended: Unattended::default(),
            reconnect: Reconnect::default(),
            ping_interval: DEFAULT_PING_INTERVAL,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            write_timeout: DEFAULT_WRITE_TIMEOUT,
            approval_window: DEFAULT_APPROVAL_WINDOW,
            serve_dirs: Vec::new(),
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            status_file: PathBuf::from(DEFAULT_STATUS_FILE),
        })
    }

    /// Point at another server, checked as [`VcpConfig::new`] checks it.
    ///
    /// # Errors
    ///
    /// An [`InvalidServerUrl`], as [`VcpConfig::new`]; the server is then
    /// unchanged.
    pub fn set_server(&mut self, server: &str) -> Result<&mut Self, InvalidServerUrl> {
        self.server = server_url(server)?;
        Ok(self)
    }

    /// The agent name calls from this server are approved and audited
    /// under: `vcp:` and the server's host and port, e.g.
    /// `vcp:127.0.0.1:6005` (an `[[approval.rules]]` `agent`).
    pub fn agent(&self) -> String {
        let authority = self.server.split_once("://").map_or(self.server.as_str(), |(_, rest)| rest);
        format!("vcp:{}", authority.split('/').next().unwrap_or(authority))
    }

    /// Whether `server` names this configuration's server (as
    /// [`VcpConfig::new`] would write it).
    pub fn is_server(&self, server: &str) -> bool {
        server_url(server).is_ok_and(|url| url == self.server)
    }
}

/// `server` checked and written one way: a `ws://` or `wss://` URL with a
/// host, no query, no key, no trailing `/` or distributed-server path.
pub(super) fn server_url(server: &str) -> Result<String, InvalidServerUrl> {
    let invalid = |why: &str| InvalidServerUrl { url: server.to_owned(), why: why.to_owned() };
    let Some((scheme, rest)) = server.split_once("://") else {
        return Err(invalid("expected ws://HOST:PORT or wss://HOST:PORT"));
    };
    if scheme != "ws" && scheme != "wss" {
        return Err(invalid("expected the ws:// or wss:// scheme"));
    }
    if server.contains("VCP_Key") {
        return Err(invalid(
            "the key does not belong in the URL (configuration gets published): put it in the environment variable named by key_env",
        ));
    }
    if server.chars().any(|c| c.is_whitespace() || c.is_control() || c == '?' || c == '#') {
        return Err(invalid("expected no spaces, query or fragment"));
    }
    let rest = rest.trim_end_matches('/');
    let rest = rest.strip_suffix(DISTRIBUTED_PATH).unwrap_or(rest).trim_end_matches('/');
    if rest.split('/').next().is_none_or(str::is_empty) {
        return Err(invalid("expected a host"));
    }
    Ok(format!("{scheme}://{rest}"))
}

/// `toolhost@<host name>`, or `toolhost` where the host name is unknown.
fn default_node_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").or_else(|_| std::fs::read_to_string("/etc/hostname"));
    match host.as_deref().map(str::trim) {
        Ok(host) if !host.is_empty() => format!("toolhost@{host}"),
        _ => "toolhost".to_owned(),
    }
}

/// The longest `node_name`.
const MAX_NODE_NAME_CHARS: usize = 64;

/// `[vcp]` as the file spells it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct VcpSection {
    server: String,
    key_env: Option<String>,
    node_name: Option<String>,
    tools: Option<Vec<String>>,
    #[serde(default)]
    unattended: UnattendedSection,
    #[serde(default)]
    reconnect: ReconnectSection,
    ping_interval_ms: Option<u64>,
    shutdown_grace_ms: Option<u64>,
    write_timeout_ms: Option<u64>,
    approval_window_ms: Option<u64>,
    #[serde(default, deserialize_with = "crate::home_paths::expanded")]
    serve_dirs: Vec<PathBuf>,
    max_file_kib: Option<u64>,
    #[serde(default, deserialize_with = "crate::home_paths::expanded")]
    status_file: Option<PathBuf>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct UnattendedSection {
    moderate: Option<UnattendedAction>,
    sensitive: Option<UnattendedAction>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ReconnectSection {
    initial_ms: Option<u64>,
    max_ms: Option<u64>,
}

/// An hour: the most any of the node's waits may be set to.
const MAX_WAIT_MS: u64 = 3_600_000;

impl VcpSection {
    /// Checked, with relative paths resolved against the file's directory;
    /// a bad value names its key, `vcp.…`.
    pub(crate) fn resolve(self, path: &Path, resolve: &dyn Fn(PathBuf) -> PathBuf) -> Result<VcpConfig, ConfigError> {
        let invalid = |key: &str, value: &str, why: String| ConfigError::Invalid {
            path: path.to_owned(),
            key: format!("vcp.{key}"),
            value: value.to_owned(),
            why,
        };
        let millis = |key: &str, value: Option<u64>, default: Duration, min: u64| -> Result<Duration, ConfigError> {
            match value {
                None => Ok(default),
                Some(ms) => Ok(Duration::from_millis(in_range(path, &format!("vcp.{key}"), ms, min..=MAX_WAIT_MS)?)),
            }
        };
        let mut config = VcpConfig::new(&self.server).map_err(|e| invalid("server", &self.server, e.why))?;
        if let Some(env) = self.key_env {
            if env.is_empty() || env.contains(['=', '\0']) {
                return Err(invalid("key_env", &env, "expected the name of an environment variable".into()));
            }
            config.key_env = env;
        }
        if let Some(name) = self.node_name {
            if name.trim().is_empty() || name.chars().count() > MAX_NODE_NAME_CHARS || name.chars().any(char::is_control) {
                return Err(invalid("node_name", &name, format!("expected 1 to {MAX_NODE_NAME_CHARS} printable characters")));
            }
            config.node_name = name;
        }
        config.tools = self.tools;
        config.unattended = Unattended {
            moderate: self.unattended.moderate.unwrap_or_default(),
            sensitive: self.unattended.sensitive.unwrap_or_default(),
        };
        let initial = millis("reconnect.initial_ms", self.reconnect.initial_ms, DEFAULT_RECONNECT_INITIAL, 1)?;
        let max = millis("reconnect.max_ms", self.reconnect.max_ms, DEFAULT_RECONNECT_MAX.max(initial), 1)?;
        if max < initial {
            let value = max.as_millis().to_string();
            return Err(invalid(
                "reconnect.max_ms",
                &value,
                format!("expected at least reconnect.initial_ms ({})", initial.as_millis()),
            ));
        }
        config.reconnect = Reconnect { initial, max };
        config.ping_interval = millis("ping_interval_ms", self.ping_interval_ms, DEFAULT_PING_INTERVAL, 10)?;
        config.shutdown_grace = millis("shutdown_grace_ms", self.shutdown_grace_ms, DEFAULT_SHUTDOWN_GRACE, 0)?;
        config.write_timeout = millis("write_timeout_ms", self.write_timeout_ms, DEFAULT_WRITE_TIMEOUT, 10)?;
        config.approval_window = millis("approval_window_ms", self.approval_window_ms, DEFAULT_APPROVAL_WINDOW, 0)?;
        // Absolute, as the `file://` URLs they are compared with are: a
        // policy named by a relative path resolves to relative directories.
        config.serve_dirs =
            self.serve_dirs.into_iter().map(resolve).map(|dir| std::path::absolute(&dir).unwrap_or(dir)).collect();
        if let Some(kib) = self.max_file_kib {
            let most = (MAX_FRAME_BYTES as u64 * 3 / 4) >> 10;
            config.max_file_bytes = in_range(path, "vcp.max_file_kib", kib, 1..=most)? << 10;
        }
        config.status_file = resolve(self.status_file.unwrap_or_else(|| PathBuf::from(DEFAULT_STATUS_FILE)));
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Policy;

    fn parse(text: &str) -> Result<Option<VcpConfig>, ConfigError> {
        Policy::parse(text, Path::new("/etc/toolhost/toolhost.toml")).map(|policy| policy.vcp)
    }

    #[test]
    fn a_full_section_parses_and_resolves_paths() {
        let config = parse(
            r#"
            [vcp]
            server = "wss://vcp.example:6005/"
            key_env = "MY_VCP_KEY"
            node_name = "laptop"
            tools = ["calculate"]
            serve_dirs = ["shared", "/srv/files"]
            max_file_kib = 64
            ping_interval_ms = 1000
            shutdown_grace_ms = 0
            write_timeout_ms = 2500
            [vcp.unattended]
            moderate = "allow"
            [vcp.reconnect]
            initial_ms = 100
            max_ms = 800
            "#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(config.server, "wss://vcp.example:6005", "the trailing / is dropped");
        assert_eq!(config.key_env, "MY_VCP_KEY");
        assert_eq!(config.node_name, "laptop");
        assert_eq!(config.tools, Some(vec!["calculate".to_owned()]));
        assert_eq!(config.serve_dirs, [PathBuf::from("/etc/toolhost/shared"), PathBuf::from("/srv/files")]);
        assert_eq!(config.max_file_bytes, 64 << 10);
        assert_eq!(config.ping_interval, Duration::from_secs(1));
        assert_eq!(config.shutdown_grace, Duration::ZERO);
        assert_eq!(config.write_timeout, Duration::from_millis(2500));
        assert_eq!(config.unattended, Unattended { moderate: UnattendedAction::Allow, sensitive: UnattendedAction::Deny });
        assert_eq!(config.reconnect, Reconnect { initial: Duration::from_millis(100), max: Duration::from_millis(800) });
        assert_eq!(config.status_file, PathBuf::from("/etc/toolhost/toolhost.node.json"), "beside the config");
        assert_eq!(config.agent(), "vcp:vcp.example:6005");
    }

    #[test]
    fn defaults_deny_unattended_approval_and_serve_nothing() {
        let config = parse("[vcp]\nserver = \"ws://127.0.0.1:6005\"\n").unwrap().unwrap();
        assert_eq!(config.key_env, DEFAULT_KEY_ENV);
        assert_eq!(config.tools, None);
        assert_eq!(config.unattended, Unattended { moderate: UnattendedAction::Deny, sensitive: UnattendedAction::Deny });
        assert!(config.serve_dirs.is_empty());
        assert_eq!(config.reconnect, Reconnect::default());
        assert_eq!(parse("").unwrap(), None, "no section, no node");
    }

    #[test]
    fn bad_values_name_their_key() {
        let refused = |text: &str, says: &str| {
            let error = parse(text).unwrap_err().to_string();
            assert!(error.contains(says), "{error}");
        };
        refused(
            "[vcp]\nserver = \"http://x:1\"\n",
            "vcp.server = \"http://x:1\" is invalid: expected the ws:// or wss:// scheme",
        );
        refused("[vcp]\nserver = \"ws://x:1/vcp-distributed-server/VCP_Key=abc\"\n", "the key does not belong in the URL");
        refused("[vcp]\nserver = \"ws://\"\n", "expected a host");
        refused("[vcp]\nserver = \"ws://x\"\nkey = \"abc\"\n", "unknown field `key`");
        refused(
            "[vcp]\nserver = \"ws://x\"\n[vcp.unattended]\nmoderate = \"ask\"\n",
            "unknown variant `ask`, expected `deny` or `allow`",
        );
        refused("[vcp]\nserver = \"ws://x\"\n[vcp.reconnect]\ninitial_ms = 0\n", "vcp.reconnect.initial_ms = 0 is out of range");
        refused(
            "[vcp]\nserver = \"ws://x\"\n[vcp.reconnect]\ninitial_ms = 900\nmax_ms = 800\n",
            "vcp.reconnect.max_ms = \"800\" is invalid: expected at least reconnect.initial_ms (900)",
        );
        refused(
            "[vcp]\nserver = \"ws://x\"\nmax_file_kib = 100000\n",
            "vcp.max_file_kib = 100000 is out of range: expected 1 to 12288",
        );
        refused("[vcp]\nserver = \"ws://x\"\nnode_name = \"\"\n", "vcp.node_name = \"\" is invalid");
    }

    #[test]
    fn an_llm_profile_hands_over_only_to_the_server_vcp_joins() {
        let llm = "[llm.hub]\nbase_url = \"http://127.0.0.1:6005/v1\"\nmodel = \"m\"\nvcp_server = \"ws://127.0.0.1:6005/\"\n";
        let path = Path::new("/etc/toolhost/toolhost.toml");
        let joined = Policy::parse(&format!("[vcp]\nserver = \"ws://127.0.0.1:6005\"\n{llm}"), path).unwrap();
        assert_eq!(joined.llm["hub"].vcp_server.as_deref(), Some("ws://127.0.0.1:6005/"));
        let error = Policy::parse(llm, path).unwrap_err().to_string();
        assert!(error.contains("llm.hub.vcp_server = \"ws://127.0.0.1:6005/\" is invalid: expected a [vcp] section"), "{error}");
        let error = Policy::parse(&format!("[vcp]\nserver = \"ws://127.0.0.1:7000\"\n{llm}"), path).unwrap_err().to_string();
        assert!(error.contains("expected the server [vcp] joins (ws://127.0.0.1:7000)"), "{error}");
    }

    #[test]
    fn server_urls_are_written_one_way() {
        for (given, written) in [
            ("ws://127.0.0.1:6005", "ws://127.0.0.1:6005"),
            ("ws://127.0.0.1:6005/", "ws://127.0.0.1:6005"),
            ("ws://127.0.0.1:6005/vcp-distributed-server", "ws://127.0.0.1:6005"),
            ("wss://vcp.example/base/", "wss://vcp.example/base"),
        ] {
            assert_eq!(server_url(given).unwrap(), written, "{given}");
        }
        let config = VcpConfig::new("ws://127.0.0.1:6005").unwrap();
        assert!(config.is_server("ws://127.0.0.1:6005/"));
        assert!(!config.is_server("ws://127.0.0.1:6006"));
        assert!(server_url("ws://x:1?deviceName=a").is_err());
    }
}
