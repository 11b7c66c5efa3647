//! Handing execution over to a VCP server: when a chat's model endpoint
//! is the VCP server this host joined as a node, the server runs the calls
//! (this node's among them, through `execute_tool`) and the chat only
//! shows what it did. [`Handover`] says which tools the model may be told
//! about (this node's, only while it is connected to that server); what
//! the server says it ran is read by the protocol crate's `vcp_server`.

use super::VcpNode;
use super::config::VcpConfig;
use super::status::NodeStatus;
use std::path::Path;
use std::time::Duration;
use tokio::sync::watch;

/// How often the status file of a node another process runs is read
/// ([`Handover::to_status_file`]): a change of that node reaches the
/// prompt within this time.
pub const STATUS_FILE_POLL: Duration = Duration::from_millis(250);

/// The VCP server a chat hands its calls to, and the node through which
/// this host's tools reach it.
///
/// The node's status arrives through a channel, so rendering a prompt
/// reads no file: from the node itself when it runs in this process, from
/// a task that reads its status file when another process runs it.
#[derive(Clone)]
pub struct Handover {
    server: String,
    status: watch::Receiver<NodeStatus>,
}

impl Handover {
    /// Calls go to `server`; the tools are those `status` says the node
    /// offers there ([`NodeStatus::tools_on`]).
    pub fn new(server: impl Into<String>, status: watch::Receiver<NodeStatus>) -> Self {
        Handover { server: server.into(), status }
    }

    /// Calls go to the server `node` joins; its tools are offered while it
    /// is connected.
    pub fn to_node(node: &VcpNode) -> Self {
        Handover::new(node.config().server.clone(), node.watch())
    }

    /// Calls go to `config.server`; the tools are those of the node that
    /// another process runs with `config` (`toolhost node`), offered while
    /// that process lives and is connected. Its status file is read now and
    /// then every [`STATUS_FILE_POLL`] on a blocking thread, by a task
    /// that ends with the last clone of this handover.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn to_status_file(config: &VcpConfig) -> Self {
        let path = config.status_file.clone();
        let read_status = {
            let nobody = NodeStatus::new(&config.node_name, &config.server);
            move |path: &Path| read_status(path).unwrap_or_else(|| nobody.clone())
        };
        let status = watch::Sender::new(read_status(&path));
        let handover = Handover::new(config.server.clone(), status.subscribe());
        tokio::spawn(async move {
            let mut every = tokio::time::interval(STATUS_FILE_POLL);
            loop {
                tokio::select! {
                    _ = every.tick() => {}
                    () = status.closed() => return,
                }
                let (path, read_status) = (path.clone(), read_status.clone());
                let Ok(now) = tokio::task::spawn_blocking(move || read_status(&path)).await else { return };
                status.send_if_modified(|last| {
                    let changed = *last != now;
                    *last = now;
                    changed
                });
            }
        });
        handover
    }

    /// The server, as `[vcp] server` writes it.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The tools the model may be told about now: this node's registered
    /// tools while it is connected to the server, else none (nobody could
    /// run them).
    pub fn tools(&self) -> Vec<String> {
        self.status.borrow().tools_on(&self.server).map(<[String]>::to_vec).unwrap_or_default()
    }
}

/// The status in `path`, if a node that still lives wrote it.
fn read_status(path: &Path) -> Option<NodeStatus> {
    NodeStatus::read(path).ok().filter(|status| status.process_alive() != Some(false))
}

impl crate::chain::HandoverTarget for Handover {
    fn server(&self) -> &str {
        Handover::server(self)
    }

    fn tools(&self) -> Vec<String> {
        Handover::tools(self)
    }
}
