//! [`NodeStatus`]: where the node stands, for the program running it
//! ([`VcpNode::status`](super::VcpNode::status), [`watch`](super::VcpNode::watch))
//! and for other processes: a running node keeps it in a JSON file
//! (`[vcp] status_file`), replaced atomically on every change, which
//! `toolhost node --status` reads.

use super::error::NodeError;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// Where the node's connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum NodeState {
    /// Connecting (the first attempt, or after a reload).
    Connecting,
    /// Connected and registered.
    Connected,
    /// Waiting to try again after a failure or a lost connection.
    Reconnecting,
    /// Finishing running calls before closing.
    ShuttingDown,
    /// Not running.
    Stopped,
}

impl NodeState {
    /// The kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeState::Connecting => "connecting",
            NodeState::Connected => "connected",
            NodeState::Reconnecting => "reconnecting",
            NodeState::ShuttingDown => "shutting-down",
            NodeState::Stopped => "stopped",
        }
    }
}

impl std::fmt::Display for NodeState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a node stands: its connection, what it registered, the calls it
/// served.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NodeStatus {
    /// The `serverName` it registers as.
    pub node_name: String,
    /// The server, without the key.
    pub server: String,
    /// The process running the node.
    pub pid: u32,
    /// Where the connection stands.
    pub state: NodeState,
    /// The server's id for this connection (`connection_ack`); a
    /// reconnect gets a new one.
    pub server_id: Option<String>,
    /// The server's client id for this connection.
    pub client_id: Option<String>,
    /// The tools registered on the current connection; empty while not
    /// connected.
    pub registered: Vec<String>,
    /// How many connections registered so far.
    pub registrations: u64,
    /// Calls answered with a result.
    pub calls_served: u64,
    /// Calls answered with an error (refused, denied, failed, cancelled).
    pub calls_failed: u64,
    /// Calls running or waiting for a slot.
    pub calls_in_flight: u64,
    /// The last connection error, until a connection registers.
    pub last_error: Option<String>,
    /// While reconnecting: when the next attempt is, in milliseconds since
    /// the Unix epoch.
    pub next_attempt_unix_ms: Option<u64>,
    /// When this status was last changed, in milliseconds since the Unix
    /// epoch.
    pub updated_unix_ms: u64,
}

impl NodeStatus {
    /// A node of `node_name` on `server` that has not connected yet.
    pub(super) fn new(node_name: &str, server: &str) -> Self {
        NodeStatus {
            node_name: node_name.to_owned(),
            server: server.to_owned(),
            pid: std::process::id(),
            state: NodeState::Connecting,
            server_id: None,
            client_id: None,
            registered: Vec::new(),
            registrations: 0,
            calls_served: 0,
            calls_failed: 0,
            calls_in_flight: 0,
            last_error: None,
            next_attempt_unix_ms: None,
            updated_unix_ms: unix_ms(SystemTime::now()),
        }
    }

    /// The tools this node offers on `server` now: `Some` only while it is
    /// connected to that server and registered. What a chat that hands its
    /// calls to `server` may tell the model about.
    pub fn tools_on(&self, server: &str) -> Option<&[String]> {
        let same = super::config::server_url(server).is_ok_and(|url| url == self.server);
        (same && self.state == NodeState::Connected).then_some(self.registered.as_slice())
    }

    /// Whether the process that wrote this status still exists; `None`
    /// where that cannot be told (no `/proc`). A node that was killed
    /// leaves its last status behind.
    pub fn process_alive(&self) -> Option<bool> {
        Path::new("/proc/self").exists().then(|| Path::new(&format!("/proc/{}", self.pid)).exists())
    }

    /// The status `path` holds, as a running node wrote it.
    ///
    /// # Errors
    ///
    /// [`NodeError::StatusFile`] when the file cannot be read or is not a node
    /// status.
    pub fn read(path: &Path) -> Result<Self, NodeError> {
        let error = |message: String| NodeError::StatusFile { path: path.to_owned(), message };
        let text = std::fs::read_to_string(path).map_err(|e| error(format!("cannot read it: {e}")))?;
        serde_json::from_str(&text).map_err(|e| error(format!("is not a node status: {e}")))
    }

    /// Replace `path` with this status: written beside it and renamed over
    /// it, so a reader sees the old status or the new one, never a part.
    ///
    /// # Errors
    ///
    /// [`NodeError::StatusFile`] when the status cannot be written beside
    /// `path` or renamed over it.
    pub fn write(&self, path: &Path) -> Result<(), NodeError> {
        let error = |message: String| NodeError::StatusFile { path: path.to_owned(), message };
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let mut file = tempfile::NamedTempFile::new_in(dir).map_err(|e| error(format!("cannot write beside it: {e}")))?;
        let text = serde_json::to_string_pretty(self).expect("a status serializes");
        file.write_all(text.as_bytes()).map_err(|e| error(format!("cannot write it: {e}")))?;
        file.persist(path).map_err(|e| error(format!("cannot replace it: {}", e.error)))?;
        Ok(())
    }
}

/// Milliseconds since the Unix epoch.
pub(super) fn unix_ms(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH).unwrap_or(Duration::ZERO).as_millis() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_offered_only_while_connected_to_that_server() {
        let mut status = NodeStatus::new("laptop", "ws://127.0.0.1:6005");
        status.registered = vec!["calculate".into()];
        assert_eq!(status.tools_on("ws://127.0.0.1:6005"), None, "not connected yet");
        status.state = NodeState::Connected;
        assert_eq!(status.tools_on("ws://127.0.0.1:6005/"), Some(&["calculate".to_owned()][..]));
        assert_eq!(status.tools_on("ws://127.0.0.1:6006"), None, "another server");
        status.state = NodeState::Reconnecting;
        assert_eq!(status.tools_on("ws://127.0.0.1:6005"), None);
    }

    #[test]
    fn the_status_file_is_replaced_whole_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.node.json");
        let mut status = NodeStatus::new("laptop", "ws://127.0.0.1:6005");
        status.write(&path).unwrap();
        status.state = NodeState::Connected;
        status.calls_served = 3;
        status.write(&path).unwrap();
        assert_eq!(NodeStatus::read(&path).unwrap(), status);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file is left");
        std::fs::write(&path, "{").unwrap();
        let error = NodeStatus::read(&path).unwrap_err().to_string();
        assert!(error.starts_with(&format!("the node status file {}: is not a node status", path.display())), "{error}");
    }
}
