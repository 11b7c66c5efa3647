//! `[console]` in `toolhost.toml`: where the console listens, which agent
//! it works as, how long a pending approval waits for a person, and
//! whether the doors (`toolhost node`, `toolhost mcp`) ask through it.
//!
//! ```toml
//! [console]
//! listen = "127.0.0.1:7800"          # loopback by default; the token guards it either way
//! agent = "coder"                    # the agent whose tools, prompt and model the page works with (default: every agent-callable tool)
//! approval_timeout_ms = 300000       # a call or result nobody decides in time is denied, saying so (default: 5 minutes)
//! approver = true                    # `toolhost node` and `toolhost mcp` ask through the console, as with --console (default: false)
//! ```

use crate::config_error::ConfigError;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// Where the console listens when nothing says.
pub const DEFAULT_CONSOLE_LISTEN: &str = "127.0.0.1:7800";
/// How long a pending approval waits for a person when nothing says.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(300);
/// The longest `approval_timeout_ms` may be: a day.
const MAX_APPROVAL_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;

/// The console's settings: `[console]`, or the defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConsoleConfig {
    /// The address it listens on.
    pub listen: SocketAddr,
    /// The agent it works as; `None`: every agent-callable tool, the
    /// default protocol and system prompt.
    pub agent: Option<String>,
    /// How long a pending call or result waits for a decision.
    pub approval_timeout: Duration,
    /// Whether `toolhost node` and `toolhost mcp` open the console as
    /// their approver without `--console`.
    pub approver: bool,
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        ConsoleConfig {
            listen: DEFAULT_CONSOLE_LISTEN.parse().expect("a socket address"),
            agent: None,
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
            approver: false,
        }
    }
}

/// `[console]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConsoleSection {
    listen: Option<String>,
    agent: Option<String>,
    approval_timeout_ms: Option<u64>,
    #[serde(default)]
    approver: bool,
}

impl ConsoleSection {
    /// Checked; a bad value names its key, `console.…`.
    pub(crate) fn resolve(self, path: &Path) -> Result<ConsoleConfig, ConfigError> {
        let defaults = ConsoleConfig::default();
        let listen = match self.listen {
            Some(text) => text.parse().map_err(|_| ConfigError::Invalid {
                path: path.to_owned(),
                key: "console.listen".to_owned(),
                value: text.clone(),
                why: "expected an address and port, as 127.0.0.1:7800".to_owned(),
            })?,
            None => defaults.listen,
        };
        let approval_timeout = match self.approval_timeout_ms {
            Some(ms) if (1..=MAX_APPROVAL_TIMEOUT_MS).contains(&ms) => Duration::from_millis(ms),
            Some(ms) => {
                return Err(ConfigError::Range {
                    path: path.to_owned(),
                    key: "console.approval_timeout_ms".to_owned(),
                    value: ms.to_string(),
                    why: format!("expected 1 to {MAX_APPROVAL_TIMEOUT_MS}"),
                });
            }
            None => defaults.approval_timeout,
        };
        Ok(ConsoleConfig { listen, agent: self.agent, approval_timeout, approver: self.approver })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(text: &str) -> Result<ConsoleConfig, ConfigError> {
        toml::from_str::<ConsoleSection>(text).unwrap().resolve(Path::new("toolhost.toml"))
    }

    #[test]
    fn defaults_values_and_bad_values_that_name_their_key() {
        assert_eq!(resolve("").unwrap(), ConsoleConfig::default());
        let set = resolve("listen = \"127.0.0.1:9000\"\nagent = \"coder\"\napproval_timeout_ms = 1000\napprover = true").unwrap();
        assert_eq!(set.listen.port(), 9000);
        assert_eq!(set.agent.as_deref(), Some("coder"));
        assert_eq!(set.approval_timeout, Duration::from_secs(1));
        assert!(set.approver);
        let bad = resolve("listen = \"localhost\"").unwrap_err().to_string();
        assert!(bad.contains("console.listen"), "{bad}");
        let bad = resolve("approval_timeout_ms = 0").unwrap_err().to_string();
        assert!(bad.contains("console.approval_timeout_ms"), "{bad}");
    }
}
