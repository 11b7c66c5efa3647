//! [`ToolOutcome`]: what became of one call, as the model and the person
//! see it.

use crate::sandbox::{CallFailure, Invocation, ToolFailureKind};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
}

impl ToolOutcome {
    /// The outcome of a call that ran.
    pub fn from_invocation(id: &str, tool: &str, invocation: Invocation) -> Self {
        let (status, output) = match invocation.result {
            Ok(output) => (Status::Success, output.as_str().to_owned()),
            Err(failure) => (status_of(&failure), failure.to_string()),
        };
        ToolOutcome {
            id: id.to_owned(),
            tool: tool.to_owned(),
            status,
            output,
            duration: invocation.duration,
            fuel_used: invocation.fuel_used,
        }
    }

    /// An outcome for a call that never ran.
    pub fn without_running(id: &str, tool: &str, status: Status, message: String) -> Self {
        ToolOutcome {
            id: id.to_owned(),
            tool: tool.to_owned(),
            status,
            output: message,
            duration: Duration::ZERO,
            fuel_used: 0,
        }
    }
}

fn status_of(failure: &CallFailure) -> Status {
    match failure {
        CallFailure::Tool(f) if f.kind == ToolFailureKind::UnknownTool => Status::NotFound,
        CallFailure::Tool(_) | CallFailure::Trapped { .. } | CallFailure::Exited { .. } | CallFailure::Host(_) => {
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
    use serde::Serializer;
    use std::time::Duration;

    /// Milliseconds to the microsecond: `0.06`, not `0.060232999999999995`.
    pub fn serialize<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(duration.as_micros() as f64 / 1000.0)
    }
}
