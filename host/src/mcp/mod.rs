//! The MCP server: the tools this host runs, offered to any MCP client
//! (desktop assistants, IDEs, agent SDKs) over stdio or streamable HTTP.
//!
//! - `tools/list` gives the tools the `[mcp]` agent may call, narrowed by
//!   `[mcp]` ([`McpConfig`]): each with its params as a JSON Schema, a
//!   title, and what its permission level means as annotations;
//! - `tools/call` is a one-call turn through the same [`Pipeline`](crate::Pipeline) as every
//!   other door: checked (a bad argument is a result the model can read),
//!   approved — asking the client's user through elicitation where the
//!   client supports it, else by `[mcp] unattended` — and run in a fresh
//!   sandboxed instance; a limit hit is an `isError` result naming it. A
//!   client's `notifications/cancelled` cancels the call, as does, over
//!   HTTP, its connection closing;
//! - both eras on one endpoint: the handshake era (`initialize`, sessions,
//!   elicitation requests) and 2026-07-28 (`server/discover`, per-request
//!   `_meta`, no sessions, approvals as `input_required` results that any
//!   replica with the same key can finish, `subscriptions/listen`);
//! - calls in flight are bounded in all and per client (`[mcp] max_calls`,
//!   `max_calls_per_client`), HTTP requests in bytes and JSON values;
//! - when the registry reloads, every connected client gets
//!   `notifications/tools/list_changed`.
//!
//! ```no_run
//! use std::sync::Arc;
//! use toolhost::{Approvals, CancellationToken, DenyAll, Executor, McpServer, Pipeline, Policy, Registry};
//!
//! # async fn demo() -> anyhow::Result<()> {
//! let policy = Policy::load("toolhost.toml".as_ref())?;
//! let registry = Arc::new(Registry::load(policy.runtime()).await?);
//! let approvals = Arc::new(Approvals::new(&policy.approval));
//! // The approver is the client's user (or `[mcp] unattended`), per call.
//! let pipeline = Pipeline::new(Executor::new(registry.clone()), approvals, Arc::new(DenyAll));
//! let server = McpServer::new(pipeline, policy.mcp);
//! server.serve_stdio(CancellationToken::new()).await?;
//! # Ok(())
//! # }
//! ```

// The `[mcp]` section is plain data, in every build; the server is the
// `mcp` feature.
#[cfg(feature = "mcp")]
mod approver;
#[cfg(feature = "mcp")]
mod bounded_lines;
#[cfg(feature = "mcp")]
mod bounds;
mod config;
#[cfg(feature = "mcp")]
mod direct;
#[cfg(feature = "mcp")]
mod front;
#[cfg(feature = "mcp")]
mod http;
#[cfg(feature = "mcp")]
mod line_transport;
#[cfg(feature = "mcp")]
mod questions;
#[cfg(feature = "mcp")]
mod resumable;
#[cfg(feature = "mcp")]
mod server;
#[cfg(feature = "mcp")]
mod session;
#[cfg(feature = "mcp")]
mod sessions;
#[cfg(feature = "mcp")]
mod shape;
#[cfg(feature = "mcp")]
mod stdio_guard;
#[cfg(feature = "mcp")]
mod tools;

#[cfg(feature = "mcp")]
pub use bounds::{MAX_INITIALIZE_BYTES, MAX_REQUEST_VALUES};
pub(crate) use config::McpSection;
pub use config::{
    DEFAULT_MAX_CALLS, DEFAULT_MAX_CALLS_PER_CLIENT, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_MAX_SESSIONS, DEFAULT_MCP_AGENT,
    DEFAULT_MCP_APPROVAL_TIMEOUT, LOOPBACK_HOSTS, McpConfig,
};
#[cfg(feature = "mcp")]
pub use http::HttpOptions;
#[cfg(feature = "mcp")]
pub use server::{ApproverFor, McpError, McpServer};
// What the children of this module share with the door itself.
#[cfg(feature = "mcp")]
use server::*;
