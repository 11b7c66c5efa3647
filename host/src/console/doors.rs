//! The doors a console serves: its own process's (`mcp --console`, `node
//! --console`) and other processes' that found it and ask at its desk,
//! each with its agent and the callers it has asked for. The page lists
//! them, so a person sees who may put a question to them.

use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A door in another process that has not been heard from for this long
/// has gone (it says hello every [`DOOR_HELLO_EVERY`]).
pub(super) const DOOR_SILENCE: Duration = Duration::from_secs(60);
/// How often a door in another process says it is still there.
pub(super) const DOOR_HELLO_EVERY: Duration = Duration::from_secs(20);
/// Callers remembered per door (an MCP door serves one client per
/// connection; a busy one is not listed whole).
const MAX_CALLERS: usize = 16;
/// Doors listed at once; past it the oldest other-process door makes room.
const MAX_DOORS: usize = 64;
/// The longest door or agent name kept.
const MAX_NAME_CHARS: usize = 80;

/// One door, as the page lists it.
#[derive(Debug, Clone, Serialize)]
pub(super) struct DoorView {
    /// `mcp`, `vcp`, `console`.
    pub door: String,
    /// The agent its calls run as (empty when it did not say).
    pub agent: String,
    /// The process it runs in.
    pub pid: u32,
    /// Whether that is another process than the console's.
    pub remote: bool,
    /// Who has asked through it.
    pub callers: Vec<String>,
}

struct Door {
    agent: String,
    remote: bool,
    callers: BTreeSet<String>,
    seen: Instant,
}

/// The doors seen, by door name and process.
#[derive(Default)]
pub(super) struct Doors {
    doors: Mutex<BTreeMap<(String, u32), Door>>,
}

impl Doors {
    /// `door` in process `pid` is there, working as `agent` (empty: keep
    /// what it said before), asking for `caller` (if any).
    pub(super) fn seen(&self, door: &str, pid: u32, agent: &str, caller: Option<&str>) {
        self.note(door, pid, agent, caller, false);
    }

    /// `seen`, for a door that says it is in another process: listed as
    /// such whatever process it names, so it is forgotten when silent.
    pub(super) fn seen_remote(&self, door: &str, pid: u32, agent: &str, caller: Option<&str>) {
        self.note(door, pid, agent, caller, true);
    }

    fn note(&self, door: &str, pid: u32, agent: &str, caller: Option<&str>, remote: bool) {
        let mut doors = self.doors.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        forget_silent(&mut doors);
        let key = (cut(door), pid);
        if !doors.contains_key(&key) && doors.len() >= MAX_DOORS {
            let oldest = doors.iter().filter(|(_, d)| d.remote).min_by_key(|(_, d)| d.seen).map(|(k, _)| k.clone());
            match oldest {
                Some(oldest) => doors.remove(&oldest),
                None => return,
            };
        }
        let entry = doors.entry(key).or_insert_with(|| Door {
            agent: String::new(),
            remote,
            callers: BTreeSet::new(),
            seen: Instant::now(),
        });
        entry.seen = Instant::now();
        if !agent.is_empty() {
            entry.agent = cut(agent);
        }
        if let Some(caller) = caller.filter(|c| !c.is_empty())
            && entry.callers.len() < MAX_CALLERS
        {
            entry.callers.insert(cut(caller));
        }
    }

    /// Every door still there, the console's own first.
    pub(super) fn list(&self) -> Vec<DoorView> {
        let mut doors = self.doors.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        forget_silent(&mut doors);
        let mut listed: Vec<DoorView> = doors
            .iter()
            .map(|((door, pid), d)| DoorView {
                door: door.clone(),
                agent: d.agent.clone(),
                pid: *pid,
                remote: d.remote,
                callers: d.callers.iter().cloned().collect(),
            })
            .collect();
        listed.sort_by_key(|d| d.remote);
        listed
    }
}

fn forget_silent(doors: &mut BTreeMap<(String, u32), Door>) {
    doors.retain(|_, d| !d.remote || d.seen.elapsed() < DOOR_SILENCE);
}

/// `name`, cut to the longest name kept.
pub(super) fn cut(name: &str) -> String {
    name.chars().take(MAX_NAME_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doors_are_listed_with_their_agent_and_callers_and_bounded() {
        let doors = Doors::default();
        doors.seen("mcp", std::process::id(), "coder", None);
        doors.seen_remote("mcp", 4242, "", Some("claude-desktop 1.2"));
        doors.seen_remote("mcp", 4242, "writer", Some("inspector 0.9"));
        let listed = doors.list();
        assert_eq!(listed.len(), 2);
        assert!(!listed[0].remote && listed[0].agent == "coder");
        assert_eq!((listed[1].pid, listed[1].agent.as_str()), (4242, "writer"));
        assert_eq!(listed[1].callers, ["claude-desktop 1.2", "inspector 0.9"]);
        for i in 0..(MAX_CALLERS + 5) {
            doors.seen_remote("mcp", 4242, "", Some(&format!("client {i}")));
        }
        assert_eq!(doors.list()[1].callers.len(), MAX_CALLERS);
        for pid in 0..(MAX_DOORS as u32 + 10) {
            doors.seen_remote("vcp", 10_000 + pid, "", None);
        }
        let listed = doors.list();
        assert_eq!(listed.len(), MAX_DOORS);
        assert!(!listed[0].remote, "the console's own door stays");
    }
}
