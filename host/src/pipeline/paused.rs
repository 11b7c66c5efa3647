//! A turn stopped where a person must decide: [`PausedTurn`], what it
//! waits for ([`Waiting`]) and the [`Decisions`] that continue it.

use crate::approval::{Answer, Assessment, AuditRecord, PendingCall, ResultAnswer};
use crate::checked_call::CheckedCall;
use crate::manifest::ToolSpec;
use crate::outcome::ToolOutcome;

use super::TurnResult;

/// How far a turn went without a person.
#[derive(Debug)]
#[must_use]
pub enum TurnStep {
    /// Every call is done.
    Done(TurnResult),
    /// A person must decide first: [`Pipeline::resume`](super::Pipeline::resume)
    /// with the decisions continues it.
    Waiting(PausedTurn),
}

/// A turn waiting for a person: the calls (or results) to decide, and
/// every other call where it stands. Continue it with
/// [`Pipeline::resume`](super::Pipeline::resume), here, or seal it with
/// [`Pipeline::seal`](super::Pipeline::seal) to continue it elsewhere.
pub struct PausedTurn {
    /// The agent it runs as: a token is resumed only by a turn of the same.
    pub(super) agent: String,
    pub(super) slots: Vec<Slot>,
    pub(super) question: Question,
}

/// What a paused turn waits for.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Waiting<'a> {
    /// Calls a person must allow or deny, in the turn's order: answer
    /// each with an [`Answer`] ([`Decisions::Calls`]). "Allow always" may
    /// be offered where [`PendingCall::offers_always`] says so.
    Calls(&'a [PendingCall]),
    /// Results a person must pass or reject before anything else sees
    /// them ([`Decisions::Results`]).
    Results(&'a [PendingResult]),
}

/// A person's decisions on what a paused turn waits for.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Decisions {
    /// One per waiting call, in order.
    Calls(Vec<Answer>),
    /// One per waiting result, in order.
    Results(Vec<ResultAnswer>),
    /// The turn was cancelled while it waited: the waiting calls end
    /// cancelled, none of a waiting result's text goes on.
    Cancelled,
}

/// A result of a tool that declares result approval, held until a person
/// passes it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PendingResult {
    /// The plugin that ran the call.
    pub plugin: String,
    /// The tool's declaration.
    pub spec: ToolSpec,
    /// What the call produced: its text goes nowhere before it is passed.
    pub outcome: ToolOutcome,
}

impl PendingResult {
    pub(super) fn new(call: &CheckedCall, outcome: &ToolOutcome) -> Self {
        PendingResult { plugin: call.plugin().name().to_owned(), spec: call.spec().clone(), outcome: outcome.clone() }
    }
}

/// Where a call stands as it goes through the steps.
pub(super) enum Slot {
    /// Checked, waiting for a decision or to run; `decided` is how
    /// approval ended (run, by whom), once it has.
    Pending { call: CheckedCall, decided: Option<Assessment> },
    /// Running: the executor has the call.
    Running,
    /// Ran; its result waits for a person.
    Held { call: CheckedCall, decided: Option<Assessment>, outcome: ToolOutcome },
    /// Done: refused, denied, or run; what the audit log records, when
    /// there is one.
    Done { outcome: ToolOutcome, audit: Option<AuditRecord> },
}

/// What a paused turn asks, and which slots the answers go to.
pub(super) enum Question {
    /// The asked calls (`calls[i]` is slot `indices[i]`).
    Calls { indices: Vec<usize>, calls: Vec<PendingCall> },
    /// The held results.
    Results { indices: Vec<usize>, results: Vec<PendingResult> },
}

impl PausedTurn {
    pub(super) fn new(agent: &str, slots: Vec<Slot>, question: Question) -> Self {
        PausedTurn { agent: agent.to_owned(), slots, question }
    }

    /// What it waits for.
    pub fn waiting(&self) -> Waiting<'_> {
        match &self.question {
            Question::Calls { calls, .. } => Waiting::Calls(calls),
            Question::Results { results, .. } => Waiting::Results(results),
        }
    }

    /// The outcomes of the calls already done (refused at the check or
    /// denied by the rules; ran, where results wait), in the turn's order.
    pub fn done(&self) -> impl Iterator<Item = &ToolOutcome> {
        self.slots.iter().filter_map(|slot| match slot {
            Slot::Done { outcome, .. } => Some(outcome),
            _ => None,
        })
    }
}

impl std::fmt::Debug for PausedTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PausedTurn").field("agent", &self.agent).field("waiting", &self.waiting()).finish_non_exhaustive()
    }
}
