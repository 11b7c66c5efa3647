//! How one agent uses tools: `[agents.NAME]` in `toolhost.toml`.
//!
//! ```toml
//! [agents.coder]
//! enabled = true
//! protocol = "json-block"
//! tool_toggles = { write_file = false }
//! require_confirmation = false
//! ```

use crate::manifest::ToolSpec;
use crate::protocol::ProtocolId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Whether calls run as soon as they are parsed or wait for a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum CallMode {
    /// Calls run as the permission policy allows.
    Auto,
    /// Every call waits for a person.
    Manual,
}

/// How one agent uses tools, as `[agents.NAME]` in `toolhost.toml` says.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct ToolCallConfig {
    /// Whether the agent calls tools at all. Default false.
    pub enabled: bool,
    /// Auto or manual. Default auto.
    pub mode: CallMode,
    /// Per-tool switches by tool name. Default none.
    pub tool_toggles: BTreeMap<String, bool>,
    /// Whether a tool without a toggle is on. Default true.
    pub default_tool_enabled: bool,
    /// Rounds of calls per reply chain, at least 1. Default 5.
    pub max_iterations: u32,
    /// Per-call timeout in milliseconds, 1 to 86 400 000 (a day), where it
    /// is shorter than the plugin's own. Default 30 000.
    pub timeout_ms: u64,
    /// Ask a person before every call. Default false.
    pub require_confirmation: bool,
    /// Run one round's calls in parallel. Default false.
    pub parallel_execution: bool,
    /// The text protocol. Default vcp.
    pub protocol: ProtocolId,
    /// The `[llm.NAME]` profile the agent talks to. Default none (the
    /// caller says).
    pub llm: Option<String>,
    /// The system prompt, a template: `{{tools}}` becomes the tools the
    /// agent may call. Default: [`DEFAULT_SYSTEM_PROMPT`].
    pub system_prompt: Option<String>,
    /// The system prompt's template in a file (relative to
    /// `toolhost.toml`; `~` and `$XDG_*` expand), instead of `system_prompt`.
    #[serde(deserialize_with = "crate::home_paths::expanded")]
    pub system_prompt_file: Option<PathBuf>,
}

/// The system prompt of an agent that sets none.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are a helpful assistant. You can use the tools below when they help; \
call them exactly as shown, then wait for their results before you answer.\n\n{{tools}}";

impl Default for ToolCallConfig {
    fn default() -> Self {
        ToolCallConfig {
            enabled: false,
            mode: CallMode::Auto,
            tool_toggles: BTreeMap::new(),
            default_tool_enabled: true,
            max_iterations: 5,
            timeout_ms: 30_000,
            require_confirmation: false,
            parallel_execution: false,
            protocol: ProtocolId::Vcp,
            llm: None,
            system_prompt: None,
            system_prompt_file: None,
        }
    }
}

impl ToolCallConfig {
    /// Tool calling on, every other setting at its default: what a door
    /// works with when it names no agent.
    pub fn on() -> Self {
        ToolCallConfig { enabled: true, ..ToolCallConfig::default() }
    }

    /// The system prompt's template: the file, the inline text, or the
    /// default.
    ///
    /// # Errors
    ///
    /// The I/O error of reading `system_prompt_file`, when it names one that
    /// cannot be read.
    pub fn system_prompt_template(&self) -> std::io::Result<String> {
        match (&self.system_prompt_file, &self.system_prompt) {
            (Some(file), _) => std::fs::read_to_string(file),
            (None, Some(text)) => Ok(text.clone()),
            (None, None) => Ok(DEFAULT_SYSTEM_PROMPT.to_owned()),
        }
    }

    /// Whether `tool` reaches the model under this configuration.
    pub fn offers(&self, tool: &ToolSpec) -> bool {
        tool.agent_callable && self.turned_on(&tool.name)
    }

    /// Whether `tool` is offered to another system (a VCP server) under
    /// this configuration: distributed-exposed, and turned on.
    pub fn exposes(&self, tool: &ToolSpec) -> bool {
        tool.distributed_exposed && self.turned_on(&tool.name)
    }

    fn turned_on(&self, tool: &str) -> bool {
        self.tool_toggles.get(tool).copied().unwrap_or(self.default_tool_enabled)
    }
}

/// An agent's settings while it serves, which the console's page may
/// change (its tool toggles): every door serving as the agent reads them
/// at each call and each tool list. Clones share them.
#[derive(Clone, Debug)]
pub struct LiveSettings {
    current: std::sync::Arc<tokio::sync::watch::Sender<ToolCallConfig>>,
}

/// Told when [`LiveSettings`] change.
#[derive(Debug)]
pub struct SettingsWatch {
    changes: tokio::sync::watch::Receiver<ToolCallConfig>,
}

impl LiveSettings {
    /// Settings starting as `config`.
    pub fn new(config: ToolCallConfig) -> Self {
        LiveSettings { current: std::sync::Arc::new(tokio::sync::watch::Sender::new(config)) }
    }

    /// A copy of the settings now.
    pub fn get(&self) -> ToolCallConfig {
        self.current.borrow().clone()
    }

    /// `read` of the settings now, without a copy.
    pub fn with<R>(&self, read: impl FnOnce(&ToolCallConfig) -> R) -> R {
        read(&self.current.borrow())
    }

    /// Change the settings; watchers are told when `change` says it
    /// changed something (returns true).
    pub fn update(&self, change: impl FnOnce(&mut ToolCallConfig) -> bool) {
        self.current.send_if_modified(change);
    }

    /// A watch told of every change from now on.
    pub fn watch(&self) -> SettingsWatch {
        SettingsWatch { changes: self.current.subscribe() }
    }

    /// Whether both are the same settings (not merely equal ones).
    pub fn same_as(&self, other: &LiveSettings) -> bool {
        std::sync::Arc::ptr_eq(&self.current, &other.current)
    }
}

impl SettingsWatch {
    /// Wait for the next change (changes made meanwhile count once).
    pub async fn changed(&mut self) {
        if self.changes.changed().await.is_err() {
            // Nobody holds the settings any more: they never change again.
            std::future::pending::<()>().await;
        }
    }
}
