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
//! Rules in `toolhost.toml` (`[[approval.rules]]`, see [`Rule`]) are
//! evaluated deny → ask → allow; the first match of the strictest kind
//! wins, optionally narrowed by argument patterns. A rule can make a tool
//! stricter than its level, or explicitly looser; `require_confirmation`
//! is never loosened by an allow rule. An [`Approver`] takes a batch of
//! pending calls and returns one decision each.
//!
//! The most interesting items:
//! - [`Approvals`]: [`assess`](Approvals::assess) a call, [`ask`](Approvals::ask)
//!   an approver about a batch, [`settle`](Approvals::settle) each answer
//!   (run or deny, a [`Settled`]; remembering "allow always"),
//!   [`audit`](Approvals::audit) the outcome;
//! - the adapters: [`DenyAll`] (nobody attached), [`AllowAll`] (`--yes`),
//!   [`TerminalApprover`] (a person at a terminal, or any reader and
//!   writer), [`ChannelApprover`] (a UI or an embedding program, with a
//!   timeout);
//! - [`ApprovalMemory`]: the remembered decisions, one crash-safe file.
//!
//! A host builds one [`Approvals`] from [`Policy::approval`](crate::Policy::approval)
//! and shows a person its [`take_warnings`](Approvals::take_warnings) (a
//! corrupt memory file, say). One turn's approval step then runs like this:
//!
//! ```no_run
//! use toolhost::{Approvals, DenyAll, PendingCall, ToolOutcome, ToolSpec, approval::{Assessment, AuditRecord, Settled}};
//! # async fn turn(approvals: &Approvals, tool: &ToolSpec, sha256: &str, args: serde_json::Map<String, serde_json::Value>) {
//! let approver = DenyAll; // or AllowAll, a TerminalApprover, a ChannelApprover
//! let mut pending = Vec::new();
//! let assessment = approvals.assess("coder", false, sha256, tool, &args, &[]);
//! if let Assessment::Ask(reason) = assessment {
//!     pending.push(PendingCall {
//!         id: "call-1".into(),
//!         agent: "coder".into(),
//!         plugin: tool.plugin.clone(),
//!         tool: tool.name.clone(),
//!         permission: tool.permission,
//!         args: args.clone(),
//!         reason,
//!     });
//! }
//! // All of a turn's asked calls go to the approver as one batch.
//! for (call, answer) in pending.iter().zip(approvals.ask(&approver, &pending).await) {
//!     match approvals.settle(call, sha256, answer).await {
//!         Settled::Run { by } => { /* execute; audit with `by` */ }
//!         Settled::Deny { by, reason } => {
//!             let outcome = ToolOutcome::without_running(&call.id, &call.tool, toolhost::Status::Denied, reason.clone());
//!             let decided = Assessment::from(Settled::Deny { by, reason });
//!             approvals.audit(&AuditRecord::new(&call.agent, Some(&call.plugin), &call.args, Some(&decided), &outcome));
//!         }
//!     }
//! }
//! # }
//! ```
//!
//! Results of tools with `result_approval` go to
//! [`Approver::approve_result`] before any message is formed; a rejected
//! result's text must go nowhere, only the rejection and its reason.

mod adapters;
mod approvals;
mod assessment;
mod audit;
mod channel;
mod memory;
mod opened_path;
mod resume;
mod rules;
mod section;
mod terminal;
mod unattended;

pub use adapters::{AllowAll, DenyAll};
pub use approvals::Approvals;
pub use assessment::{Assessment, Settled};
pub use audit::AuditRecord;
#[cfg(feature = "mcp")]
pub(crate) use audit::args_sha256;
pub use channel::{ApprovalRequest, ApprovalRequests, ChannelApprover, Reply};
pub use memory::{ApprovalMemory, MEMORY_FORMAT_VERSION, MEMORY_RECHECK, MemoryError, RememberedApproval};
pub use opened_path::{MAX_LINKS, MAX_PATH_BYTES};
pub(crate) use resume::ResumeSeal;
pub use resume::{LEDGER_GRACE, MAX_RESUME_LIFETIME, MAX_SPENT_TOKENS, MAX_TOKEN_BYTES, ResumeError};
pub use rules::{ApprovalConfig, DEFAULT_MEMORY_FILE, Rule, RuleAction, RuleError};
pub(crate) use section::ApprovalSection;
pub use terminal::TerminalApprover;
pub use unattended::{Unattended, UnattendedAction, UnattendedApprover};

use crate::manifest::{Permission, ToolSpec};
use crate::outcome::ToolOutcome;
use serde_json::{Map, Value};
use std::fmt;

/// Why a call waits for a person.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
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

/// `it is sensitive: every call is asked`: why, as a person reads it.
impl fmt::Display for AskReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AskReason::Moderate => f.write_str("it is moderate and no \"allow always\" is remembered for it"),
            AskReason::Sensitive => f.write_str("it is sensitive: every call is asked"),
            AskReason::RequireConfirmation => f.write_str("its agent has require_confirmation = true: every call is asked"),
            AskReason::Rule(rule) => write!(f, "an approval rule asks for it: {rule}"),
        }
    }
}

/// Who or what decided a call, as the audit log records it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum DecidedBy {
    /// The tool's permission level (a public tool runs).
    Level,
    /// A rule, as `approval.rules[0]: deny write_file`.
    Rule(String),
    /// A remembered "allow always".
    Remembered,
    /// A person.
    Person,
    /// The allow-all adapter (`--yes`).
    AllowAll,
    /// The deny-all adapter: nobody could approve.
    DenyAll,
    /// Nobody answered within the approver's timeout.
    TimedOut,
    /// The approver ended without an answer: input closed, channel gone,
    /// or fewer answers than calls.
    NoAnswer,
}

/// `level`, `rule approval.rules[0]: …`, `remembered`, `person`,
/// `allow-all`, `deny-all`, `timed-out`, `no-answer`.
impl fmt::Display for DecidedBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecidedBy::Level => f.write_str("level"),
            DecidedBy::Rule(rule) => write!(f, "rule {rule}"),
            DecidedBy::Remembered => f.write_str("remembered"),
            DecidedBy::Person => f.write_str("person"),
            DecidedBy::AllowAll => f.write_str("allow-all"),
            DecidedBy::DenyAll => f.write_str("deny-all"),
            DecidedBy::TimedOut => f.write_str("timed-out"),
            DecidedBy::NoAnswer => f.write_str("no-answer"),
        }
    }
}

/// A decision on one pending call, with who made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The decision.
    pub decision: CallDecision,
    /// Who made it.
    pub by: DecidedBy,
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
    /// The level the host holds the tool to: the level its plugin
    /// declares, raised where its grants raise it
    /// ([`ToolSpec::permission`]), as approval judges it.
    pub permission: Permission,
    /// The checked arguments.
    pub args: Map<String, Value>,
    /// Why it is asked.
    pub reason: AskReason,
}

impl PendingCall {
    /// Whether "allow always" may be offered for it: only for a moderate
    /// tool asked for its level, since a remembered approval answers
    /// exactly that question (a sensitive tool, an ask rule or
    /// `require_confirmation` asks every call). An answer choosing it
    /// where it was not offered is refused ([`Approvals::settle`]).
    pub fn offers_always(&self) -> bool {
        self.permission == Permission::Moderate && self.reason == AskReason::Moderate
    }
}

/// A person's (or an adapter's) decision on one pending call.
#[derive(Debug, Clone, PartialEq, Eq)]
// Exhaustive: a program that forwards decisions must handle each one,
// so a new kind of decision cannot fall through a wildcard and run.
pub enum CallDecision {
    /// Run it, this once.
    AllowOnce,
    /// Run it, and do not ask again for this tool: only where the
    /// question offered it ([`PendingCall::offers_always`]); a person's
    /// "always" elsewhere is refused and the call denied.
    AllowAlways,
    /// Do not run it; the reason reaches the model.
    Deny {
        /// Why, in words for the model.
        reason: Option<String>,
    },
}

/// A person's decision on a result that needs approval.
#[derive(Debug, Clone, PartialEq, Eq)]
// Exhaustive: a program that forwards decisions must handle each one,
// so a new kind of decision cannot fall through a wildcard and run.
pub enum ResultDecision {
    /// Pass it on.
    Pass,
    /// Withhold it; the model sees only that it was rejected, and why.
    Reject {
        /// Why, in words for the model.
        reason: Option<String>,
    },
}

/// A decision on a held result, with who made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultAnswer {
    /// The decision.
    pub decision: ResultDecision,
    /// Who made it: a person, or an adapter deciding by itself (which the
    /// text the model reads of a withheld result says).
    pub by: DecidedBy,
}

impl ResultAnswer {
    /// `decision`, made by a person.
    pub fn by_person(decision: ResultDecision) -> Self {
        ResultAnswer { decision, by: DecidedBy::Person }
    }
}

/// Decides pending calls and results. Implementations: deny-all,
/// allow-all, a terminal, a channel for UIs.
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    /// One decision per call, in the same order.
    async fn approve_calls(&self, calls: &[PendingCall]) -> Vec<CallDecision>;

    /// Whether `outcome` of `tool` may go on.
    async fn approve_result(&self, outcome: &ToolOutcome, tool: &ToolSpec) -> ResultDecision;

    /// [`approve_calls`](Self::approve_calls), saying who made each
    /// decision, for the audit log. The default says a person made them
    /// all; adapters that decide by themselves (deny-all, allow-all, a
    /// timeout, closed input) say so.
    async fn answer_calls(&self, calls: &[PendingCall]) -> Vec<Answer> {
        let decisions = self.approve_calls(calls).await;
        decisions.into_iter().map(|decision| Answer { decision, by: DecidedBy::Person }).collect()
    }

    /// [`approve_result`](Self::approve_result), saying who decided. The
    /// default says a person did; adapters that decide by themselves (a
    /// timeout, nobody attached, `unattended`) say so, and a result they
    /// withhold is not said to be withheld by a person.
    async fn answer_result(&self, outcome: &ToolOutcome, tool: &ToolSpec) -> ResultAnswer {
        ResultAnswer::by_person(self.approve_result(outcome, tool).await)
    }
}
