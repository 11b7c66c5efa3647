//! toolhost runs tools written as sandboxed WebAssembly components for any
//! LLM.
//!
//! The most interesting items:
//! - [`Registry`]: loads the components in the plugin directories, verifies
//!   them (pins, API version, names) and keeps them ready to run;
//! - [`Executor`]: runs [`ToolCall`]s, each in a fresh, capability-limited
//!   instance, and returns [`ToolOutcome`]s that name any limit that was hit;
//! - [`Policy`]: the host's `toolhost.toml`: limits and grants per plugin.
//!
//! ```no_run
//! use std::sync::Arc;
//! use toolhost::{Executor, Policy, Registry, ToolCall};
//!
//! # async fn demo() -> anyhow::Result<()> {
//! let mut policy = Policy::default();
//! policy.plugin_dirs.push("plugins".into());
//! let registry = Arc::new(Registry::load(policy).await?);
//! let executor = Executor::new(registry);
//!
//! let args = serde_json::json!({ "expression": "6 * 7" });
//! let call = ToolCall::new("call-1", "calculate", args.as_object().unwrap().clone());
//! let outcome = executor.call(&call).await;
//! println!("{}: {}", outcome.status, outcome.output);
//! # Ok(())
//! # }
//! ```

mod agent;
mod arguments;
mod call;
mod config;
mod discovery;
mod executor;
mod manifest;
mod outcome;
mod printable;
mod protocol;
mod registry;
mod sandbox;
mod suggest;

pub use agent::{CallMode, ToolCallConfig};
pub use arguments::{ArgumentError, check as check_call, coerce};
pub use call::ToolCall;
pub use config::{Binding, ConfigError, DEFAULT_CONFIG_FILE, DEFAULT_LOCK_FILE, PluginPolicy, Policy};
pub use discovery::{PromptCache, RenderedPrompt, count_tokens, render_template, visible_tools};
pub use executor::Executor;
pub use manifest::{
    Capabilities, DirAccess, DirRequest, Field, HOST_API_VERSION, ManifestError, ParamSpec, ParamType, Permission,
    PluginManifest, ToolSpec, is_valid_name,
};
pub use outcome::{Status, ToolOutcome};
pub use printable::{printable, printable_lines, to_json_pretty};
pub use protocol::{Declared, MAX_WARNINGS, Parsed, ParsedCall, Protocol, ProtocolId, UnknownProtocol, Warning};
pub use registry::{
    CacheError, CacheUse, Catalog, Claimant, LoadError, LoadProgress, LoadedPlugin, LockError, LockFile, PinChange, PinState,
    Refusal, Registry, RegistryError, RegistryEvent, UnboundSection, component_files, sha256_hex,
};
pub use suggest::unknown_tool;
pub use sandbox::{
    Allowance, CallFailure, DirGrant, EnvGrant, GrantKind, Grants, HostMemoryAllocator, Invocation, Limits, ToolFailure,
    ToolFailureKind, ToolOutput, Withheld, accounting_active,
};

/// Every limit's default, and the fixed limits, as `docs/SECURITY.md`
/// lists them.
pub mod limits {
    pub use crate::sandbox::{
        DEFAULT_FUEL, DEFAULT_HOST_MEMORY_BYTES, DEFAULT_HTTP_REQUESTS, DEFAULT_INSTANCES, DEFAULT_MEMORIES,
        DEFAULT_MEMORY_BYTES, DEFAULT_OPEN_FILES, DEFAULT_OUTPUT_BYTES, DEFAULT_RESOURCES, DEFAULT_TABLE_ELEMENTS,
        DEFAULT_TABLES, DEFAULT_TIMEOUT, EPOCH_TICK, FUEL_PER_HOST_BYTE, HOST_CALL_FUEL, LOG_BYTES_PER_CALL,
        LOG_RECORD_COST, LOG_RECORDS_PER_CALL, MAX_CONCURRENT_CALLS, MAX_MEMORY_BYTES, MAX_TABLE_ELEMENTS,
        STACK_LIMIT_BYTES,
    };
}

/// Counts the host memory each call causes, so that the per-call
/// host-memory limit holds; see [`HostMemoryAllocator`]. Turn the
/// `host-memory-accounting` feature off to install your own allocator
/// (wrapped in [`HostMemoryAllocator`]).
#[cfg(feature = "host-memory-accounting")]
#[global_allocator]
static ALLOCATOR: HostMemoryAllocator = HostMemoryAllocator::new(std::alloc::System);
