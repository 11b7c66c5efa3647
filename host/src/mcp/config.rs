//! `[mcp]` in `toolhost.toml`: which tools an MCP client is offered, as
//! which agent, and what becomes of a call that needs approval when the
//! client cannot ask its user.
//!
//! ```toml
//! [mcp]
//! agent = "mcp"                      # calls are approved and audited as this agent; [agents.mcp] turns tools on or off (default "mcp")
//! tools = ["calculate", "files_*"]   # only tools whose names match one of these (default: every agent-callable tool)
//! tags = ["math"]                    # only tools with one of these tags (default: any)
//! levels = ["public", "moderate"]    # only tools of these levels (default: all three)
//! unattended = "deny"                # a call that needs approval when the client cannot be asked: deny (default) | allow
//! allowed_hosts = ["mcp.internal"]   # Host headers accepted over HTTP besides localhost, 127.0.0.1 and ::1
//! allowed_origins = ["https://app.example.com"]   # browser origins accepted over HTTP besides loopback pages (default: none)
//! max_sessions = 256                 # HTTP sessions kept at once; a new one past it is refused
//! approval_timeout_ms = 300000       # a question the client's user leaves unanswered this long denies the call, and is withdrawn (default: 5 minutes); a 2026-07-28 client's answer must come back within it
//! max_calls = 64                     # calls running or waiting for a person at once, in all; one past it is refused with a tool error
//! max_calls_per_client = 16          # the same, per client (a handshake-era session, stdio, or else its address); and subscriptions open per client
//! max_request_kib = 1024             # the largest HTTP request body; past it, 413
//! ```

use crate::agent::ToolCallConfig;
use crate::approval::UnattendedAction;
use crate::config_error::{ConfigError, in_range};
use crate::manifest::Permission;
use crate::tool_filter::ToolFilter;
use serde::Deserialize;
use std::path::Path;
use std::time::Duration;

/// Sessions kept at once by default; a session idle for five minutes (or
/// longer than `[mcp] approval_timeout_ms` or the agent's `timeout_ms`,
/// where one of them is longer) is closed, freeing its place.
pub const DEFAULT_MAX_SESSIONS: usize = 256;

/// The agent MCP calls are approved and audited as, by default.
pub const DEFAULT_MCP_AGENT: &str = "mcp";
/// How long a question to the client's user waits, by default.
pub const DEFAULT_MCP_APPROVAL_TIMEOUT: Duration = Duration::from_secs(300);
/// The longest `[mcp] approval_timeout_ms` may be: a day.
const MAX_APPROVAL_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;
/// The most `[mcp] max_sessions` may be.
const MAX_SESSIONS_LIMIT: usize = 100_000;
/// Calls in flight at once by default, in all.
pub const DEFAULT_MAX_CALLS: usize = 64;
/// Calls in flight at once by default, per client.
pub const DEFAULT_MAX_CALLS_PER_CLIENT: usize = 16;
/// The most `[mcp] max_calls` (and `max_calls_per_client`) may be.
const MAX_CALLS_LIMIT: usize = 10_000;
/// The largest HTTP request body by default.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 1 << 20;
/// The most `[mcp] max_request_kib` may be: 64 MiB.
const MAX_REQUEST_KIB_LIMIT: u64 = 64 << 10;
/// The Host names an HTTP server accepts by default: loopback only, so a
/// web page cannot reach it through DNS rebinding.
pub const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "::1"];

/// How the MCP server offers the tools: `[mcp]`, or the defaults.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpConfig {
    /// The agent its calls are approved and audited as. Change it with
    /// [`with_agent`](Self::with_agent), which sets its settings too.
    pub agent: String,
    /// That agent's settings (tools on or off, toggles, `timeout_ms`, as
    /// for any agent): its `[agents.NAME]` section, put here when the
    /// policy is assembled (`Policy::parse`); without that section, its
    /// tools on with the defaults: serving them is what the MCP server is
    /// started for.
    pub agent_settings: ToolCallConfig,
    /// Narrows the agent's tools (`tools`, `tags`, `levels`).
    pub filter: ToolFilter,
    /// What becomes of a call that needs approval when the client cannot
    /// ask its user (no elicitation, or a stateless server).
    pub unattended: UnattendedAction,
    /// Host headers accepted over HTTP besides [`LOOPBACK_HOSTS`].
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted over HTTP besides loopback pages; a
    /// request from any other origin is refused.
    pub allowed_origins: Vec<String>,
    /// HTTP sessions kept at once ([`DEFAULT_MAX_SESSIONS`]): a new session
    /// past it is refused until one closes or expires (idle five minutes, or longer where `approval_timeout` or the agent's `timeout_ms` is).
    pub max_sessions: usize,
    /// How long a question to the client's user (elicitation) waits for
    /// an answer; past it the call is denied and the question withdrawn.
    /// A 2026-07-28 client's retry with the answer must come within it:
    /// its resume token expires then.
    pub approval_timeout: Duration,
    /// Calls running or waiting for a person at once, in all
    /// ([`DEFAULT_MAX_CALLS`]); one past it is refused with a tool error
    /// naming the key.
    pub max_calls: usize,
    /// The same per client ([`DEFAULT_MAX_CALLS_PER_CLIENT`]): per session
    /// (or stdio connection), or per address for requests without one.
    /// Subscriptions (`subscriptions/listen`) are bounded by it too, apart
    /// from calls.
    pub max_calls_per_client: usize,
    /// The largest HTTP request body, in bytes ([`DEFAULT_MAX_REQUEST_BYTES`]).
    pub max_request_bytes: usize,
}

impl Default for McpConfig {
    fn default() -> Self {
        McpConfig {
            agent: DEFAULT_MCP_AGENT.to_owned(),
            agent_settings: unconfigured_agent(),
            filter: ToolFilter::default(),
            unattended: UnattendedAction::Deny,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_sessions: DEFAULT_MAX_SESSIONS,
            approval_timeout: DEFAULT_MCP_APPROVAL_TIMEOUT,
            max_calls: DEFAULT_MAX_CALLS,
            max_calls_per_client: DEFAULT_MAX_CALLS_PER_CLIENT,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
        }
    }
}

impl McpConfig {
    /// Calls approved and audited as `agent`, whose settings (its
    /// `[agents.NAME]` section, `policy.agents.get(name)`) are `settings`,
    /// or, when it has none, its tools on with the defaults.
    #[must_use]
    pub fn with_agent(mut self, agent: impl Into<String>, settings: Option<ToolCallConfig>) -> Self {
        self.agent = agent.into();
        self.agent_settings = settings.unwrap_or_else(unconfigured_agent);
        self
    }
}

/// The settings of an agent the policy does not configure.
fn unconfigured_agent() -> ToolCallConfig {
    ToolCallConfig::on()
}

/// `[mcp]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct McpSection {
    agent: Option<String>,
    tools: Option<Vec<String>>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    levels: Vec<String>,
    unattended: Option<UnattendedAction>,
    #[serde(default)]
    allowed_hosts: Vec<String>,
    #[serde(default)]
    allowed_origins: Vec<String>,
    max_sessions: Option<usize>,
    approval_timeout_ms: Option<u64>,
    max_calls: Option<u64>,
    max_calls_per_client: Option<u64>,
    max_request_kib: Option<u64>,
}

impl McpSection {
    /// Checked; a bad value names its key, `mcp.…`.
    pub(crate) fn resolve(self, path: &Path) -> Result<McpConfig, ConfigError> {
        let invalid = |key: &str, value: &str, why: &str| ConfigError::Invalid {
            path: path.to_owned(),
            key: format!("mcp.{key}"),
            value: value.to_owned(),
            why: why.to_owned(),
        };
        let agent = self.agent.unwrap_or_else(|| DEFAULT_MCP_AGENT.to_owned());
        if agent.trim().is_empty() {
            return Err(invalid("agent", &agent, "expected an agent name"));
        }
        let levels = self
            .levels
            .iter()
            .map(|level| match level.as_str() {
                "public" => Ok(Permission::Public),
                "moderate" => Ok(Permission::Moderate),
                "sensitive" => Ok(Permission::Sensitive),
                _ => Err(invalid("levels", level, "expected public, moderate or sensitive")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut filter = ToolFilter::default().tags(&self.tags).levels(&levels);
        if let Some(tools) = &self.tools {
            filter =
                filter.names(tools).map_err(|(pattern, why)| invalid("tools", &pattern, &format!("not a pattern: {why}")))?;
        }
        for origin in &self.allowed_origins {
            if !(origin.starts_with("http://") || origin.starts_with("https://")) {
                return Err(invalid("allowed_origins", origin, "expected scheme://host[:port], as https://app.example.com"));
            }
        }
        let max_sessions = self.max_sessions.unwrap_or(DEFAULT_MAX_SESSIONS);
        if !(1..=MAX_SESSIONS_LIMIT).contains(&max_sessions) {
            return Err(ConfigError::Range {
                path: path.to_owned(),
                key: "mcp.max_sessions".to_owned(),
                value: max_sessions.to_string(),
                why: format!("expected 1 to {MAX_SESSIONS_LIMIT}"),
            });
        }
        let approval_timeout = match self.approval_timeout_ms {
            Some(ms) => Duration::from_millis(in_range(path, "mcp.approval_timeout_ms", ms, 1..=MAX_APPROVAL_TIMEOUT_MS)?),
            None => DEFAULT_MCP_APPROVAL_TIMEOUT,
        };
        let max_calls =
            in_range(path, "mcp.max_calls", self.max_calls.unwrap_or(DEFAULT_MAX_CALLS as u64), 1..=MAX_CALLS_LIMIT as u64)?;
        let max_calls_per_client = in_range(
            path,
            "mcp.max_calls_per_client",
            self.max_calls_per_client.unwrap_or(DEFAULT_MAX_CALLS_PER_CLIENT as u64),
            1..=MAX_CALLS_LIMIT as u64,
        )?;
        let max_request_kib = in_range(
            path,
            "mcp.max_request_kib",
            self.max_request_kib.unwrap_or((DEFAULT_MAX_REQUEST_BYTES >> 10) as u64),
            1..=MAX_REQUEST_KIB_LIMIT,
        )?;
        Ok(McpConfig {
            approval_timeout,
            max_sessions,
            max_calls: max_calls as usize,
            max_calls_per_client: max_calls_per_client as usize,
            max_request_bytes: (max_request_kib as usize) << 10,
            agent,
            agent_settings: unconfigured_agent(),
            filter,
            unattended: self.unattended.unwrap_or_default(),
            allowed_hosts: self.allowed_hosts,
            allowed_origins: self.allowed_origins,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(toml_text: &str) -> Result<McpConfig, ConfigError> {
        toml::from_str::<McpSection>(toml_text).unwrap().resolve(Path::new("toolhost.toml"))
    }

    #[test]
    fn defaults_and_bad_values_name_their_key() {
        assert_eq!(resolve("").unwrap(), McpConfig::default());
        let config = resolve("agent = \"desk\"\ntools = [\"calc*\"]\nlevels = [\"public\"]\nunattended = \"allow\"").unwrap();
        assert_eq!((config.agent.as_str(), config.unattended), ("desk", UnattendedAction::Allow));
        let error = resolve("levels = [\"safe\"]").unwrap_err().to_string();
        assert!(error.contains("mcp.levels = \"safe\" is invalid: expected public, moderate or sensitive"), "{error}");
        let error = resolve("tools = [\"[\"]").unwrap_err().to_string();
        assert!(error.contains("mcp.tools = \"[\""), "{error}");
        let error = resolve("allowed_origins = [\"example.com\"]").unwrap_err().to_string();
        assert!(error.contains("mcp.allowed_origins"), "{error}");
        assert!(toml::from_str::<McpSection>("unknown = 1").is_err(), "unknown keys are refused");
        let error = resolve("max_sessions = 0").unwrap_err().to_string();
        assert!(error.contains("mcp.max_sessions = 0 is out of range"), "{error}");
        assert_eq!(resolve("approval_timeout_ms = 1500").unwrap().approval_timeout, Duration::from_millis(1500));
        let error = resolve("approval_timeout_ms = 0").unwrap_err().to_string();
        assert!(error.contains("mcp.approval_timeout_ms = 0 is out of range"), "{error}");
        let bounded = resolve("max_calls = 8\nmax_calls_per_client = 2\nmax_request_kib = 64").unwrap();
        assert_eq!((bounded.max_calls, bounded.max_calls_per_client, bounded.max_request_bytes), (8, 2, 64 << 10));
        for (key, value) in [("max_calls", "0"), ("max_calls_per_client", "100000"), ("max_request_kib", "0")] {
            let error = resolve(&format!("{key} = {value}")).unwrap_err().to_string();
            assert!(error.contains(&format!("mcp.{key} = {value} is out of range")), "{error}");
        }
    }
}
