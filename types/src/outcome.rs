//! [`ToolOutcome`]: what became of one call, as the model and the person
//! see it.

use crate::failure::{CallFailure, Invocation, ToolFailureKind};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Status {
    /// The tool returned a result.
    Success,
    /// The tool reported an error, or trapped.
    Error,
    /// A person or the policy refused the call, or it used a capability it
    /// was not granted.
    Denied,
    /// A person refused to pass the result on.
    ResultRejected,
    /// No tool of that name is loaded.
    NotFound,
    /// The arguments do not fit the tool's declaration.
    InvalidArgs,
    /// The wall-clock deadline passed.
    TimedOut,
    /// The fuel limit was reached.
    OutOfFuel,
    /// A memory, stack, output or count limit was reached.
    LimitExceeded,
    /// The call was cancelled before it finished.
    Cancelled,
}

impl Status {
    /// The kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Success => "success",
            Status::Error => "error",
            Status::Denied => "denied",
            Status::ResultRejected => "result-rejected",
            Status::NotFound => "not-found",
            Status::InvalidArgs => "invalid-args",
            Status::TimedOut => "timed-out",
            Status::OutOfFuel => "out-of-fuel",
            Status::LimitExceeded => "limit-exceeded",
            Status::Cancelled => "cancelled",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What became of one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolOutcome {
    /// The call's id.
    pub id: String,
    /// The tool's name.
    pub tool: String,
    /// How it ended.
    pub status: Status,
    /// The result, or the message that says what went wrong (naming the
    /// limit and its value where one was hit).
    pub output: String,
    /// Wall-clock time (serialized as `duration_ms`).
    #[serde(rename = "duration_ms", with = "millis")]
    pub duration: Duration,
    /// Fuel burned.
    pub fuel_used: u64,
    /// Why it did not succeed, as data to match on; `None` on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
}

impl ToolOutcome {
    /// The outcome of a call that ran.
    pub fn from_invocation(id: &str, tool: &str, invocation: Invocation) -> Self {
        let (status, output, failure) = match invocation.result {
            Ok(output) => (Status::Success, output.as_str().to_owned(), None),
            Err(failure) => (status_of(&failure), failure.to_string(), Some(Failure::of_call(&failure))),
        };
        ToolOutcome {
            id: id.to_owned(),
            tool: tool.to_owned(),
            status,
            output,
            duration: invocation.duration,
            fuel_used: invocation.fuel_used,
            failure,
        }
    }

    /// An outcome for a call that never ran; unless it is a success, its
    /// failure's kind follows `status`.
    pub fn without_running(id: &str, tool: &str, status: Status, message: String) -> Self {
        ToolOutcome {
            id: id.to_owned(),
            tool: tool.to_owned(),
            status,
            output: message,
            duration: Duration::ZERO,
            fuel_used: 0,
            failure: Failure::of_status(status),
        }
    }

    /// The same outcome, its failure (if any) naming the plugin that ran
    /// the call and its version (written out only for a failure).
    #[must_use]
    pub fn of_plugin(mut self, name: &str, version: &(impl std::fmt::Display + ?Sized)) -> Self {
        if let Some(failure) = &mut self.failure {
            failure.plugin = Some(name.to_owned());
            failure.plugin_version = Some(version.to_string());
        }
        self
    }
}

/// Why a call did not succeed, beside the text of [`ToolOutcome::output`]:
/// what a program matches on, never the message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Failure {
    /// What kind of failure.
    pub kind: FailureKind,
    /// The limit that stopped the call, and its value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<LimitHit>,
    /// The HTTP hosts the plugin tried and was not granted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// The plugin that ran the call, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// That plugin's version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin_version: Option<String>,
}

/// A limit a call reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LimitHit {
    /// The limit's name, its unit in it: `fuel`, `timeout_ms`,
    /// `memory_bytes`, `host_memory_bytes`, `host_call_bytes`,
    /// `stack_bytes`, `output_bytes`, `http_requests`, or a count
    /// (`open_files`, `resources`, `instances`, `table_elements`…).
    pub name: String,
    /// Its value, in that unit.
    pub value: u64,
}

/// What kind of failure ended a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum FailureKind {
    /// The tool ran and reported that it failed.
    ToolFailed,
    /// The arguments do not fit: the host's check, or the plugin said so.
    InvalidArgs,
    /// No tool of that name is loaded, or the plugin has none.
    NotFound,
    /// The plugin trapped (a panic, `unreachable`, a bad memory access).
    Trapped,
    /// The plugin exited instead of returning.
    Exited,
    /// The fuel limit.
    OutOfFuel,
    /// The wall-clock limit.
    TimedOut,
    /// The linear-memory limit.
    MemoryLimit,
    /// The host-memory limit.
    HostMemoryLimit,
    /// More data handed to one host call than it takes.
    HostCallTooLarge,
    /// The WebAssembly stack.
    StackOverflow,
    /// The output limit.
    OutputTooLarge,
    /// A count limit (instances, tables, open files, resources…).
    ResourceLimit,
    /// The HTTP requests limit.
    HttpRequestsLimit,
    /// The plugin reached an HTTP host it was not granted.
    HttpDenied,
    /// The plugin called an interface it was not granted.
    NotGranted,
    /// A person or the policy refused the call.
    Denied,
    /// A person refused to pass the result on.
    ResultRejected,
    /// Cancelled before it finished.
    Cancelled,
    /// The host could not run the plugin.
    HostError,
    /// It failed, and nothing more is known (an outcome another host
    /// reported, say).
    Error,
}

impl Failure {
    fn new(kind: FailureKind) -> Self {
        Failure { kind, limit: None, hosts: Vec::new(), plugin: None, plugin_version: None }
    }

    fn with_limit(kind: FailureKind, name: &str, value: impl TryInto<u64>) -> Self {
        let value = value.try_into().unwrap_or(u64::MAX);
        Failure { limit: Some(LimitHit { name: name.to_owned(), value }), ..Failure::new(kind) }
    }

    /// The failure of a call that ran.
    fn of_call(failure: &CallFailure) -> Self {
        use FailureKind as K;
        match failure {
            CallFailure::Tool(f) => Failure::new(match f.kind {
                ToolFailureKind::InvalidArgs => K::InvalidArgs,
                ToolFailureKind::UnknownTool => K::NotFound,
                ToolFailureKind::Failed => K::ToolFailed,
            }),
            CallFailure::OutOfFuel { limit } => Failure::with_limit(K::OutOfFuel, "fuel", *limit),
            CallFailure::TimedOut { limit } => Failure::with_limit(K::TimedOut, "timeout_ms", limit.as_millis()),
            CallFailure::MemoryLimit { limit } => Failure::with_limit(K::MemoryLimit, "memory_bytes", *limit),
            CallFailure::HostMemoryLimit { limit } => Failure::with_limit(K::HostMemoryLimit, "host_memory_bytes", *limit),
            CallFailure::HostCallTooLarge { limit } => Failure::with_limit(K::HostCallTooLarge, "host_call_bytes", *limit),
            CallFailure::StackOverflow { limit } => Failure::with_limit(K::StackOverflow, "stack_bytes", *limit),
            CallFailure::OutputTooLarge { limit, .. } => Failure::with_limit(K::OutputTooLarge, "output_bytes", *limit),
            CallFailure::ResourceLimit { what, limit } => Failure::with_limit(K::ResourceLimit, &what.replace(' ', "_"), *limit),
            CallFailure::HttpRequestsLimit { limit, .. } => Failure::with_limit(K::HttpRequestsLimit, "http_requests", *limit),
            CallFailure::HttpDenied { hosts, .. } => Failure { hosts: hosts.clone(), ..Failure::new(K::HttpDenied) },
            CallFailure::NotGranted { .. } => Failure::new(K::NotGranted),
            CallFailure::Exited { .. } => Failure::new(K::Exited),
            CallFailure::Trapped { .. } => Failure::new(K::Trapped),
            CallFailure::Cancelled => Failure::new(K::Cancelled),
            CallFailure::Host { .. } => Failure::new(K::HostError),
        }
    }

    /// The failure of a call that did not run, as far as its status tells.
    pub fn of_status(status: Status) -> Option<Self> {
        use FailureKind as K;
        let kind = match status {
            Status::Success => return None,
            Status::Error | Status::LimitExceeded => K::Error,
            Status::Denied => K::Denied,
            Status::ResultRejected => K::ResultRejected,
            Status::NotFound => K::NotFound,
            Status::InvalidArgs => K::InvalidArgs,
            Status::TimedOut => K::TimedOut,
            Status::OutOfFuel => K::OutOfFuel,
            Status::Cancelled => K::Cancelled,
        };
        Some(Failure::new(kind))
    }
}

fn status_of(failure: &CallFailure) -> Status {
    match failure {
        CallFailure::Tool(f) if f.kind == ToolFailureKind::UnknownTool => Status::NotFound,
        CallFailure::Tool(f) if f.kind == ToolFailureKind::InvalidArgs => Status::InvalidArgs,
        CallFailure::Tool(_) | CallFailure::Trapped { .. } | CallFailure::Exited { .. } | CallFailure::Host { .. } => {
            Status::Error
        }
        CallFailure::OutOfFuel { .. } => Status::OutOfFuel,
        CallFailure::Cancelled => Status::Cancelled,
        CallFailure::TimedOut { .. } => Status::TimedOut,
        CallFailure::HttpDenied { .. } | CallFailure::NotGranted { .. } => Status::Denied,
        CallFailure::MemoryLimit { .. }
        | CallFailure::HostMemoryLimit { .. }
        | CallFailure::HostCallTooLarge { .. }
        | CallFailure::HttpRequestsLimit { .. }
        | CallFailure::StackOverflow { .. }
        | CallFailure::OutputTooLarge { .. }
        | CallFailure::ResourceLimit { .. } => Status::LimitExceeded,
    }
}

mod millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    /// Milliseconds to the microsecond: `0.06`, not `0.060232999999999995`.
    pub(crate) fn serialize<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(duration.as_micros() as f64 / 1000.0)
    }

    /// Milliseconds back to a duration; a negative, infinite or absurd
    /// number is an error, never a panic.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        let millis = f64::deserialize(deserializer)?;
        Duration::try_from_secs_f64(millis / 1000.0).map_err(serde::de::Error::custom)
    }
}
