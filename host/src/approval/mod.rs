//! Approval: which calls a person must allow before they run, and which
//! results a person must pass before anything else sees them.
//!
//! | level | without rules |
//! | --- | --- |
//! | public | runs |
//! | moderate | asks; "allow always" is remembered per (agent, plugin, tool, plugin SHA-256) |
//! | sensitive | asks every call |
//! | any, agent has `require_confirmation` | asks every call |
//! | result approval | the result is shown to a person before it goes anywhere |
//!
//! Rules in `toolhost.toml` (`[[approval.rules]]`) are evaluated deny →
//! ask → allow; the first match of the strictest kind wins, optionally
//! narrowed by argument patterns. An [`Approver`] takes a batch of pending
//! calls and returns one decision each.
//!
//! (Interface agreed between the pipeline and this module; the
//! implementation fills in the rest.)

mod interim;

pub use interim::{AllowAll, Approvals, Assessment, DecidedBy, DenyAll};

use crate::manifest::{Permission, ToolSpec};
use crate::outcome::ToolOutcome;
use serde_json::{Map, Value};

/// Why a call waits for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskReason {
    /// The tool is moderate and no "allow always" is remembered for it.
    Moderate,
    /// The tool is sensitive: every call is asked.
    Sensitive,
    /// The agent has `require_confirmation = true`.
    RequireConfirmation,
    /// An `ask` rule matched; its description.
    Rule(String),
}

/// A call waiting for a person's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingCall {
    /// The call's id, as the model gave it.
    pub id: String,
    /// The agent the call came from.
    pub agent: String,
    /// The plugin that offers the tool.
    pub plugin: String,
    /// The tool.
    pub tool: String,
    /// Its declared permission level.
    pub permission: Permission,
    /// The checked arguments.
    pub args: Map<String, Value>,
    /// Why it is asked.
    pub reason: AskReason,
}

/// A person's (or an adapter's) decision on one pending call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallDecision {
    /// Run it, this once.
    AllowOnce,
    /// Run it, and do not ask again for this tool (moderate tools only;
    /// for others it counts as once).
    AllowAlways,
    /// Do not run it; the reason reaches the model.
    Deny {
        /// Why, in words for the model.
        reason: Option<String>,
    },
}

/// A person's decision on a result that needs approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultDecision {
    /// Pass it on.
    Pass,
    /// Withhold it; the model sees only that it was rejected, and why.
    Reject {
        /// Why, in words for the model.
        reason: Option<String>,
    },
}

/// Decides pending calls and results. Implementations: deny-all,
/// allow-all, a terminal, a channel for UIs.
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    /// One decision per call, in the same order.
    async fn approve_calls(&self, calls: &[PendingCall]) -> Vec<CallDecision>;

    /// Whether `outcome` of `tool` may go on.
    async fn approve_result(&self, outcome: &ToolOutcome, tool: &ToolSpec) -> ResultDecision;
}
