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
//! let registry = Arc::new(Registry::load(policy).await?);
//! let agent = ToolCallConfig { enabled: true, ..ToolCallConfig::default() };
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
//! let approvals = Arc::new(Approvals::new(&registry.policy().approval));
//! let pipeline = Pipeline::new(Executor::new(registry.clone()), approvals, Arc::new(AllowAll));
//! let turn = Turn::for_agent("assistant", agent);
//! let result = pipeline.run(&turn, ToolCall::from_reply(reply, &parsed.calls)).await;
//! for message in &result.messages {
//!     println!("{:?}: {}", message.role, message.content); // what the model sees next
//! }
//! eprintln!("{}", result.summary); // for people
//! # Ok(())
//! # }
//! ```
//!
//! The crate's own layout is described in `docs/ARCHITECTURE.md`; what the
//! sandbox promises, in `docs/SECURITY.md`.

// The crates below this one, at the paths their modules had when they were
// part of it: `toolhost-types` (plain data) and `toolhost-protocol` (the
// parsers and renderers; no WebAssembly, no async runtime).
use toolhost_protocol::{self as protocol, arguments, declaration, suggest};
use toolhost_types::{call, failure, manifest, message, outcome, units};

mod agent;
mod appender;
mod approval;
mod chain;
mod checked_call;
mod config;
mod console;
mod contract;
mod digest;
mod discovery;
mod error_chain;
mod executor;
mod home_paths;
mod llm;
mod mcp;
mod parse_report;
mod pipeline;
mod policy_check;
mod printable;
mod registry;
mod regular_file;
mod sandbox;
mod tool_filter;
mod transcript;
mod trust;
mod vcp_node;

pub use agent::{CallMode, DEFAULT_SYSTEM_PROMPT, ToolCallConfig};
pub use approval::{
    AllowAll, Answer, ApprovalConfig, ApprovalMemory, ApprovalRequest, Approvals, Approver, AskReason, Assessment, AuditRecord,
    CallDecision, ChannelApprover, DecidedBy, DenyAll, MAX_LINKS, MAX_PATH_BYTES, MEMORY_FORMAT_VERSION, MEMORY_RECHECK,
    MemoryError, PendingCall, RememberedApproval, ResultDecision, Rule, RuleAction, RuleError, TerminalApprover,
};
pub use arguments::{ArgumentError, check as check_call, coerce};
pub use call::{CallIds, ToolCall};
pub use chain::{CallRef, Chain, ChainError, ChainEvent, Events, HandoverTarget, ManualDecision, REPEAT_LIMIT, Stop};
pub use checked_call::CheckedCall;
pub use config::{
    Binding, ConfigError, DEFAULT_CONFIG_FILE, DEFAULT_LOCK_FILE, DEFAULT_MEMORY_FILE, PluginPolicy, Policy, find_config_file,
    user_config_file, user_plugin_dir,
};
pub use console::{
    Console, ConsoleApprover, ConsoleConfig, ConsoleOptions, DEFAULT_APPROVAL_TIMEOUT, DEFAULT_CONSOLE_AGENT,
    DEFAULT_CONSOLE_LISTEN,
};
pub use contract::{Contract, ContractError, PLUGIN_WIT, PLUGIN_WIT_FILE, PLUGIN_WORLD, write_wit};
pub use declaration::{Field, ManifestError};
pub use discovery::{PromptCache, RenderedPrompt, count_tokens, render_template, unknown_template_tools, visible_tools};
pub use error_chain::{SharedError, error_chain};
pub use executor::{Executor, RunOptions, default_concurrency};
pub use llm::{
    ChatRequest, ClientError, DEFAULT_CONNECT_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CALL_ARGUMENT_BYTES,
    DEFAULT_MAX_CALLS_PER_REPLY, DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_REPLY_BYTES, DEFAULT_REQUEST_TIMEOUT, LlmClient, LlmError,
    LlmProfile, OpenAiClient, Reply, ReplyLimit, RetryPolicy, StreamEvent, Usage,
};
pub use manifest::{
    Capabilities, DirAccess, DirRequest, HOST_API_VERSION, ParamSpec, ParamType, Permission, PluginManifest, Reach, ToolSpec,
    is_valid_name,
};
pub use mcp::{
    ApproverFor, DEFAULT_MAX_SESSIONS, DEFAULT_MCP_AGENT, HttpOptions, LOOPBACK_HOSTS, McpConfig, McpError, McpServer,
};
pub use message::{Message, NativeCall, Role};
pub use outcome::{Failure, FailureKind, LimitHit, Status, ToolOutcome};
pub use parse_report::{FoundCall, ParseReport};
pub use pipeline::{Audience, DIRECT_AGENT, Pipeline, Turn, TurnObserver, TurnResult};
pub use policy_check::{PolicyWarning, check_policy, missing_grants, unscoped_rules};
pub use printable::{printable, printable_lines, to_json_line, to_json_pretty};
pub use protocol::native::{ToolsSchemaError, tools_from_schema};
pub use protocol::vcp::summary as vcp_summary;
pub use protocol::{Declared, MAX_WARNINGS, Parsed, ParsedCall, Protocol, ProtocolId, UnknownProtocol, Warning};
pub use registry::{
    CacheError, CacheUse, Catalog, Claimant, DEFAULT_WATCH_INTERVAL, LoadError, LoadProgress, LoadedPlugin, LockError, LockFile,
    PinChange, PinState, Refusal, Registry, RegistryError, RegistryEvent, UnboundSection, component_files, sha256_hex,
};
pub use regular_file::{open_regular_file, read_regular_file};
pub use sandbox::{
    Allowance, CallFailure, DirGrant, EnvGrant, GrantKind, Grants, HostMemoryAllocator, Invocation, Limits, Sandbox,
    SandboxError, SandboxSize, ToolFailure, ToolFailureKind, ToolOutput, Withheld, accounting_active, address_space_limit,
    raise_open_file_limit,
};
pub use suggest::{did_you_mean, unknown_tool};
pub use tokio_util::sync::CancellationToken;
pub use tool_filter::ToolFilter;
pub use transcript::{CallStatus, Entry, RequestedCall, Transcript, TranscriptError};
pub use trust::{UntrustedFile, check_trusted};
pub use vcp_node::{
    Handover, InvalidServerUrl, NodeError, NodeState, NodeStatus, Reconnect, STATUS_FILE_POLL, Unattended, UnattendedAction,
    UnattendedApprover, VcpConfig, VcpNode,
};

/// Every limit's default, and the fixed limits, as `docs/SECURITY.md`
/// lists them.
pub mod limits {
    pub use crate::sandbox::{
        DEFAULT_FUEL, DEFAULT_HOST_MEMORY_BYTES, DEFAULT_HTTP_REQUESTS, DEFAULT_INSTANCES, DEFAULT_MEMORIES,
        DEFAULT_MEMORY_BYTES, DEFAULT_OPEN_FILES, DEFAULT_OUTPUT_BYTES, DEFAULT_RESOURCES, DEFAULT_TABLE_ELEMENTS,
        DEFAULT_TABLES, DEFAULT_TIMEOUT, EPOCH_TICK, FUEL_PER_HOST_BYTE, HOST_CALL_FUEL, LOG_BYTES_PER_CALL, LOG_RECORD_COST,
        LOG_RECORDS_PER_CALL, MAX_CONCURRENT_CALLS, MAX_MEMORY_BYTES, MAX_SHARDS, MAX_TABLE_ELEMENTS, STACK_LIMIT_BYTES,
    };

    /// What the sandbox reserves, and how its default size is decided
    /// (see [`SandboxSize`](crate::SandboxSize)).
    pub mod sandbox {
        pub use crate::sandbox::{
            ADDRESS_BUDGET_PERCENT, CALLS_PER_CORE, DEFAULT_ADDRESS_BUDGET, MAX_MEMORIES_PER_CALL, MEMORIES_PER_CALL,
            MEMORY_GUARD, MEMORY_RESERVATION,
        };
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

/// Install toolhost's counting allocator as the program's global
/// allocator, so that each call's host memory is counted and the per-call
/// host-memory limit holds (see [`HostMemoryAllocator`]). A library makes
/// no process-wide choice, so the program does, once, in its binary:
///
/// ```ignore
/// toolhost::count_host_memory!();                               // over the system allocator
/// toolhost::count_host_memory!(MyAllocator, MyAllocator::new()); // over another one
/// ```
///
/// Without it, calls still run under every other limit (linear memory,
/// fuel, time, resource counts, open files), but what the host allocates
/// for a call is not counted: `host_memory_mib` does not apply and host
/// work costs no per-byte fuel ([`accounting_active`] is false).
#[macro_export]
macro_rules! count_host_memory {
    () => {
        $crate::count_host_memory!(::std::alloc::System, ::std::alloc::System);
    };
    ($allocator:ty, $inner:expr) => {
        #[global_allocator]
        static TOOLHOST_HOST_MEMORY: $crate::HostMemoryAllocator<$allocator> = $crate::HostMemoryAllocator::new($inner);
    };
}

// The library's own unit tests run with host memory counted, as the CLI does.
#[cfg(test)]
count_host_memory!();
