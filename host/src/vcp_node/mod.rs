//! Joining a VCP server as a distributed node: the host's exposed tools
//! offered to every agent on that server, each call run here through the
//! same [`Pipeline`] as any other door. The protocol is
//! `shared/VCP-PROTOCOL.md` §4–§5.
//!
//! The most interesting items:
//! - [`VcpNode`]: [`run`](VcpNode::run) connects, registers, serves calls
//!   and reconnects until shutdown; [`status`](VcpNode::status) and
//!   [`watch`](VcpNode::watch) say where it stands;
//! - [`VcpConfig`]: `[vcp]` in `toolhost.toml` — server, node name, key
//!   variable, exposed tools, unattended approval, reconnecting, served
//!   files, the status file;
//! - [`UnattendedApprover`]: approval when nobody is attached;
//! - [`NodeStatus`]: the status, also kept in a file for other processes
//!   (`toolhost node --status`); [`NodeStatus::tools_on`] says whether the
//!   node is connected to a server and with which tools.
//!
//! What the node does on each connection:
//!
//! 1. connect to `SERVER/vcp-distributed-server/VCP_Key=KEY` and wait for
//!    `connection_ack`;
//! 2. send `register_tools` (one manifest per exposed tool, described by
//!    the VCP protocol, `capabilities.cancelTool: true`), `report_ip` and
//!    `update_static_placeholders`, and log what it registered (the server
//!    never answers);
//! 3. answer each `execute_tool` with a `tool_result`: the call becomes a
//!    one-call [`Turn::distributed`] under the agent name `vcp:HOST:PORT`,
//!    so it is checked against the exposed tools (anything else is refused
//!    without running), coerced, approved, run with its own cancellation
//!    token (`cancel_tool` stops exactly that call), at most as many at
//!    once as the executor's cap, and one plugin's calls at most half of
//!    them (at least one), so another plugin's call never waits behind all
//!    of them;
//!    at most [`MAX_PENDING_CALLS`] calls and [`MAX_PENDING_BYTES`] of
//!    requests and unwritten results per connection; past either, a call
//!    is refused at once;
//! 4. ping; a server silent for two ping intervals is left, and so is one
//!    that does not take a write within `write_timeout`.
//!
//! A lost connection cancels its running calls (the server has failed them
//! already) and is retried with exponential backoff and jitter. A registry
//! reload that changes the exposed tools ends the connection after its
//! calls finish, so a new one registers them. Shutdown stops taking calls,
//! gives running ones a grace period, cancels the rest and closes.
//!
//! ```no_run
//! use std::sync::Arc;
//! use toolhost::{Approvals, Executor, Pipeline, Policy, Registry, VcpNode, vcp::{UnattendedApprover, VcpConfig}};
//! use toolhost::CancellationToken;
//!
//! # async fn demo() -> anyhow::Result<()> {
//! let policy = Policy::load("toolhost.toml".as_ref())?;
//! let config = policy.vcp.clone().unwrap_or(VcpConfig::new("ws://127.0.0.1:6005")?);
//! let registry = Arc::new(Registry::load(policy.runtime()).await?);
//! let approvals = Arc::new(Approvals::new(&policy.approval));
//! let approver = Arc::new(UnattendedApprover::new(config.unattended));
//! let pipeline = Pipeline::new(Executor::new(registry), approvals, approver);
//! let node = VcpNode::from_env(config, pipeline)?;
//! let shutdown = CancellationToken::new();
//! let running = tokio::spawn({
//!     let (node, shutdown) = (node.clone(), shutdown.clone());
//!     async move { node.run(shutdown).await }
//! });
//! // … later: is it connected, and with which tools?
//! println!("{:?}", node.status().tools_on("ws://127.0.0.1:6005"));
//! shutdown.cancel();
//! running.await?;
//! # Ok(())
//! # }
//! ```

// The `[vcp]` section is plain data, in every build; the node is the `vcp`
// feature.
#[cfg(feature = "vcp")]
mod backoff;
#[cfg(feature = "vcp")]
mod budget;
#[cfg(feature = "vcp")]
mod calls;
mod config;
#[cfg(feature = "vcp")]
mod connection;
#[cfg(feature = "vcp")]
mod error;
#[cfg(feature = "vcp")]
mod files;
#[cfg(feature = "vcp")]
mod frames;
#[cfg(feature = "vcp")]
mod handover;
#[cfg(feature = "vcp")]
mod node;
#[cfg(feature = "vcp")]
mod share;
#[cfg(feature = "vcp")]
mod status;

pub use crate::approval::{Unattended, UnattendedAction, UnattendedApprover};
pub(crate) use config::VcpSection;
pub use config::{
    ACK_TIMEOUT, CANCEL_FLUSH, CONNECT_TIMEOUT, DEFAULT_APPROVAL_WINDOW, DEFAULT_KEY_ENV, DEFAULT_MAX_FILE_BYTES,
    DEFAULT_PING_INTERVAL, DEFAULT_RECONNECT_INITIAL, DEFAULT_RECONNECT_MAX, DEFAULT_SHUTDOWN_GRACE, DEFAULT_STATUS_FILE,
    DEFAULT_WRITE_TIMEOUT, FILES_AT_ONCE, InvalidServerUrl, MAX_FRAME_BYTES, MAX_PENDING_BYTES, MAX_PENDING_CALLS, Reconnect,
    SERVER_TIMEOUT_MARGIN, SILENT_INTERVALS, STABLE_CONNECTION, STATUS_WRITE_INTERVAL, VcpConfig,
};
#[cfg(feature = "vcp")]
pub use error::NodeError;
#[cfg(feature = "vcp")]
pub use handover::{Handover, STATUS_FILE_POLL};
#[cfg(feature = "vcp")]
pub use node::{NODE_CONCURRENCY, VcpNode};
#[cfg(feature = "vcp")]
pub use status::{NodeState, NodeStatus};
// What the children of this module share with the door itself.
#[cfg(feature = "vcp")]
use node::*;
