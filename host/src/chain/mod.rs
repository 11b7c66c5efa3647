//! The conversation loop: a person's message in, the model's answer out,
//! with as many rounds of tool calls between as the model asks for and
//! the agent allows.
//!
//! One round (an *iteration*) is one reply with at least one call: the
//! reply streams in ([`ChainEvent::TextDelta`]), its calls are parsed in
//! the agent's protocol (or taken from the native API's `tool_calls`), run
//! through the [`Pipeline`] (checked, approved, executed, results
//! approved), recorded in the [`Transcript`] and sent back. The loop stops
//! when
//! - a reply has no calls: the model answered;
//! - `max_iterations` rounds ran: the model gets no further turn, and the
//!   transcript ends with a note saying so;
//! - the same call (tool and arguments) comes a third round in a row: it
//!   is not run and the model is told so, once; a fourth time stops the
//!   loop;
//! - the turn is cancelled: the stream stops, running calls stop, finished
//!   results are kept, and every call the reply asked for is answered
//!   (unfinished ones as `cancelled`), so no request dangles;
//! - the model cannot be had: the transcript keeps what of the reply
//!   arrived, and a note says what went wrong.
//!
//! In manual mode (the agent's `mode = "manual"`) the loop stops after
//! parsing and hands back the calls ([`Stop::AwaitingDecisions`]); a
//! person runs the ones they choose, possibly edited, answers or skips the
//! others ([`ManualDecision`]), and [`Chain::resume`] goes on.
//!
//! When the model endpoint is a VCP server ([`Chain::handing_over`]), the
//! server runs the calls and loops itself: the chain sends one request per
//! message, runs nothing, and shows the server's rounds instead (see
//! `handover`).

mod event;
mod handover;
mod incoming;
mod repeats;

pub use event::{CallRef, ChainEvent, ManualDecision, Stop};
pub use handover::HandoverTarget;

use crate::agent::{CallMode, ToolCallConfig};
use crate::approval::PendingCall;
use crate::call::ToolCall;
use crate::checked_call::CheckedCall;
use crate::discovery::{PromptCache, RenderedPrompt, visible_tools};
use crate::llm::{ChatRequest, LlmClient, LlmError, Reply, StreamEvent};
use crate::outcome::{Status, ToolOutcome};
use crate::pipeline::{Pipeline, Turn, TurnObserver};
use crate::protocol::native::tools_schema;
use crate::protocol::{Declared, ProtocolId};
use crate::registry::Catalog;
use crate::transcript::{CallStatus, Entry, RequestedCall, Transcript, TranscriptError};
use incoming::Incoming;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Rounds in a row the same call may be made: the round that reaches it
/// is not run and the model is told; one more stops the loop.
pub const REPEAT_LIMIT: u32 = 3;

/// Where the loop's events go.
pub type Events<'a> = &'a (dyn Fn(ChainEvent) + Send + Sync);

/// Why a turn could not go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChainError {
    /// The transcript could not be written: the loop stops rather than
    /// lose what happens next.
    #[error(transparent)]
    Transcript(#[from] TranscriptError),
    /// A manual decision names a call that does not wait for one.
    #[error("no call `{id}` waits for a decision (waiting: {waiting})")]
    UnknownCall {
        /// The id given.
        id: String,
        /// The ids that wait.
        waiting: String,
    },
}

/// One agent's conversations with one model.
pub struct Chain {
    llm: Arc<dyn LlmClient>,
    pipeline: Pipeline,
    prompts: Arc<PromptCache>,
    agent: String,
    config: ToolCallConfig,
    template: String,
    /// The VCP server that runs the calls, when the model endpoint is one.
    handover: Option<Arc<dyn HandoverTarget>>,
    /// What the last round offered the model, kept while the registry does
    /// not change.
    offer: std::sync::Mutex<Option<Arc<Offer>>>,
}

/// What a round offers the model: worked out once per registry generation
/// (a load or reload changes it), not once per round.
struct Offer {
    generation: u64,
    prompt: Arc<RenderedPrompt>,
    /// The offered tools' names, which a reply's calls are read against.
    declared: Declared,
    /// The native `tools` schema, for the native protocol.
    schema: Option<serde_json::Value>,
}

/// What to do with one call of a round.
#[expect(clippy::large_enum_variant, reason = "a few per round, each moved once; a box would only add an allocation")]
enum Planned {
    /// Already answered (unreadable, repeated, answered by a person); the
    /// call is kept as asked for, to be recorded as it was.
    Done { call: ToolCall, outcome: ToolOutcome },
    /// Through the pipeline.
    Run(ToolCall),
}

impl Planned {
    fn call(&self) -> &ToolCall {
        match self {
            Planned::Done { call, .. } | Planned::Run(call) => call,
        }
    }
}

/// The system prompt's template `config` gives, its file named when it
/// cannot be read.
fn template_of(config: &ToolCallConfig) -> std::io::Result<String> {
    config.system_prompt_template().map_err(|error| {
        let file = config.system_prompt_file.as_deref().unwrap_or("".as_ref()).display();
        std::io::Error::new(error.kind(), format!("the system prompt file {file}: {error}"))
    })
}

impl Chain {
    /// `agent`, configured by `config`, talking to `llm` and running calls
    /// on `pipeline`. Fails when the system prompt's file cannot be read.
    ///
    /// # Errors
    ///
    /// The I/O error, naming the file, when the agent's system prompt file
    /// cannot be read.
    pub fn new(
        llm: Arc<dyn LlmClient>,
        pipeline: Pipeline,
        agent: impl Into<String>,
        config: ToolCallConfig,
    ) -> std::io::Result<Self> {
        let template = template_of(&config)?;
        let prompts = Arc::new(PromptCache::new());
        Ok(Chain {
            llm,
            pipeline,
            prompts,
            agent: agent.into(),
            config,
            template,
            handover: None,
            offer: std::sync::Mutex::default(),
        })
    }

    /// The model endpoint is the VCP server `handover` names: it runs the
    /// calls, so this chain runs none. `{{tools}}` renders the tools of
    /// this host that the server offers now (the VCP node's
    /// [`Handover`](crate::vcp::Handover): its tools while it is connected).
    pub fn handing_over(mut self, handover: impl HandoverTarget + 'static) -> Self {
        self.handover = Some(Arc::new(handover));
        self
    }

    /// Share `prompts` with other users of the registry.
    pub fn with_prompt_cache(mut self, prompts: Arc<PromptCache>) -> Self {
        self.prompts = prompts;
        self
    }

    /// The agent's settings.
    pub fn config(&self) -> &ToolCallConfig {
        &self.config
    }

    /// Go on with the agent's settings as `config` (the console's page
    /// turned a tool off, say): from the next message on.
    ///
    /// # Errors
    ///
    /// As [`Chain::new`]'s, when the system prompt's file cannot be read;
    /// the settings are then unchanged.
    pub fn set_config(&mut self, config: ToolCallConfig) -> std::io::Result<()> {
        self.template = template_of(&config)?;
        self.config = config;
        // What the next round offers follows the new settings.
        *self.offer.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        Ok(())
    }

    /// The system prompt as the model gets it now.
    pub fn system_prompt(&self) -> Arc<RenderedPrompt> {
        self.prompt(&self.pipeline.executor().registry().catalog())
    }

    /// What this round offers the model: the last round's, unless the
    /// registry or the settings changed since.
    fn offer(&self) -> Arc<Offer> {
        let catalog = self.pipeline.executor().registry().catalog();
        let mut kept = self.offer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(offer) = kept.as_ref().filter(|offer| offer.generation == catalog.generation) {
            return offer.clone();
        }
        let offered = visible_tools(&catalog, &self.config);
        let native = self.config.protocol == ProtocolId::Native && self.config.enabled && !offered.is_empty();
        let offer = Arc::new(Offer {
            generation: catalog.generation,
            prompt: self.prompt(&catalog),
            declared: Declared::new(offered.iter().map(|t| t.name.clone())),
            schema: native.then(|| tools_schema(&offered)),
        });
        *kept = Some(offer.clone());
        offer
    }

    /// The system prompt for `catalog`. The native protocol sends the tools
    /// as a schema, not in the prompt.
    fn prompt(&self, catalog: &Catalog) -> Arc<RenderedPrompt> {
        if let Some(handover) = &self.handover {
            return handover::prompt(handover.as_ref(), catalog, &self.template);
        }
        let protocol = self.config.protocol;
        if protocol == ProtocolId::Native {
            let config = ToolCallConfig { enabled: false, ..self.config.clone() };
            return self.prompts.render(catalog, &self.agent, &config, protocol, &self.template);
        }
        self.prompts.render(catalog, &self.agent, &self.config, protocol, &self.template)
    }

    /// Send the person's `message` and go on until the loop stops. Calls
    /// an earlier turn left unanswered (a crash, manual calls never
    /// decided) are answered as not run first. Every entry of the turn is
    /// in the transcript's file when this returns.
    ///
    /// # Errors
    ///
    /// [`ChainError::Transcript`] when the transcript cannot be written: the
    /// loop stops rather than lose what happens next. A model's or a tool's
    /// failure is not an error: it is in the transcript, the events and the
    /// [`Stop`].
    pub async fn send(
        &self,
        transcript: &mut Transcript,
        message: &str,
        events: Events<'_>,
        cancel: &CancellationToken,
    ) -> Result<Stop, ChainError> {
        let stopped = self.send_unflushed(transcript, message, events, cancel).await;
        flushed(transcript, stopped).await
    }

    async fn send_unflushed(
        &self,
        transcript: &mut Transcript,
        message: &str,
        events: Events<'_>,
        cancel: &CancellationToken,
    ) -> Result<Stop, ChainError> {
        if !transcript.entries().iter().any(|e| matches!(e, Entry::System { .. })) {
            transcript.push(Entry::System { content: self.system_prompt().text.clone() })?;
        }
        for call in transcript.unanswered() {
            let outcome = ToolOutcome::without_running(
                &call.id,
                &call.tool,
                Status::Cancelled,
                "not run: the conversation moved on before it was run".into(),
            );
            record(transcript, &call.to_call(), &outcome)?;
        }
        transcript.push(Entry::User { content: message.to_owned() })?;
        self.drive(transcript, events, cancel).await
    }

    /// Manual mode: settle the calls the last reply asked for as
    /// `decisions` say (a call without a decision is skipped), then go on.
    /// With no call waiting, this asks the model to go on from where the
    /// transcript is. Every entry of the turn is in the transcript's file
    /// when this returns.
    ///
    /// # Errors
    ///
    /// [`ChainError::UnknownCall`] when a decision names a call that does not
    /// wait for one; [`ChainError::Transcript`] when the transcript cannot be
    /// written.
    pub async fn resume(
        &self,
        transcript: &mut Transcript,
        decisions: Vec<ManualDecision>,
        events: Events<'_>,
        cancel: &CancellationToken,
    ) -> Result<Stop, ChainError> {
        let stopped = self.resume_unflushed(transcript, decisions, events, cancel).await;
        flushed(transcript, stopped).await
    }

    async fn resume_unflushed(
        &self,
        transcript: &mut Transcript,
        decisions: Vec<ManualDecision>,
        events: Events<'_>,
        cancel: &CancellationToken,
    ) -> Result<Stop, ChainError> {
        let waiting = transcript.unanswered();
        if let Some(unknown) = decisions.iter().find(|d| !waiting.iter().any(|w| w.id == d.id())) {
            let waiting = waiting.iter().map(|w| w.id.as_str()).collect::<Vec<_>>().join(", ");
            return Err(ChainError::UnknownCall { id: unknown.id().to_owned(), waiting });
        }
        if waiting.is_empty() {
            return self.drive(transcript, events, cancel).await;
        }
        let plan = waiting.iter().map(|call| decide(call, decisions.iter().find(|d| d.id() == call.id))).collect();
        match self.round(transcript, plan, true, None, events, cancel).await? {
            Some(stop) => self.finish(transcript, stop, events),
            None => self.drive(transcript, events, cancel).await,
        }
    }

    /// Ask the model, run its calls, repeat, until the loop stops.
    async fn drive(
        &self,
        transcript: &mut Transcript,
        events: Events<'_>,
        cancel: &CancellationToken,
    ) -> Result<Stop, ChainError> {
        if self.handover.is_some() {
            return self.hand_over(transcript, events, cancel).await;
        }
        loop {
            if cancel.is_cancelled() {
                return self.finish(transcript, Stop::Cancelled, events);
            }
            events(ChainEvent::Requesting { iteration: transcript.rounds_this_turn() });
            let offer = self.offer();
            let request = ChatRequest {
                messages: transcript.messages(&offer.prompt.text, self.config.protocol),
                tools: offer.schema.as_ref(),
            };
            let reply = match self.ask(&request, events, cancel).await {
                Ok(reply) => reply,
                Err(error) => return self.model_failed(transcript, error, events),
            };
            let (incoming, warnings) = incoming::calls_in(&reply, self.config.protocol, &offer.declared, transcript.call_ids());
            let incoming = incoming::within_limit(incoming, reply.calls_not_kept, self.llm.max_calls_per_reply());
            let catalog = self.pipeline.executor().registry().catalog();
            let incoming = incoming::resolve_text_inputs(incoming, &catalog.tools().map(|(_, spec)| spec).collect::<Vec<_>>());
            let calls: Vec<RequestedCall> = incoming.iter().map(|i| RequestedCall::from_call(i.call())).collect();
            transcript.push(Entry::Assistant { content: reply.content, reasoning: reply.reasoning, calls: calls.clone() })?;
            if reply.finish_reason.as_deref() == Some("length") {
                let message = "the reply stopped at the model's length limit; calls in it may be cut short".to_owned();
                transcript.push(Entry::Note { content: message.clone() })?;
                events(ChainEvent::Warning { message });
            }
            events(ChainEvent::CallsParsed { calls: calls.clone(), warnings });
            if incoming.is_empty() {
                return self.finish(transcript, Stop::Answered, events);
            }
            if self.config.mode == CallMode::Manual {
                return self.finish(transcript, Stop::AwaitingDecisions { calls }, events);
            }
            let (plan, stop) = plan_round(transcript.entries(), incoming);
            if let Some(stop) = self.round(transcript, plan, false, stop, events, cancel).await? {
                return self.finish(transcript, stop, events);
            }
        }
    }

    /// Send `request`, passing the reply's text and reasoning on as they
    /// stream in.
    async fn ask(&self, request: &ChatRequest<'_>, events: Events<'_>, cancel: &CancellationToken) -> Result<Reply, LlmError> {
        let mut on_delta = |delta| {
            events(match delta {
                StreamEvent::Text(text) => ChainEvent::TextDelta { text },
                StreamEvent::Reasoning(text) => ChainEvent::ReasoningDelta { text },
            })
        };
        self.llm.complete(request, &mut on_delta, cancel).await
    }

    /// Run one round's `plan`, record every outcome, and say whether the
    /// loop stops: `stop` when planning said so, on cancel, or at the
    /// iteration limit.
    async fn round(
        &self,
        transcript: &mut Transcript,
        plan: Vec<Planned>,
        chosen_by_person: bool,
        stop: Option<Stop>,
        events: Events<'_>,
        cancel: &CancellationToken,
    ) -> Result<Option<Stop>, ChainError> {
        let calls: Vec<ToolCall> = plan.iter().map(|planned| planned.call().clone()).collect();
        for planned in &plan {
            if let Planned::Done { call, outcome } = planned {
                events(ChainEvent::outcome(Some(call), outcome));
            }
        }
        let to_run: Vec<ToolCall> = plan
            .iter()
            .filter_map(|planned| match planned {
                Planned::Run(call) => Some(call.clone()),
                Planned::Done { .. } => None,
            })
            .collect();
        let mut ran = if to_run.is_empty() {
            Vec::new()
        } else {
            let turn = Turn {
                cancel: cancel.child_token(),
                chosen_by_person,
                ..Turn::for_agent(self.agent.clone(), self.config.clone())
            };
            self.pipeline.run_observed(&turn, to_run, &Watch { events, calls: &calls }).await.outcomes
        }
        .into_iter();
        for (planned, call) in plan.into_iter().zip(&calls) {
            let outcome = match planned {
                Planned::Done { outcome, .. } => outcome,
                Planned::Run(_) => ran.next().expect("one outcome per call run"),
            };
            transcript.set_status(
                &call.id,
                CallStatus::of(outcome.status),
                (outcome.status != Status::Success).then(|| outcome.output.clone()),
            );
            record(transcript, call, &outcome)?;
        }
        let iteration = transcript.rounds_this_turn();
        events(ChainEvent::IterationDone { iteration });
        Ok(if cancel.is_cancelled() {
            Some(Stop::Cancelled)
        } else if stop.is_some() {
            stop
        } else if iteration >= self.config.max_iterations {
            Some(Stop::IterationLimit { limit: self.config.max_iterations })
        } else {
            None
        })
    }

    /// The model failed: keep what arrived, say what happened, stop.
    fn model_failed(&self, transcript: &mut Transcript, error: LlmError, events: Events<'_>) -> Result<Stop, ChainError> {
        if let Some(partial) = error.partial().filter(|p| !p.content.is_empty() || !p.reasoning.is_empty()) {
            // A reply that did not finish is kept as text: its calls are
            // never run.
            let (content, reasoning) = (partial.content.clone(), partial.reasoning.clone());
            transcript.push(Entry::Assistant { content, reasoning, calls: Vec::new() })?;
        }
        if matches!(error, LlmError::Cancelled { .. }) {
            return self.finish(transcript, Stop::Cancelled, events);
        }
        events(ChainEvent::Error { message: error.to_string() });
        self.finish(transcript, Stop::ModelFailed { message: error.to_string() }, events)
    }

    /// Note why the loop stopped, where that is worth a note, and say so.
    fn finish(&self, transcript: &mut Transcript, stop: Stop, events: Events<'_>) -> Result<Stop, ChainError> {
        let note = match &stop {
            Stop::Answered | Stop::AwaitingDecisions { .. } => None,
            Stop::IterationLimit { limit } => Some(format!(
                "stopped: the iteration limit was reached ({limit} rounds of tool calls, the agent's max_iterations); \
                 the model got no further turn"
            )),
            Stop::Repeated { tool } => Some(format!(
                "stopped: the model kept calling `{tool}` with the same arguments after it was told the result would not change"
            )),
            Stop::Cancelled => Some("stopped: the turn was cancelled".to_owned()),
            Stop::ModelFailed { message } => Some(format!("stopped: the model's reply failed: {message}")),
        };
        if let Some(content) = note {
            transcript.push(Entry::Note { content })?;
        }
        events(ChainEvent::Finished { stop: stop.clone() });
        Ok(stop)
    }
}

/// What to do with each call of a reply in auto mode, and whether the loop
/// stops after this round (a call repeated past the limit).
fn plan_round(entries: &[Entry], incoming: Vec<Incoming>) -> (Vec<Planned>, Option<Stop>) {
    let current = entries.len() - 1;
    let mut stop = None;
    let mut plan: Vec<Planned> = incoming
        .into_iter()
        .map(|incoming| match incoming {
            Incoming::Unreadable { call, why } => {
                let outcome = ToolOutcome::without_running(&call.id, &call.tool, Status::InvalidArgs, why);
                Planned::Done { call, outcome }
            }
            Incoming::PastLimit { call, why } => not_run(call, &why),
            Incoming::Call(call) => match repeats::rounds_in_a_row(entries, current, &call) {
                rounds if rounds > REPEAT_LIMIT => {
                    stop = Some(Stop::Repeated { tool: call.tool.clone() });
                    not_run(call, "the same call was made again after the model was told to stop")
                }
                REPEAT_LIMIT => not_run(
                    call,
                    "this exact call (same tool, same arguments) was made three rounds in a row; its result will \
                     not change, so it was not run again. Answer with the results you have, or try something else.",
                ),
                _ => Planned::Run(call),
            },
        })
        .collect();
    if stop.is_some() {
        // Nothing new starts once the loop is stopping.
        for planned in &mut plan {
            if let Planned::Run(call) = planned {
                *planned = not_run(call.clone(), "the loop stopped: a call was repeated too often");
            }
        }
    }
    (plan, stop)
}

/// What a person's `decision` (none: skip) makes of a waiting call.
fn decide(call: &RequestedCall, decision: Option<&ManualDecision>) -> Planned {
    let finished = |status, output: String| Planned::Done {
        call: call.to_call(),
        outcome: ToolOutcome::without_running(&call.id, &call.tool, status, output),
    };
    match decision {
        Some(ManualDecision::Run { arguments: None, .. }) => Planned::Run(call.to_call()),
        Some(ManualDecision::Run { arguments: Some(edited), .. }) => {
            Planned::Run(ToolCall::with_map(&call.id, &call.tool, edited.clone()))
        }
        Some(ManualDecision::Answer { output, .. }) => finished(Status::Success, output.clone()),
        Some(ManualDecision::Skip { reason: Some(reason), .. }) => {
            finished(Status::Denied, format!("a person chose not to run it: {reason}"))
        }
        Some(ManualDecision::Skip { reason: None, .. }) | None => finished(Status::Denied, "a person chose not to run it".into()),
    }
}

/// `call`, answered without running it: not run, because `why`.
fn not_run(call: ToolCall, why: &str) -> Planned {
    let outcome = ToolOutcome::without_running(&call.id, &call.tool, Status::Cancelled, format!("not run: {why}"));
    Planned::Done { call, outcome }
}

/// How a turn `stopped`, once every entry is in the transcript's file: the
/// turn's own error first, else the file's.
async fn flushed(transcript: &Transcript, stopped: Result<Stop, ChainError>) -> Result<Stop, ChainError> {
    let written = transcript.flush().await;
    let stop = stopped?;
    written?;
    Ok(stop)
}

/// Record `outcome` of `call` as a tool entry.
fn record(transcript: &mut Transcript, call: &ToolCall, outcome: &ToolOutcome) -> Result<(), TranscriptError> {
    transcript.push(Entry::tool(call, outcome))
}

/// Passes the pipeline's steps on as events, each outcome with the call
/// of the round it answers.
struct Watch<'a> {
    events: Events<'a>,
    calls: &'a [ToolCall],
}

impl TurnObserver for Watch<'_> {
    fn awaiting_approval(&self, calls: &[PendingCall]) {
        (self.events)(ChainEvent::AwaitingApproval { calls: calls.iter().map(CallRef::from).collect() });
    }

    fn executing(&self, calls: &[CheckedCall]) {
        (self.events)(ChainEvent::Executing { calls: calls.iter().map(|call| CallRef::from(call.call())).collect() });
    }

    fn finished(&self, outcome: &ToolOutcome) {
        (self.events)(ChainEvent::outcome(self.calls.iter().find(|c| c.id == outcome.id), outcome));
    }
}
