//! Why a call did not give a result, and what one call did: the failure
//! vocabulary every door reports, kept as data.

use crate::units::{grouped, human_bytes, human_duration};
use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

/// A tool's successful result.
#[derive(Debug, Clone, PartialEq, Eq)]
// Exhaustive: it mirrors the WIT `output`, which changes only with a new
// contract version, and then every match must handle the new case.
pub enum ToolOutput {
    /// Plain text.
    Text(String),
    /// A serialized JSON document.
    Json(String),
}

impl ToolOutput {
    /// The output as text.
    pub fn as_str(&self) -> &str {
        match self {
            ToolOutput::Text(s) | ToolOutput::Json(s) => s,
        }
    }
}

/// How a plugin said its tool failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
// Exhaustive: it mirrors the WIT `tool-error`, which changes only with a new
// contract version, and then every match must handle the new case.
pub enum ToolFailureKind {
    /// The arguments were wrong.
    InvalidArgs,
    /// The plugin has no such tool.
    UnknownTool,
    /// The tool ran and failed.
    Failed,
}

/// A failure the plugin itself reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFailure {
    /// Which kind.
    pub kind: ToolFailureKind,
    /// The plugin's message.
    pub message: String,
}

/// Why a call did not return a result. Every variant that stems from a
/// limit names the limit and its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallFailure {
    /// The plugin returned an error.
    #[error("{}", .0.message)]
    Tool(ToolFailure),
    /// The fuel limit was reached.
    #[error("out of fuel after {} units", grouped(*limit))]
    OutOfFuel {
        /// The fuel limit.
        limit: u64,
    },
    /// The wall-clock deadline passed; the call was stopped.
    #[error("timed out after {}", human_duration(*limit))]
    TimedOut {
        /// The deadline.
        limit: Duration,
    },
    /// Linear memory would have grown past the limit.
    #[error("memory limit {} exceeded", human_bytes(*limit))]
    MemoryLimit {
        /// The memory limit in bytes.
        limit: usize,
    },
    /// The host held more memory for the call than allowed.
    #[error("host memory limit {} exceeded", human_bytes(*limit))]
    HostMemoryLimit {
        /// The host-memory limit in bytes.
        limit: usize,
    },
    /// One host call was handed more data than the host takes at once.
    #[error("a host call was handed more than {} at once, the limit for one call", human_bytes(*limit))]
    HostCallTooLarge {
        /// The bytes one host call may take.
        limit: usize,
    },
    /// The WebAssembly stack was exhausted.
    #[error("stack limit {} exceeded", human_bytes(*limit))]
    StackOverflow {
        /// The stack limit in bytes.
        limit: usize,
    },
    /// The output was larger than allowed.
    #[error("output of {} exceeds the limit of {}", human_bytes(*size), human_bytes(*limit))]
    OutputTooLarge {
        /// The output's size in bytes.
        size: usize,
        /// The output limit in bytes.
        limit: usize,
    },
    /// A count limit (instances, tables, memories, table elements,
    /// resources, open files) was hit.
    #[error("{what} limit {limit} exceeded")]
    ResourceLimit {
        /// Which resource.
        what: &'static str,
        /// Its limit.
        limit: usize,
    },
    /// The plugin reached an HTTP host it was not granted, then failed.
    #[error("HTTP host {} is not granted to plugin `{plugin}`; the plugin then failed: {plugin_error}", hosts.join(", "))]
    HttpDenied {
        /// The plugin.
        plugin: String,
        /// The hosts it tried (the first few, then how many more).
        hosts: Vec<String>,
        /// What the plugin said when it failed.
        plugin_error: String,
    },
    /// The plugin sent more HTTP requests than allowed, then failed.
    #[error("HTTP requests limit {limit} exceeded; the plugin then failed: {plugin_error}")]
    HttpRequestsLimit {
        /// The limit.
        limit: usize,
        /// What the plugin said when it failed.
        plugin_error: String,
    },
    /// The plugin called an interface it was not granted.
    #[error("plugin `{plugin}` called `{function}`, but {}", missing_grant(*capability, plugin, *reading_manifest))]
    NotGranted {
        /// The plugin (its file, while its manifest is read).
        plugin: String,
        /// Whether this happened while its manifest was read, when no
        /// plugin has any grant.
        reading_manifest: bool,
        /// Which capability it lacks.
        capability: GrantKind,
        /// The function it called.
        function: String,
    },
    /// The plugin exited (WASI `exit`) instead of returning a result.
    #[error("the plugin exited with status {status} instead of returning a result")]
    Exited {
        /// Its exit status.
        status: i32,
    },
    /// The plugin trapped: a panic, an `unreachable`, a bad memory access.
    #[error(
        "plugin trapped: {trap}{}{}",
        if stderr.is_empty() { String::new() } else { format!("; stderr: {stderr}") },
        refused.as_deref().map(|r| format!(" (earlier, {r})")).unwrap_or_default()
    )]
    Trapped {
        /// The trap.
        trap: String,
        /// The end of what it wrote to stderr, often a panic message.
        stderr: String,
        /// A growth the limiter refused before the trap, if any.
        refused: Option<String>,
    },
    /// The call was cancelled before it finished.
    #[error("cancelled before it finished")]
    Cancelled,
    /// The plugin could not be instantiated or called.
    #[error("the host could not run the plugin: {message}")]
    Host {
        /// What went wrong, its causes included.
        message: String,
        /// The error itself, where the host had one.
        #[source]
        source: Option<SharedError>,
    },
}

/// A capability linked only where granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GrantKind {
    /// Outbound HTTP (`wasi:http`).
    Http,
    /// Raw sockets (`wasi:sockets`), never granted.
    Sockets,
}

fn missing_grant(capability: GrantKind, plugin: &str, reading_manifest: bool) -> String {
    match capability {
        _ if reading_manifest => "a manifest is read with no grants at all".into(),
        GrantKind::Http => {
            format!("no HTTP host is granted to it; allow hosts with `http_hosts` in its [plugins.{plugin}] section")
        }
        GrantKind::Sockets => "toolhost never grants sockets; a plugin reaches the network through granted HTTP hosts".into(),
    }
}

/// What one call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The result, or why there is none.
    pub result: Result<ToolOutput, CallFailure>,
    /// Fuel units burned.
    pub fuel_used: u64,
    /// Wall-clock time, instantiation included.
    pub duration: Duration,
}

/// An error kept as the source of one that must be `Clone` and `Eq` (a
/// [`CallFailure`]): shared by its clones, compared by
/// its text.
#[derive(Debug, Clone)]
pub struct SharedError(Arc<dyn Error + Send + Sync>);

impl SharedError {
    /// Keep `error`.
    pub fn new(error: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        SharedError(Arc::from(error.into()))
    }
}

impl std::fmt::Display for SharedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl Error for SharedError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for SharedError {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_string() == other.0.to_string()
    }
}

impl Eq for SharedError {}
