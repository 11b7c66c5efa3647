//! The turn pipeline: what every door (chat, the VCP node, MCP, the CLI)
//! does with the calls of one reply.
//!
//! 1. **check** each call against its declaration in one catalog snapshot
//!    per turn: the tool must exist for the agent (else the closest
//!    names), required parameters must be there, values are coerced to the
//!    declared types; the call is bound to that plugin ([`CheckedCall`]);
//! 2. **approve** the calls that need it, as one batch to the [`Approver`],
//!    after the policy's rules and levels ([`Approvals`]);
//! 3. **execute** the approved ones on the [`Executor`], in the plugins
//!    they were checked and approved against (a reload meanwhile changes
//!    the next turn, not this one), serially or in parallel as the agent
//!    says, within its timeout (a direct call has only the plugin's),
//!    cancellable;
//! 4. **approve results** of tools that declare result approval: a
//!    rejected result's text goes nowhere;
//! 5. **format** the outcomes as the protocol's messages for the model,
//!    plus a summary for people.
//!
//! Outcomes keep the calls' order and ids; each call is audited.
//!
//! A turn that needs a person does not block inside the pipeline:
//! [`Pipeline::start`] returns what waits ([`TurnStep::Waiting`]: the
//! checked calls, why each is asked, whether "allow always" may be
//! offered; or, at step 4, the results) and [`Pipeline::resume`] finishes
//! it with the decisions. [`Pipeline::seal`] turns a paused turn into an
//! authenticated, encrypted resume token bound to the checked calls'
//! identity and an expiry, which [`Pipeline::unseal`] opens, once, in any
//! process with the same host key and components (an MCP client's retry
//! reaching another replica, say). [`Pipeline::run`] drives the same
//! steps with the pipeline's [`Approver`]: the terminal, the console, MCP
//! elicitation and the VCP node ask through it.
//!
//! What the host does itself at a caller's request, not a plugin's tool
//! (the VCP node serving a file to its server), is decided by the same
//! steps as one call: assessed under the same rules, asked of the same
//! approver, settled and audited by the same code (`host_action`).

mod host_action;
mod paused;
mod token;

#[cfg_attr(not(feature = "vcp"), expect(unused_imports, reason = "only the VCP node's file requests are host actions"))]
pub(crate) use host_action::HostAction;
pub use paused::{Decisions, PausedTurn, PendingResult, TurnStep, Waiting};
pub use token::ResumeError;

use crate::agent::ToolCallConfig;
use crate::approval::{
    Answer, Approvals, Approver, AskReason, Assessment, AuditRecord, CallDecision, DecidedBy, PendingCall, ResultAnswer,
    ResultDecision, Settled,
};
use crate::call::ToolCall;
use crate::checked_call::CheckedCall;
use crate::executor::{Executor, RunOptions};
use crate::manifest::ToolSpec;
use crate::message::Message;
use crate::outcome::{Status, ToolOutcome};
use crate::protocol::ProtocolId;
use crate::registry::Catalog;
use crate::sandbox::DirGrant;
use crate::tool_filter::ToolFilter;
use paused::{Question, Slot};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Who calls, and how: the agent's configuration and protocol.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Turn {
    /// The agent the reply came from; `None` for a direct call (the CLI's
    /// `call`), which may call any loaded tool.
    pub agent: Option<String>,
    /// The agent's tool settings: which tools it has, `timeout_ms`,
    /// `parallel_execution`, `require_confirmation`. A direct call uses
    /// the defaults, except `timeout_ms`: see [`Turn::timeout`].
    pub config: ToolCallConfig,
    /// The protocol the results are formatted in.
    pub protocol: ProtocolId,
    /// Cancels the turn: calls not yet finished end `cancelled`, whether
    /// they wait for a person or run.
    pub cancel: CancellationToken,
    /// Whom the calls come from, which decides the tools they may call.
    pub audience: Audience,
    /// A person already chose these calls (manual mode): questions the
    /// permission levels or `require_confirmation` would ask are not asked
    /// again. Deny rules still hold.
    pub chosen_by_person: bool,
    /// Narrows the tools the audience may call further, as a door's own
    /// section does (`[mcp] tools`, `tags`, `levels`); a call to a tool it
    /// leaves out is `not-found`, as if it were not loaded.
    pub filter: Option<Arc<ToolFilter>>,
}

/// Whom a turn's calls come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Audience {
    /// A model, through its agent: the agent-callable tools its
    /// configuration turns on ([`ToolCallConfig::offers`]).
    #[default]
    Model,
    /// Another system, such as a VCP server this host joined as a node:
    /// the distributed-exposed tools the configuration turns on
    /// ([`ToolCallConfig::exposes`]).
    Distributed,
}

impl Turn {
    /// A direct call: no agent, default settings, results in `protocol`;
    /// no timeout but the plugin's own.
    pub fn direct(protocol: ProtocolId) -> Self {
        Turn {
            agent: None,
            config: ToolCallConfig::default(),
            protocol,
            cancel: CancellationToken::new(),
            audience: Audience::Model,
            chosen_by_person: false,
            filter: None,
        }
    }

    /// A turn of `agent` with `config`, in the agent's protocol.
    pub fn for_agent(agent: impl Into<String>, config: ToolCallConfig) -> Self {
        let protocol = config.protocol;
        Turn {
            agent: Some(agent.into()),
            config,
            protocol,
            cancel: CancellationToken::new(),
            audience: Audience::Model,
            chosen_by_person: false,
            filter: None,
        }
    }

    /// A turn of another system calling as `agent` (approved and audited
    /// under that name), which may call the tools `config` exposes.
    pub fn distributed(agent: impl Into<String>, config: ToolCallConfig) -> Self {
        Turn { audience: Audience::Distributed, ..Self::for_agent(agent, config) }
    }

    /// Whether the turn's agent may call `spec`.
    pub fn offers(&self, spec: &ToolSpec) -> bool {
        self.offers_under(&self.config, spec)
    }

    /// `offers`, were the agent's settings `config`.
    pub(crate) fn offers_under(&self, config: &ToolCallConfig, spec: &ToolSpec) -> bool {
        let audience = match self.audience {
            Audience::Model => config.offers(spec),
            Audience::Distributed => config.exposes(spec),
        };
        audience && self.filter.as_ref().is_none_or(|filter| filter.matches(spec))
    }

    /// The deadline the agent sets each call, where it is shorter than
    /// the plugin's own: its `timeout_ms`. A direct call has no agent to
    /// set one: whoever calls directly owns the plugin's limits.
    pub fn timeout(&self) -> Option<Duration> {
        self.agent.is_some().then(|| Duration::from_millis(self.config.timeout_ms))
    }

    pub(crate) fn agent_name(&self) -> &str {
        self.agent.as_deref().unwrap_or(DIRECT_AGENT)
    }
}

/// Watches a turn as it goes, to show progress: each method is called as
/// the step happens. Every method does nothing by default.
pub trait TurnObserver: Send + Sync {
    /// These calls wait for a person.
    fn awaiting_approval(&self, _calls: &[PendingCall]) {}
    /// These calls start to run (one after another or at once, as the
    /// agent says), each in the plugin it was checked against.
    fn executing(&self, _calls: &[CheckedCall]) {}
    /// A call is done: refused, denied, cancelled or run (after its result
    /// was approved, where the tool asks for that).
    fn finished(&self, _outcome: &ToolOutcome) {}
}

/// Watches nothing.
impl TurnObserver for () {}

/// The agent name direct calls are approved and audited under.
pub const DIRECT_AGENT: &str = "direct";

/// What a turn produced.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TurnResult {
    /// One outcome per call, in the calls' order.
    pub outcomes: Vec<ToolOutcome>,
    /// The turn's protocol, in which [`messages`](Self::messages) are.
    protocol: ProtocolId,
}

impl TurnResult {
    /// What the model sees next, in the turn's protocol. Formatted when
    /// asked for: a door that shows the outcomes its own way (the chat's
    /// transcript, MCP's results) never pays for it.
    pub fn messages(&self) -> Vec<Message> {
        if self.outcomes.is_empty() { Vec::new() } else { self.protocol.protocol().format_results(&self.outcomes) }
    }

    /// One line per call for people: tool, status, time
    /// (`calculate: success (0.05 ms)`).
    pub fn summary(&self) -> String {
        self.outcomes
            .iter()
            .map(|o| format!("{}: {} ({:.2} ms)", o.tool, o.status, o.duration.as_secs_f64() * 1000.0))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The one path from parsed calls to results.
#[derive(Clone)]
pub struct Pipeline {
    executor: Executor,
    approvals: Arc<Approvals>,
    approver: Arc<dyn Approver>,
}

impl Pipeline {
    /// A pipeline running calls on `executor`, approving them under
    /// `approvals` and asking `approver` where a person must decide.
    pub fn new(executor: Executor, approvals: Arc<Approvals>, approver: Arc<dyn Approver>) -> Self {
        Pipeline { executor, approvals, approver }
    }

    /// The executor calls run on.
    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    /// The approval policy, remembered decisions and audit log calls go
    /// through: for a door that shows them (the console's records) or
    /// tells its caller which calls may wait for a person (the VCP node's
    /// registration).
    #[cfg_attr(not(any(feature = "console", feature = "vcp")), expect(dead_code, reason = "only doors use it"))]
    pub(crate) fn approvals(&self) -> &Approvals {
        &self.approvals
    }

    /// The same pipeline, asking `approver` instead: for a door whose
    /// person is reached through the request itself (an MCP client).
    pub fn with_approver(&self, approver: Arc<dyn Approver>) -> Pipeline {
        Pipeline { approver, ..self.clone() }
    }

    /// The same pipeline, running calls on `executor` instead: for a door
    /// that runs more calls at once ([`NODE_CONCURRENCY`](crate::vcp::NODE_CONCURRENCY)).
    #[must_use]
    pub fn on_executor(&self, executor: Executor) -> Pipeline {
        Pipeline { executor, ..self.clone() }
    }

    /// Run the calls of one reply through every step, asking this
    /// pipeline's approver wherever a person must decide.
    pub async fn run(&self, turn: &Turn, calls: Vec<ToolCall>) -> TurnResult {
        self.run_observed(turn, calls, &()).await
    }

    /// [`run`](Self::run), telling `observer` about each step as it
    /// happens. It drives the resumable turn ([`start`](Self::start),
    /// [`resume`](Self::resume)) with the approver: every door that asks a
    /// person in its own process does so through this one loop.
    pub async fn run_observed(&self, turn: &Turn, calls: Vec<ToolCall>, observer: &dyn TurnObserver) -> TurnResult {
        let mut step = self.start_observed(turn, calls, observer).await;
        loop {
            let paused = match step {
                TurnStep::Done(result) => return result,
                TurnStep::Waiting(paused) => paused,
            };
            let decisions = self.ask_approver(turn, &paused).await;
            step = self.resume_observed(turn, paused, decisions, observer).await;
        }
    }

    /// What the approver decides about what `paused` waits for; a cancel of
    /// the turn ends the wait.
    async fn ask_approver(&self, turn: &Turn, paused: &PausedTurn) -> Decisions {
        match paused.waiting() {
            Waiting::Calls(calls) => self.ask(turn, calls).await.map_or(Decisions::Cancelled, Decisions::Calls),
            Waiting::Results(results) => {
                let asking = async {
                    let mut decisions = Vec::with_capacity(results.len());
                    for result in results {
                        decisions.push(self.approver.answer_result(&result.outcome, &result.spec).await);
                    }
                    decisions
                };
                unless_cancelled(turn, asking).await.map_or(Decisions::Cancelled, Decisions::Results)
            }
        }
    }

    /// The approver's answers on `calls` (one batch), one per call; `None`
    /// when `turn` is cancelled first, which ends the wait.
    async fn ask(&self, turn: &Turn, calls: &[PendingCall]) -> Option<Vec<Answer>> {
        unless_cancelled(turn, self.approvals.ask(self.approver.as_ref(), calls)).await
    }

    /// Check `calls`, decide what the rules decide, and run the turn as far
    /// as it goes without a person: to its end, or to the point where a
    /// person must decide ([`TurnStep::Waiting`]), which
    /// [`resume`](Self::resume) continues, in this process or, sealed into
    /// a token ([`seal`](Self::seal)), in any process with the same key and
    /// components.
    pub async fn start(&self, turn: &Turn, calls: Vec<ToolCall>) -> TurnStep {
        self.start_observed(turn, calls, &()).await
    }

    /// [`start`](Self::start), telling `observer` about each step.
    pub async fn start_observed(&self, turn: &Turn, calls: Vec<ToolCall>, observer: &dyn TurnObserver) -> TurnStep {
        let catalog = self.executor.registry().catalog();
        let offered: Vec<&ToolSpec> =
            catalog.tools().map(|(_, spec)| spec).filter(|spec| turn.agent.is_none() || turn.offers(spec)).collect();
        let audits = self.approvals.audits();
        let mut slots: Vec<Slot> = calls.into_iter().map(|call| check(&catalog, &offered, turn, audits, call)).collect();
        report_done(&slots, observer);
        let agent = turn.agent_name();
        let mut asked = Vec::new();
        for (index, slot) in slots.iter_mut().enumerate() {
            let Slot::Pending { call, decided } = slot else { continue };
            match self.first_look(turn, &Judged::call(call)) {
                FirstLook::Decided(settled) => *decided = Some(settled.into()),
                FirstLook::Asks(question) => asked.push((index, question)),
            }
        }
        if !asked.is_empty() {
            let (indices, calls): (Vec<usize>, Vec<PendingCall>) = asked.into_iter().unzip();
            observer.awaiting_approval(&calls);
            return TurnStep::Waiting(PausedTurn::new(agent, slots, Question::Calls { indices, calls }));
        }
        self.after_approval(turn, slots, observer).await
    }

    /// What the rules, levels and remembered decisions make of `call` in
    /// `turn`.
    fn assess(&self, turn: &Turn, call: &Judged<'_>) -> Assessment {
        let require_confirmation = turn.config.require_confirmation;
        self.approvals.assess(turn.agent_name(), require_confirmation, call.sha256, call.spec, call.args, call.dirs)
    }

    /// What becomes of `call` before any person sees it: decided by the
    /// policy, or the question a person must answer. A turn whose calls a
    /// person chose asks nothing the policy would ask.
    fn first_look(&self, turn: &Turn, call: &Judged<'_>) -> FirstLook {
        match self.assess(turn, call) {
            Assessment::Run { by } => FirstLook::Decided(Settled::Run { by }),
            Assessment::Deny { by, reason } => FirstLook::Decided(Settled::Deny { by, reason }),
            Assessment::Ask(_) if turn.chosen_by_person => FirstLook::Decided(Settled::Run { by: DecidedBy::Person }),
            Assessment::Ask(reason) => FirstLook::Asks(call.question(turn.agent_name(), reason)),
        }
    }

    /// How `call`, asked as `asked`, ends with `answer`, under the policy
    /// as it is now (another process's, or remembered decisions changed
    /// while the person thought): a deny rule wins over any answer, and
    /// "always" holds only where the question offered it and the policy
    /// still asks that question.
    async fn settle(&self, turn: &Turn, call: &Judged<'_>, asked: &PendingCall, answer: Answer) -> Settled {
        let now = (!turn.chosen_by_person).then(|| self.assess(turn, call));
        match now {
            Some(Assessment::Deny { by, reason }) => Settled::Deny { by, reason },
            Some(Assessment::Ask(reason)) if reason != asked.reason && asked.offers_always() => {
                let asked_now = PendingCall { reason, ..asked.clone() };
                self.approvals.settle(&asked_now, call.sha256, answer).await
            }
            None | Some(Assessment::Run { .. } | Assessment::Ask(_)) => self.approvals.settle(asked, call.sha256, answer).await,
        }
    }

    /// The audit record of `outcome`, a call in `turn` of a tool of
    /// `plugin` (`None`: no tool has its name) with `args`, decided as
    /// `decided` says; `None` without an audit log.
    fn audit_record(
        &self,
        turn: &Turn,
        plugin: Option<&str>,
        args: &Map<String, Value>,
        decided: Option<&Assessment>,
        outcome: &ToolOutcome,
    ) -> Option<AuditRecord> {
        self.approvals.audits().then(|| AuditRecord::new(turn.agent_name(), plugin, args, decided, outcome))
    }

    /// Continue `paused` with `decisions` on what it waits for: one per
    /// call or result, in order (fewer deny or reject the rest, as do
    /// decisions of the other kind; [`Decisions::Cancelled`] ends the
    /// waiting calls cancelled). Runs as far as it goes without a person
    /// again.
    pub async fn resume(&self, turn: &Turn, paused: PausedTurn, decisions: Decisions) -> TurnStep {
        self.resume_observed(turn, paused, decisions, &()).await
    }

    /// [`resume`](Self::resume), telling `observer` about each step.
    pub async fn resume_observed(
        &self,
        turn: &Turn,
        paused: PausedTurn,
        decisions: Decisions,
        observer: &dyn TurnObserver,
    ) -> TurnStep {
        let PausedTurn { mut slots, question, .. } = paused;
        match question {
            Question::Calls { indices, calls } => {
                if let Decisions::Cancelled = decisions {
                    // The calls still waiting end cancelled; those the
                    // rules decided keep their decision.
                    for index in indices {
                        let Slot::Pending { call, .. } = &slots[index] else { continue };
                        let (plugin, call) = (call.plugin(), call.call());
                        let outcome =
                            ToolOutcome::without_running(&call.id, &call.tool, Status::Cancelled, CANCELLED_WAITING.into());
                        let audit = self.audit_record(turn, Some(plugin.name()), &call.args, None, &outcome);
                        observer.finished(&outcome);
                        slots[index] = Slot::Done { outcome, audit };
                    }
                } else {
                    let answers = call_answers(decisions, calls.len());
                    for ((&index, asked), answer) in indices.iter().zip(&calls).zip(answers) {
                        let Slot::Pending { call, decided } = &mut slots[index] else { continue };
                        *decided = Some(self.settle(turn, &Judged::call(call), asked, answer).await.into());
                    }
                    self.assess_again(turn, &mut slots, &indices);
                }
                self.after_approval(turn, slots, observer).await
            }
            Question::Results { indices, .. } => {
                let decisions = result_decisions(decisions, indices.len());
                for (index, decision) in indices.into_iter().zip(decisions) {
                    let Slot::Held { call, decided, mut outcome } = std::mem::replace(&mut slots[index], Slot::Running) else {
                        unreachable!("a result waits in a held slot")
                    };
                    settle_result(&mut outcome, decision);
                    observer.finished(&outcome);
                    let audit =
                        self.audit_record(turn, Some(call.plugin().name()), &call.call().args, decided.as_ref(), &outcome);
                    slots[index] = Slot::Done { outcome, audit };
                }
                self.finish(turn, slots).await
            }
        }
    }

    /// The calls of a turn that waited which nobody was asked about
    /// (`asked` are the others), checked against the policy as it is now
    /// (it may be another process's, or remembered decisions may have
    /// changed): a deny rule still wins, and a call the rules let run
    /// before but would ask about now is denied, since nobody was asked.
    fn assess_again(&self, turn: &Turn, slots: &mut [Slot], asked: &[usize]) {
        for (index, slot) in slots.iter_mut().enumerate() {
            let Slot::Pending { call, decided } = slot else { continue };
            if asked.contains(&index) || matches!(decided, Some(Assessment::Deny { .. })) {
                continue;
            }
            match self.assess(turn, &Judged::call(call)) {
                deny @ Assessment::Deny { .. } => *decided = Some(deny),
                Assessment::Ask(reason) if !turn.chosen_by_person => {
                    *decided = Some(Assessment::Deny {
                        by: DecidedBy::NoAnswer,
                        reason: format!(
                            "its approval changed while the turn waited for a person (now {reason}); call it again to be asked"
                        ),
                    });
                }
                Assessment::Run { .. } | Assessment::Ask(_) => {}
            }
        }
    }

    /// The calls decided: a denial ends a call with its reason for the
    /// model; the rest run; results that need a person wait for one.
    async fn after_approval(&self, turn: &Turn, mut slots: Vec<Slot>, observer: &dyn TurnObserver) -> TurnStep {
        let agent = turn.agent_name();
        for slot in &mut slots {
            let Slot::Pending { call, decided: Some(decided) } = slot else { continue };
            let Assessment::Deny { reason, .. } = &*decided else { continue };
            let (plugin, call) = (call.plugin(), call.call());
            let outcome = ToolOutcome::without_running(&call.id, &call.tool, Status::Denied, reason.clone());
            let audit = self.audit_record(turn, Some(plugin.name()), &call.args, Some(decided), &outcome);
            observer.finished(&outcome);
            *slot = Slot::Done { outcome, audit };
        }
        self.execute(turn, &mut slots, observer).await;
        let (indices, results): (Vec<usize>, Vec<PendingResult>) = slots
            .iter()
            .enumerate()
            .filter_map(|(index, slot)| match slot {
                Slot::Held { call, outcome, .. } => Some((index, PendingResult::new(call, outcome))),
                _ => None,
            })
            .unzip();
        if indices.is_empty() {
            return self.finish(turn, slots).await;
        }
        TurnStep::Waiting(PausedTurn::new(agent, slots, Question::Results { indices, results }))
    }

    async fn execute(&self, turn: &Turn, slots: &mut [Slot], observer: &dyn TurnObserver) {
        let runnable: Vec<usize> = (0..slots.len()).filter(|&index| matches!(slots[index], Slot::Pending { .. })).collect();
        let (calls, decisions): (Vec<CheckedCall>, Vec<Option<Assessment>>) = runnable
            .iter()
            .map(|&index| match std::mem::replace(&mut slots[index], Slot::Running) {
                Slot::Pending { call, decided } => (call, decided),
                Slot::Running | Slot::Done { .. } | Slot::Held { .. } => unreachable!("filtered above"),
            })
            .unzip();
        if calls.is_empty() {
            return;
        }
        // On record before they start: a crash while they run leaves them
        // audited as decided.
        if self.approvals.audits() {
            for (call, decided) in calls.iter().zip(&decisions) {
                let (plugin, called) = (call.plugin(), call.call());
                let record = AuditRecord::decided(turn.agent_name(), plugin.name(), &called.tool, &called.args, decided.as_ref());
                self.approvals.audit(&record);
            }
            self.approvals.flush_audit().await;
        }
        observer.executing(&calls);
        // Outcomes are reported as each call finishes, except those whose
        // result a person must see first: they are reported once passed.
        let needs_result_approval: Vec<bool> = calls.iter().map(|call| call.spec().result_approval).collect();
        let (report, mut reports) = tokio::sync::mpsc::unbounded_channel();
        let mut options = RunOptions::default();
        options.parallel = turn.config.parallel_execution;
        options.timeout = turn.timeout();
        options.cancel = turn.cancel.clone();
        options.report = Some(report);
        let report_one = |(index, outcome): (usize, ToolOutcome)| {
            if !(needs_result_approval[index] && holds_tool_text(&outcome)) {
                observer.finished(&outcome);
            }
        };
        let outcomes = {
            let running = self.executor.run_all_checked(&calls, &options);
            tokio::pin!(running);
            loop {
                tokio::select! {
                    outcomes = &mut running => break outcomes,
                    Some(done) = reports.recv() => report_one(done),
                }
            }
        };
        while let Ok(done) = reports.try_recv() {
            report_one(done);
        }
        for ((index, outcome), (call, decided)) in runnable.into_iter().zip(outcomes).zip(calls.into_iter().zip(decisions)) {
            // What a tool that declares result approval said — its result,
            // and as surely its error or invalid-arguments text, which
            // could carry the same bytes — waits for a person.
            if call.spec().result_approval && holds_tool_text(&outcome) {
                slots[index] = Slot::Held { call, decided, outcome };
                continue;
            }
            let audit = self.audit_record(turn, Some(call.plugin().name()), &call.call().args, decided.as_ref(), &outcome);
            slots[index] = Slot::Done { outcome, audit };
        }
    }

    /// Every call done: audited, formatted for the model, summed up.
    async fn finish(&self, turn: &Turn, slots: Vec<Slot>) -> TurnStep {
        let outcomes = into_outcomes(&self.approvals, slots);
        // The audit log is written on its own thread: every record is on
        // disk before the turn reports its result.
        self.approvals.flush_audit().await;
        TurnStep::Done(TurnResult { outcomes, protocol: turn.protocol })
    }
}

/// One answer per asked call from `decisions`: too few, or decisions of
/// the other kind, deny the rest as unanswered.
fn call_answers(decisions: Decisions, asked: usize) -> Vec<Answer> {
    let mut answers = match decisions {
        Decisions::Calls(answers) => answers,
        Decisions::Results(_) | Decisions::Cancelled => Vec::new(),
    };
    answers.truncate(asked);
    answers.resize_with(asked, || Answer {
        decision: CallDecision::Deny { reason: Some("the approver gave no decision for this call".into()) },
        by: DecidedBy::NoAnswer,
    });
    answers
}

/// One decision per held result from `decisions`: too few, or decisions
/// of the other kind, withhold the rest; `None` for each after a cancel.
fn result_decisions(decisions: Decisions, held: usize) -> Vec<Option<ResultAnswer>> {
    let mut decisions: Vec<Option<ResultAnswer>> = match decisions {
        Decisions::Results(decisions) => decisions.into_iter().map(Some).collect(),
        Decisions::Cancelled => return vec![None; held],
        Decisions::Calls(_) => Vec::new(),
    };
    decisions.truncate(held);
    let unanswered = ResultDecision::Reject { reason: Some("the approver gave no decision for this result".into()) };
    decisions.resize(held, Some(ResultAnswer { decision: unanswered, by: DecidedBy::NoAnswer }));
    decisions
}

/// Step 4 for one held outcome: a passed result goes on as it is; a
/// rejected one's text is replaced here, before any message or summary is
/// built from it; `None` (the turn was cancelled while it waited) ends it
/// cancelled, none of its text going on.
fn settle_result(outcome: &mut ToolOutcome, answer: Option<ResultAnswer>) {
    // Every decision by name: a new one must say whether the text passes.
    let (reason, by) = match answer {
        Some(ResultAnswer { decision: ResultDecision::Pass, .. }) => return,
        Some(ResultAnswer { decision: ResultDecision::Reject { reason }, by }) => (reason, by),
        None => {
            outcome.status = Status::Cancelled;
            outcome.failure = crate::outcome::Failure::of_status(Status::Cancelled);
            outcome.output = "cancelled while its result waited for approval".into();
            return;
        }
    };
    outcome.status = Status::ResultRejected;
    outcome.failure = crate::outcome::Failure::of_status(Status::ResultRejected);
    // Only a person's rejection is said to be one: an adapter's says why
    // nobody could pass it.
    let who = if by == DecidedBy::Person { "a person withheld the result" } else { "the result was withheld" };
    outcome.output = match reason {
        Some(reason) => format!("{who}: {reason}"),
        None => who.to_owned(),
    };
}

/// Whether `outcome` of a call that ran may hold text of the tool's: all
/// but a cancelled one, whose text is the host's.
fn holds_tool_text(outcome: &ToolOutcome) -> bool {
    outcome.status != Status::Cancelled
}

/// Tell `observer` about the calls already done (refused at the check).
fn report_done(slots: &[Slot], observer: &dyn TurnObserver) {
    for slot in slots {
        if let Slot::Done { outcome, .. } = slot {
            observer.finished(outcome);
        }
    }
}

/// The outcomes, in the calls' order, once every call is done; each is
/// audited.
fn into_outcomes(approvals: &Approvals, slots: Vec<Slot>) -> Vec<ToolOutcome> {
    slots
        .into_iter()
        .map(|slot| match slot {
            Slot::Done { outcome, audit } => {
                if let Some(audit) = audit {
                    approvals.audit(&audit);
                }
                outcome
            }
            Slot::Pending { .. } | Slot::Running | Slot::Held { .. } => unreachable!("every call is done when a turn finishes"),
        })
        .collect()
}

/// Step 1 for one call: the tool, among those `offered` to the turn's
/// agent, and the arguments, coerced; the call bound to the tool's plugin.
fn check(catalog: &Catalog, offered: &[&ToolSpec], turn: &Turn, audits: bool, call: ToolCall) -> Slot {
    let refused = |call: &ToolCall, status, message: String| {
        let outcome = ToolOutcome::without_running(&call.id, &call.tool, status, message);
        let audit = audits.then(|| AuditRecord::new(turn.agent_name(), None, &call.args, None, &outcome));
        Slot::Done { outcome, audit }
    };
    if let Some(agent) = turn.agent.as_deref().filter(|_| !turn.config.enabled) {
        return refused(&call, Status::Denied, format!("tool calling is off for agent `{agent}`"));
    }
    match CheckedCall::check_among(&call, catalog, offered) {
        Ok(checked) => Slot::Pending { call: checked, decided: None },
        Err(error) => {
            let status = if error.unknown_tool { Status::NotFound } else { Status::InvalidArgs };
            refused(&call, status, error.message)
        }
    }
}

/// A call as approval judges it: a checked call of a plugin's tool, or a
/// host action ([`HostAction`]).
struct Judged<'a> {
    /// The call's id, as its caller gave it.
    id: &'a str,
    /// What it is a call of: the name, plugin and level approval judges.
    spec: &'a ToolSpec,
    /// What a remembered "allow always" holds for: the SHA-256 of the
    /// plugin's component, so other bytes are asked about again.
    sha256: &'a str,
    /// The checked arguments.
    args: &'a Map<String, Value>,
    /// Where path arguments lead, for the rules that judge them: the
    /// plugin's granted directories.
    dirs: &'a [DirGrant],
}

impl<'a> Judged<'a> {
    /// `call`, judged by its plugin's bytes and grants.
    fn call(call: &'a CheckedCall) -> Self {
        let plugin = call.plugin();
        let (id, args) = (&call.call().id, &call.call().args);
        Judged { id, spec: call.spec(), sha256: &plugin.sha256, args, dirs: &plugin.grants.dirs }
    }

    /// The question a person answers about it for `agent`, asked for
    /// `reason`.
    fn question(&self, agent: &str, reason: AskReason) -> PendingCall {
        PendingCall {
            id: self.id.to_owned(),
            agent: agent.to_owned(),
            plugin: self.spec.plugin.clone(),
            tool: self.spec.name.clone(),
            permission: self.spec.permission,
            args: self.args.clone(),
            reason,
        }
    }
}

/// What becomes of a call before any person sees it.
enum FirstLook {
    /// The policy decided it.
    Decided(Settled),
    /// A person must: this is the question.
    Asks(PendingCall),
}

/// `asking`, unless `turn` is cancelled first (`None`): a question's wait
/// ends with its turn, and the approver withdraws what it was asking.
async fn unless_cancelled<T>(turn: &Turn, asking: impl Future<Output = T>) -> Option<T> {
    tokio::select! {
        done = asking => Some(done),
        () = turn.cancel.cancelled() => None,
    }
}

/// What a call cancelled while it waited for a person says.
const CANCELLED_WAITING: &str = "cancelled while waiting for approval";
