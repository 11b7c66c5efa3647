//! The agents whose settings the page shows and toggles: the console's
//! own, each door's of this process (the very settings that door serves
//! by), and each door's of another process (a copy here, which that door
//! keeps in step with, see `remote`). One agent name is one agent: two
//! doors serving as `mcp` share its toggles.

use super::doors::{DOOR_SILENCE, cut};
use crate::agent::{LiveSettings, ToolCallConfig};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;
use tokio::sync::{Semaphore, SemaphorePermit};

/// Agents of other processes kept at once; past it the one heard from
/// least recently makes room.
const MAX_REMOTE_AGENTS: usize = 64;
/// Hellos held open at once, waiting for the page to change toggles.
const MAX_HELD_HELLOS: usize = 64;
/// The most toggles a door may report.
const MAX_TOGGLES: usize = 4096;
/// The longest tool name a toggle may name.
const MAX_TOOL_NAME_BYTES: usize = 256;

/// What the page changes of an agent's settings, as it travels between a
/// console and a door of another process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Toggles {
    default_tool_enabled: bool,
    tool_toggles: BTreeMap<String, bool>,
}

impl Toggles {
    /// Why a door's report is refused, if it is: too many toggles, or a
    /// name no tool could have.
    pub(super) fn check(&self) -> Result<(), String> {
        if self.tool_toggles.len() > MAX_TOGGLES {
            return Err(format!("more than {MAX_TOGGLES} toggles"));
        }
        match self.tool_toggles.keys().find(|name| name.len() > MAX_TOOL_NAME_BYTES) {
            Some(_) => Err(format!("a toggle names a tool of more than {MAX_TOOL_NAME_BYTES} bytes")),
            None => Ok(()),
        }
    }

    pub(super) fn of(config: &ToolCallConfig) -> Self {
        Toggles { default_tool_enabled: config.default_tool_enabled, tool_toggles: config.tool_toggles.clone() }
    }

    /// Make `config` toggle as these do; whether that changed it.
    pub(super) fn apply(self, config: &mut ToolCallConfig) -> bool {
        if Toggles::of(config) == self {
            return false;
        }
        config.default_tool_enabled = self.default_tool_enabled;
        config.tool_toggles = self.tool_toggles;
        true
    }
}

struct Controlled {
    settings: LiveSettings,
    /// When a door of another process last said it serves as the agent;
    /// `None`: the agent is this process's, and stays.
    heard: Option<Instant>,
}

/// The agents, by name.
pub(super) struct Agents {
    own: String,
    agents: Mutex<BTreeMap<String, Controlled>>,
    held: Semaphore,
}

impl Agents {
    /// The console's own agent, `own`, with its settings.
    pub(super) fn new(own: &str, settings: LiveSettings) -> Self {
        let agents = BTreeMap::from([(own.to_owned(), Controlled { settings, heard: None })]);
        Agents { own: own.to_owned(), agents: Mutex::new(agents), held: Semaphore::new(MAX_HELD_HELLOS) }
    }

    /// A place for a hello held open, if one is free.
    pub(super) fn hold(&self) -> Result<SemaphorePermit<'_>, tokio::sync::TryAcquireError> {
        self.held.try_acquire()
    }

    /// The console's own agent's name.
    pub(super) fn own_name(&self) -> &str {
        &self.own
    }

    /// The console's own agent's settings.
    pub(super) fn own(&self) -> LiveSettings {
        self.named(None).expect("the console's own agent stays").1
    }

    /// The agent `name` (`None`: the console's own), with its name; or
    /// why there is none, naming those there are.
    pub(super) fn named(&self, name: Option<&str>) -> Result<(String, LiveSettings), String> {
        let name = name.unwrap_or(&self.own);
        let mut agents = self.lock();
        forget_silent(&mut agents);
        match agents.get(name) {
            Some(agent) => Ok((name.to_owned(), agent.settings.clone())),
            None => {
                let known: Vec<&str> = agents.keys().map(String::as_str).collect();
                Err(format!("no agent `{name}` here; the page works with {}", known.join(", ")))
            }
        }
    }

    /// Every agent's name, the console's own first.
    pub(super) fn names(&self) -> Vec<String> {
        let mut agents = self.lock();
        forget_silent(&mut agents);
        let others = agents.keys().filter(|name| **name != self.own).cloned();
        std::iter::once(self.own.clone()).chain(others).collect()
    }

    /// A door of this process serves as `name` by `settings`: the page
    /// acts on those (the console's own agent, if it has that name).
    pub(super) fn control(&self, name: &str, settings: LiveSettings) {
        self.lock().insert(name.to_owned(), Controlled { settings, heard: None });
    }

    /// A door of another process serves as `name`, toggled as `reported`:
    /// the console's copy of its settings, made from the report when the
    /// agent is new here (toggles only: the rest, its prompt among them,
    /// the page shows as the console's defaults).
    pub(super) fn heard(&self, name: &str, reported: &Toggles) -> LiveSettings {
        let name = cut(name);
        let mut agents = self.lock();
        forget_silent(&mut agents);
        if let Some(agent) = agents.get_mut(&name) {
            if agent.heard.is_some() {
                agent.heard = Some(Instant::now());
            }
            return agent.settings.clone();
        }
        let remote = agents.iter().filter(|(_, agent)| agent.heard.is_some());
        if remote.clone().count() >= MAX_REMOTE_AGENTS
            && let Some(oldest) = remote.min_by_key(|(_, agent)| agent.heard).map(|(name, _)| name.clone())
        {
            agents.remove(&oldest);
        }
        let mut config = ToolCallConfig::on();
        reported.clone().apply(&mut config);
        let settings = LiveSettings::new(config);
        agents.insert(name, Controlled { settings: settings.clone(), heard: Some(Instant::now()) });
        settings
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Controlled>> {
        self.agents.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Agents of other processes whose doors are silent are gone.
fn forget_silent(agents: &mut BTreeMap<String, Controlled>) {
    agents.retain(|_, agent| agent.heard.is_none_or(|heard| heard.elapsed() < DOOR_SILENCE));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(toggles: &[(&str, bool)]) -> ToolCallConfig {
        let tool_toggles = toggles.iter().map(|(tool, on)| ((*tool).to_owned(), *on)).collect();
        ToolCallConfig { enabled: true, tool_toggles, ..ToolCallConfig::default() }
    }

    #[test]
    fn a_door_of_this_process_is_controlled_by_its_own_settings_and_others_by_a_copy() {
        let agents = Agents::new("console", LiveSettings::new(config(&[])));
        let door = LiveSettings::new(config(&[]));
        agents.control("mcp", door.clone());
        let (name, found) = agents.named(Some("mcp")).unwrap();
        assert_eq!(name, "mcp");
        assert!(found.same_as(&door), "the page acts on the settings the door serves by");

        let copy = agents.heard("writer", &Toggles::of(&config(&[("calculate", false)])));
        assert_eq!(copy.get().tool_toggles.get("calculate"), Some(&false), "seeded from the door's report");
        let again = agents.heard("writer", &Toggles::of(&config(&[])));
        assert!(again.same_as(&copy), "a later report does not replace what the page set");
        assert_eq!(agents.names(), ["console", "mcp", "writer"]);

        let unknown = agents.named(Some("nobody")).unwrap_err();
        assert!(unknown.contains("no agent `nobody`") && unknown.contains("console, mcp, writer"), "{unknown}");
        for i in 0..(MAX_REMOTE_AGENTS + 3) {
            agents.heard(&format!("agent {i}"), &Toggles::of(&config(&[])));
        }
        let names = agents.names();
        assert_eq!(names.len(), 2 + MAX_REMOTE_AGENTS, "bounded, this process's agents kept");
        assert!(names.contains(&"mcp".to_owned()) && !names.contains(&"writer".to_owned()));
    }

    #[test]
    fn toggles_apply_only_when_they_differ() {
        let mut settings = config(&[("calculate", true)]);
        assert!(!Toggles::of(&settings).apply(&mut settings));
        let off = Toggles::of(&config(&[("calculate", false)]));
        assert!(off.clone().apply(&mut settings));
        assert_eq!(Toggles::of(&settings), off);
        assert!(settings.enabled, "only the toggles travel");
        let long = "t".repeat(MAX_TOOL_NAME_BYTES + 1);
        assert!(Toggles::of(&config(&[(long.as_str(), true)])).check().is_err());
        assert!(Toggles::of(&config(&[("calculate", true)])).check().is_ok());
    }
}
