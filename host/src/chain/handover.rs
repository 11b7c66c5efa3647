//! A chat whose model endpoint is a VCP server: the server runs the calls
//! and loops over its own rounds, so the chain sends one request per
//! message, runs nothing, and reports the server's rounds: each round's
//! calls as parsed from its raw blocks ([`ChainEvent::CallsParsed`]), and
//! each call's status as the round's summary gives it
//! ([`ChainEvent::Outcome`], output `run by the VCP server: 调用成功`).
//! The transcript keeps the reply as the server sent it, blocks and
//! summaries included (the server reads them back in the next request),
//! with no calls of its own to answer, and a note of the statuses.

use super::{Chain, ChainError, ChainEvent, Events, Stop, incoming};
use crate::discovery::{RenderedPrompt, render_template};
use crate::llm::{ChatRequest, Reply};
use crate::manifest::ToolSpec;
use crate::protocol::vcp_server::{reported_outcomes, server_rounds};
use crate::protocol::{Declared, ProtocolId};
use crate::registry::Catalog;
use crate::transcript::{Entry, RequestedCall, Transcript};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A model endpoint that runs the calls itself, as a VCP server does, with
/// some of this host's tools among those it offers: the chain runs none of
/// the calls and tells the model only of those tools. The VCP node's
/// [`Handover`](crate::vcp::Handover) is one.
pub trait HandoverTarget: Send + Sync {
    /// The server, for notes: `ws://…`.
    fn server(&self) -> &str;
    /// The tools of this host that the server offers now.
    fn tools(&self) -> Vec<String>;
}

/// The system prompt: `{{tools}}` holds this node's tools, in the VCP
/// protocol the server reads, only while the node is connected to the
/// server. Rendered each time: the connection comes and goes without the
/// registry changing.
pub(super) fn prompt(handover: &dyn HandoverTarget, catalog: &Catalog, template: &str) -> Arc<RenderedPrompt> {
    let registered = handover.tools();
    let tools: Vec<&ToolSpec> = catalog.tools().map(|(_, spec)| spec).filter(|spec| registered.contains(&spec.name)).collect();
    // No tools, no instructions for calling them either.
    let text = render_template(template, &tools, !tools.is_empty(), ProtocolId::Vcp);
    Arc::new(RenderedPrompt::new(text))
}

impl Chain {
    /// One request to the server, its rounds reported, nothing run here.
    pub(super) async fn hand_over(
        &self,
        transcript: &mut Transcript,
        events: Events<'_>,
        cancel: &CancellationToken,
    ) -> Result<Stop, ChainError> {
        if cancel.is_cancelled() {
            return self.finish(transcript, Stop::Cancelled, events);
        }
        events(ChainEvent::Requesting { iteration: 0 });
        let catalog = self.pipeline.executor().registry().catalog();
        let system = self.prompt(&catalog);
        let request = ChatRequest { messages: transcript.messages(&system.text, ProtocolId::Vcp), tools: None };
        let reply = match self.ask(&request, events, cancel).await {
            Ok(reply) => reply,
            Err(error) => return self.model_failed(transcript, error, events),
        };
        let Reply { content, reasoning, finish_reason, .. } = reply;
        let ids = transcript.call_ids();
        let mut statuses = Vec::new();
        let mut iteration = 0;
        for round in server_rounds(&content) {
            let text = Reply { content: round.text.to_owned(), ..Reply::default() };
            let (calls, warnings) = incoming::calls_in(&text, ProtocolId::Vcp, &Declared::default(), ids);
            let calls: Vec<_> = calls.iter().map(|incoming| incoming.call().clone()).collect();
            if calls.is_empty() && round.reported.as_ref().is_none_or(Vec::is_empty) {
                continue;
            }
            iteration += 1;
            events(ChainEvent::CallsParsed { calls: calls.iter().map(RequestedCall::from_call).collect(), warnings });
            for outcome in reported_outcomes(&calls, round.reported.as_deref(), &mut || ids.assign(None)) {
                statuses.push(format!("{} {}", outcome.tool, outcome.status));
                events(ChainEvent::outcome(calls.iter().find(|c| c.id == outcome.id), &outcome));
            }
            events(ChainEvent::IterationDone { iteration });
        }
        transcript.push(Entry::Assistant { content, reasoning, calls: Vec::new() })?;
        if !statuses.is_empty() {
            let content = format!("the VCP server {} ran the calls: {}", self.handover_server(), statuses.join(", "));
            transcript.push(Entry::Note { content })?;
        }
        if finish_reason.as_deref() == Some("length") {
            let message =
                "the VCP server stopped at its round limit (or the model's length limit): the reply may be unfinished".to_owned();
            transcript.push(Entry::Note { content: message.clone() })?;
            events(ChainEvent::Warning { message });
        }
        self.finish(transcript, Stop::Answered, events)
    }

    fn handover_server(&self) -> &str {
        self.handover.as_deref().map_or("", HandoverTarget::server)
    }
}
