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
//! max_waiting_kib = 16384            # what the calls and results waiting at the desk may hold in all; one more is refused (default: 16 MiB)
//! max_chat_kib = 16384               # what the chat's conversation may hold; past it, a new message is refused until it is reset (default: 16 MiB)
//! ```

use crate::config_error::{ConfigError, in_range};
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
/// What the desk may hold by default, in bytes.
pub const DEFAULT_MAX_WAITING_BYTES: usize = 16 << 20;
/// What the chat's conversation may hold by default, in bytes.
pub const DEFAULT_MAX_CHAT_BYTES: usize = 16 << 20;
/// The most either may be set to: 1 GiB.
const MAX_KIB: u64 = 1 << 20;

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
    /// What the calls and results waiting at the desk may hold in all, in
    /// bytes (their JSON as the page reads it).
    pub max_waiting_bytes: usize,
    /// What the chat's conversation may hold, in bytes.
    pub max_chat_bytes: usize,
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        ConsoleConfig {
            listen: DEFAULT_CONSOLE_LISTEN.parse().expect("a socket address"),
            agent: None,
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
            approver: false,
            max_waiting_bytes: DEFAULT_MAX_WAITING_BYTES,
            max_chat_bytes: DEFAULT_MAX_CHAT_BYTES,
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
    max_waiting_kib: Option<u64>,
    max_chat_kib: Option<u64>,
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
        let kib = |key: &str, value: Option<u64>, default: usize| match value {
            Some(kib) => in_range(path, key, kib, 1..=MAX_KIB).map(|kib| (kib as usize) << 10),
            None => Ok(default),
        };
        Ok(ConsoleConfig {
            listen,
            agent: self.agent,
            approval_timeout,
            approver: self.approver,
            max_waiting_bytes: kib("console.max_waiting_kib", self.max_waiting_kib, DEFAULT_MAX_WAITING_BYTES)?,
            max_chat_bytes: kib("console.max_chat_kib", self.max_chat_kib, DEFAULT_MAX_CHAT_BYTES)?,
        })
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
        let sized = resolve("max_waiting_kib = 64\nmax_chat_kib = 128").unwrap();
        assert_eq!((sized.max_waiting_bytes, sized.max_chat_bytes), (64 << 10, 128 << 10));
        let bad = resolve("max_chat_kib = 0").unwrap_err().to_string();
        assert!(bad.contains("console.max_chat_kib = 0 is out of range"), "{bad}");
    }
}
