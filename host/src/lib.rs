//! toolhost runs tools written as sandboxed WebAssembly components for any
//! LLM, whether or not the model has a native tool-call API.
//!
//! The most interesting items:
//! - [`Registry`]: loads the components in the plugin directories, verifies
//!   them (pins, API version, names, declarations) and keeps them ready;
//! - [`PromptCache`] and [`Protocol`]: tell a model about the tools an
//!   agent may use, in a text protocol ([`ProtocolId`]) or the native
//!   schema, and find the calls in its finished reply;
//! - [`Pipeline`]: one turn — check the calls against their declarations
//!   ([`CheckedCall`]: bound to the plugin checked), approve them
//!   ([`Approvals`], [`Approver`]), run exactly those on the [`Executor`]
//!   (each in a fresh, capability-limited instance), approve
//!   results, and format them as [`Message`]s for the model;
//! - [`Policy`]: the host's `toolhost.toml`: limits, grants, agents;
//! - [`VcpNode`]: the host joined to a VCP server as a distributed node,
//!   its exposed tools run through the same [`Pipeline`];
//! - [`McpServer`]: the tools offered to MCP clients over stdio or
//!   streamable HTTP, through the same [`Pipeline`];
//! - [`Console`]: a local web page to try the tools, preview prompts,
//!   parse replies, chat, and approve calls arriving through every door.
//!
//! One whole turn:
//!
//! ```no_run
//! use std::sync::Arc;
//! use toolhost::{
//!     AllowAll, Approvals, Declared, Executor, Pipeline, Policy, PromptCache, Registry, ToolCall, ToolCallConfig, Turn,
//! };
//!
//! # async fn demo() -> anyhow::Result<()> {
//! // Load the plugins the policy names.
//! let policy = Policy::load("toolhost.toml".as_ref())?;
//! let registry = Arc::new(Registry::load(policy.runtime()).await?);
//! let agent = ToolCallConfig::on();
//!
//! // Tell the model about the tools: this is its system prompt.
//! let catalog = registry.catalog();
//! let prompt = PromptCache::new().render(&catalog, "assistant", &agent, agent.protocol, "Tools:\n{{tools}}");
//! println!("{}", prompt.text);
//!
//! // The model's finished reply (here, a VCP call), and the calls in it.
//! let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calculate「末」,\nexpression:「始」6 * 7「末」\n<<<[END_TOOL_REQUEST]>>>";
//! let declared = Declared::new(catalog.tools().map(|(_, tool)| tool.name.clone()));
//! let parsed = agent.protocol.protocol().parse(reply, &declared);
//!
//! // Check, approve (here: everything the rules allow), run, and format.
//! let approvals = Arc::new(Approvals::new(&policy.approval));
//! let pipeline = Pipeline::new(Executor::new(registry.clone()), approvals, Arc::new(AllowAll));
//! let turn = Turn::for_agent("assistant", agent);
//! let result = pipeline.run(&turn, ToolCall::from_reply(reply, &parsed.calls)).await;
//! for message in &result.messages() {
//!     println!("{:?}: {}", message.role, message.content); // what the model sees next
//! }
//! eprintln!("{}", result.summary()); // for people
//! # Ok(())
//! # }
//! ```
//!
//! Each concept is a module ([`approval`], [`llm`], [`vcp`], [`mcp`],
//! [`sandbox`], [`limits`], …) holding all of its public names; the root
//! re-exports the items above and the others most programs use. The
//! plain data and the parsers are the crates below this one, public whole
//! as [`types`] and [`protocol`]; the [`sandbox`], [`registry`],
//! [`contract`] and [`executor`] modules are those of the runtime crate
//! below, `toolhost-runtime`. `docs/API.md` lists every public name.
//!
//! The crate's own layout is described in `docs/ARCHITECTURE.md`; what the
//! sandbox promises, in `docs/SECURITY.md`.

// A `pub` item that no path from the root reaches is `pub(crate)`, so
// that `pub` alone marks the public API.
#![warn(unreachable_pub)]
#![warn(clippy::missing_errors_doc)]

// The crates below this one, at the paths their modules had when they were
// part of it: `toolhost-types` (plain data) and `toolhost-protocol` (the
// parsers and renderers; no WebAssembly, no async runtime), public whole as
// `toolhost::types` and `toolhost::protocol`; and `toolhost-runtime` (the
// sandbox, the registry, the executor), whose concepts are public as this
// crate's modules and whose helpers serve this crate only. So an embedder
// needs only this crate.
pub use toolhost_protocol as protocol;
use toolhost_protocol::{arguments, suggest};
use toolhost_runtime::checked_call;
pub use toolhost_runtime::{contract, executor, registry, sandbox};
#[cfg(feature = "chat")]
use toolhost_support::error_chain;
use toolhost_support::{config_error, digest, home_paths, printable, regular_file};
pub use toolhost_types as types;
use toolhost_types::{call, manifest, message, outcome};

pub mod agent;
mod appender;
pub mod approval;
pub mod chain;
pub mod config;
pub mod console;
mod discovery;
#[cfg(any(feature = "chat", feature = "console"))]
mod http_client;
#[cfg(any(feature = "mcp", feature = "console"))]
mod http_server;
pub mod llm;
#[cfg(any(feature = "mcp", feature = "vcp"))]
mod log_throttle;
pub mod mcp;
mod parse_report;
pub mod pipeline;
pub mod policy_check;
mod tool_filter;
pub mod transcript;
mod vcp_node;

// The items most programs use, at the root; every item is also in the
// module of its concept.
pub use agent::ToolCallConfig;
pub use approval::{AllowAll, Approvals, Approver, CallDecision, DenyAll, PendingCall, ResultDecision};
pub use chain::{Chain, ChainEvent, Stop};
pub use checked_call::CheckedCall;
pub use config::Policy;
#[cfg(feature = "console")]
pub use console::Console;
pub use discovery::PromptCache;
pub use executor::Executor;
pub use llm::LlmClient;
#[cfg(feature = "chat")]
pub use llm::OpenAiClient;
#[cfg(feature = "mcp")]
pub use mcp::McpServer;
pub use parse_report::{FoundCall, ParseReport};
pub use pipeline::{Pipeline, Turn, TurnResult};
pub use protocol::{Declared, Parsed, ParsedCall, Protocol, ProtocolId};
pub use registry::{Catalog, LoadedPlugin, Registry};
pub use sandbox::{Limits, Sandbox};
pub use tokio_util::sync::CancellationToken;
pub use tool_filter::ToolFilter;
pub use transcript::Transcript;
pub use types::{Message, ParamSpec, ParamType, Permission, PluginManifest, Role, Status, ToolCall, ToolOutcome, ToolSpec};
#[cfg(feature = "vcp")]
pub use vcp_node::VcpNode;

/// Telling a model about its tools: which tools an agent sees, the
/// `{{tools}}` template, and the cached system prompt.
pub mod prompt {
    pub use crate::discovery::{PromptCache, RenderedPrompt, unknown_template_tools, visible_tools};
    pub use crate::parse_report::{FoundCall, ParseReport};
    pub use crate::tool_filter::ToolFilter;
}

/// The host as a node of a VCP server: the node, its `[vcp]` section, its
/// status, the handover of a chat to the server, and its unattended
/// approver. Its defaults and fixed limits are in [`limits::vcp_node`].
pub mod vcp {
    #[cfg(feature = "vcp")]
    pub use crate::vcp_node::{Handover, NODE_CONCURRENCY, NodeError, NodeState, NodeStatus, STATUS_FILE_POLL, VcpNode};
    pub use crate::vcp_node::{InvalidServerUrl, Reconnect, Unattended, UnattendedAction, UnattendedApprover, VcpConfig};
}

/// Plugin and model text made safe to show a person: control sequences,
/// bidirectional overrides and invisible characters escaped, never obeyed.
pub mod text {
    pub use crate::printable::{printable, printable_lines};
}

/// Every limit's default, and the fixed limits, of the library, as
/// `docs/SECURITY.md` lists them. (The limits of what `toolhost add`
/// downloads are the command's own.)
pub mod limits {
    pub use crate::sandbox::{
        DEFAULT_FUEL, DEFAULT_HOST_MEMORY_BYTES, DEFAULT_HTTP_REQUESTS, DEFAULT_INSTANCES, DEFAULT_MEMORIES,
        DEFAULT_MEMORY_BYTES, DEFAULT_OPEN_FILES, DEFAULT_OUTPUT_BYTES, DEFAULT_RESOURCES, DEFAULT_TABLE_ELEMENTS,
        DEFAULT_TABLES, DEFAULT_TIMEOUT, EPOCH_TICK, FUEL_PER_HOST_BYTE, HOST_CALL_FUEL, LOG_BYTES_PER_CALL, LOG_RECORD_COST,
        LOG_RECORDS_PER_CALL, MAX_CONCURRENT_CALLS, MAX_MEMORY_BYTES, MAX_SHARDS, MAX_TABLE_ELEMENTS, STACK_LIMIT_BYTES,
    };

    /// What the sandbox reserves, and how its default size is decided
    /// (see [`SandboxSize`](crate::sandbox::SandboxSize)).
    pub mod sandbox {
        pub use crate::sandbox::{
            ADDRESS_BUDGET_PERCENT, CALLS_PER_CORE, DEFAULT_ADDRESS_BUDGET, MAX_MEMORIES_PER_CALL, MEMORIES_PER_CALL,
            MEMORY_GUARD, MEMORY_RESERVATION,
        };
    }

    /// Approval's fixed limits: how far a path argument is followed, and
    /// the resume tokens a paused turn is sealed into.
    pub mod approval {
        pub use crate::approval::{
            LEDGER_GRACE, MAX_LINKS, MAX_PATH_BYTES, MAX_RESUME_LIFETIME, MAX_SPENT_TOKENS, MAX_TOKEN_BYTES,
        };
    }

    /// The MCP server's defaults and fixed limits.
    pub mod mcp {
        pub use crate::mcp::{
            DEFAULT_MAX_CALLS, DEFAULT_MAX_CALLS_PER_CLIENT, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_MAX_SESSIONS,
            DEFAULT_MCP_APPROVAL_TIMEOUT,
        };
        #[cfg(feature = "mcp")]
        pub use crate::mcp::{MAX_INITIALIZE_BYTES, MAX_REQUEST_VALUES};
    }

    /// The VCP node's defaults and fixed limits.
    pub mod vcp_node {
        pub use crate::vcp_node::{
            ACK_TIMEOUT, CANCEL_FLUSH, CONNECT_TIMEOUT, DEFAULT_APPROVAL_WINDOW, DEFAULT_KEY_ENV, DEFAULT_MAX_FILE_BYTES,
            DEFAULT_PING_INTERVAL, DEFAULT_RECONNECT_INITIAL, DEFAULT_RECONNECT_MAX, DEFAULT_SHUTDOWN_GRACE, DEFAULT_STATUS_FILE,
            DEFAULT_WRITE_TIMEOUT, FILES_AT_ONCE, MAX_FRAME_BYTES, MAX_PENDING_BYTES, MAX_PENDING_CALLS, SERVER_TIMEOUT_MARGIN,
            SILENT_INTERVALS, STABLE_CONNECTION, STATUS_WRITE_INTERVAL,
        };
    }
}

pub use toolhost_runtime::count_host_memory;

// The library's own unit tests run with host memory counted, as the CLI does.
#[cfg(test)]
count_host_memory!();
