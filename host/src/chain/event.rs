//! What the loop tells its watchers ([`ChainEvent`]), why it stopped
//! ([`Stop`]), and what a person decides in manual mode
//! ([`ManualDecision`]).

use crate::approval::PendingCall;
use crate::call::ToolCall;
use crate::outcome::{Status, ToolOutcome};
use crate::transcript::{RequestedCall, call_text};
use serde::Serialize;
use serde_json::{Map, Value};

/// A call, as events name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CallRef {
    /// The call's id.
    pub id: String,
    /// The tool.
    pub tool: String,
}

impl From<&ToolCall> for CallRef {
    fn from(call: &ToolCall) -> Self {
        CallRef { id: call.id.clone(), tool: call.tool.clone() }
    }
}

impl From<&PendingCall> for CallRef {
    fn from(call: &PendingCall) -> Self {
        CallRef { id: call.id.clone(), tool: call.tool.clone() }
    }
}

/// Something that happened in the loop, as it happens: for a terminal or
/// a page to show, or `--json` to print.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ChainEvent {
    /// The model is asked for a reply.
    Requesting {
        /// Rounds of calls so far in this user turn.
        iteration: u32,
    },
    /// Reply text as it streams in.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// Reasoning text as it streams in: for people, never parsed.
    ReasoningDelta {
        /// The new text.
        text: String,
    },
    /// The reply is complete and these calls were found in it.
    CallsParsed {
        /// The calls, in order (empty: the model answered).
        calls: Vec<RequestedCall>,
        /// What the parser repaired or dropped.
        warnings: Vec<String>,
    },
    /// These calls wait for a person.
    AwaitingApproval {
        /// The calls.
        calls: Vec<CallRef>,
    },
    /// These calls start to run.
    Executing {
        /// The calls.
        calls: Vec<CallRef>,
    },
    /// A call is done.
    Outcome {
        /// The call's id.
        id: String,
        /// The tool.
        tool: String,
        /// The arguments as the model wrote them (as run, when a person
        /// edited them).
        arguments: String,
        /// How it ended.
        status: Status,
        /// How long it ran, in milliseconds.
        duration_ms: f64,
        /// Its result, or what went wrong.
        output: String,
    },
    /// A round of calls is done and its results recorded.
    IterationDone {
        /// Rounds so far in this user turn.
        iteration: u32,
    },
    /// Something worth saying that is not an error (a parser repair, a
    /// reply cut by the model's length limit).
    Warning {
        /// What.
        message: String,
    },
    /// The model could not be had; the transcript keeps what arrived.
    Error {
        /// What went wrong.
        message: String,
    },
    /// The loop stopped.
    Finished {
        /// Why.
        stop: Stop,
    },
}

impl ChainEvent {
    /// The outcome of `call` (`None`: a call no reply asked for, such as
    /// one a VCP server reports without its block).
    pub(crate) fn outcome(call: Option<&ToolCall>, outcome: &ToolOutcome) -> Self {
        ChainEvent::Outcome {
            id: outcome.id.clone(),
            tool: outcome.tool.clone(),
            arguments: call.map(call_text).unwrap_or_default(),
            status: outcome.status,
            duration_ms: outcome.duration.as_secs_f64() * 1000.0,
            output: outcome.output.clone(),
        }
    }
}

/// Why the loop stopped.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Stop {
    /// The model replied without calls: its answer.
    Answered,
    /// `max_iterations` rounds of calls ran; the model got no further turn.
    IterationLimit {
        /// The limit.
        limit: u32,
    },
    /// The model kept making the same call after it was told to stop.
    Repeated {
        /// The tool.
        tool: String,
    },
    /// The turn was cancelled.
    Cancelled,
    /// The model could not be had (see the transcript's note).
    ModelFailed {
        /// What went wrong.
        message: String,
    },
    /// Manual mode: these calls wait for a person to run, answer or skip
    /// them ([`Chain::resume`](super::Chain::resume)).
    AwaitingDecisions {
        /// The calls.
        calls: Vec<RequestedCall>,
    },
}

/// Why the loop stopped, as a person reads it.
impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Answered => f.write_str("the model answered"),
            Stop::IterationLimit { limit } => {
                write!(
                    f,
                    "stopped after {limit} rounds of tool calls (the agent's max_iterations); the model got no further turn"
                )
            }
            Stop::Repeated { tool } => write!(f, "stopped: the model kept calling `{tool}` with the same arguments"),
            Stop::Cancelled => f.write_str("cancelled"),
            Stop::ModelFailed { message } => write!(f, "the model failed: {message}"),
            Stop::AwaitingDecisions { calls } => {
                let count = calls.len();
                write!(
                    f,
                    "{count} call{} wait{} for a decision",
                    if count == 1 { "" } else { "s" },
                    if count == 1 { "s" } else { "" }
                )
            }
        }
    }
}

/// What a person does with one call in manual mode.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ManualDecision {
    /// Run it, with these arguments instead of the model's when given.
    Run {
        /// The call's id.
        id: String,
        /// Edited arguments.
        arguments: Option<Map<String, Value>>,
    },
    /// Do not run it; this text is its result.
    Answer {
        /// The call's id.
        id: String,
        /// The result the model sees.
        output: String,
    },
    /// Do not run it; the model is told it was skipped, and why.
    Skip {
        /// The call's id.
        id: String,
        /// Why, in words for the model.
        reason: Option<String>,
    },
}

impl ManualDecision {
    /// The id of the call it decides.
    pub fn id(&self) -> &str {
        match self {
            ManualDecision::Run { id, .. } | ManualDecision::Answer { id, .. } | ManualDecision::Skip { id, .. } => id,
        }
    }
}
