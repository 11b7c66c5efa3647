//! A paused turn as a resume token and back: [`Pipeline::seal`] and
//! [`Pipeline::unseal`]. The token's cryptography and its single use are
//! the approval module's ([`ResumeSeal`](crate::approval::ResumeSeal));
//! here is what a turn is made of in one, and how it is bound again to
//! the components of the process that resumes it.

use super::paused::{PausedTurn, PendingResult, Question, Slot};
use super::{Judged, Pipeline, Turn};
use crate::approval::{AskReason, Assessment, AuditRecord, PendingCall, ResumeSeal};
use crate::call::ToolCall;
use crate::checked_call::CheckedCall;
use crate::outcome::ToolOutcome;
use crate::registry::Catalog;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::time::Duration;

pub use crate::approval::ResumeError;

/// A paused turn as it travels in a token.
#[derive(Serialize, Deserialize)]
struct SealedTurn {
    agent: String,
    slots: Vec<SealedSlot>,
    question: SealedQuestion,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "slot", rename_all = "kebab-case")]
enum SealedSlot {
    Done { outcome: ToolOutcome },
    Pending { call: SealedCall, decided: Option<Assessment> },
    Held { call: Box<SealedCall>, decided: Option<Assessment>, outcome: ToolOutcome },
}

/// A checked call: the call, its arguments coerced, and the identity of
/// the component it was checked against.
#[derive(Serialize, Deserialize)]
struct SealedCall {
    id: String,
    tool: String,
    args: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    reserved: Map<String, Value>,
    plugin: String,
    sha256: String,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "waiting", rename_all = "kebab-case")]
enum SealedQuestion {
    Calls { indices: Vec<usize>, reasons: Vec<AskReason> },
    Results { indices: Vec<usize> },
}

impl SealedCall {
    fn of(call: &CheckedCall) -> Self {
        let (plugin, called) = (call.plugin(), call.call());
        SealedCall {
            id: called.id.clone(),
            tool: called.tool.clone(),
            args: called.args.clone(),
            reserved: called.reserved.clone(),
            plugin: plugin.name().to_owned(),
            sha256: plugin.sha256.clone(),
        }
    }

    /// The call checked again against `catalog`, bound to the same
    /// component; why not, when this process does not have it or does not
    /// offer it to `turn`.
    fn bind(self, catalog: &Catalog, turn: &Turn) -> Result<CheckedCall, ResumeError> {
        let mismatch = |why: String| ResumeError::Mismatched(why);
        let plugin =
            catalog.plugin(&self.plugin).ok_or_else(|| mismatch(format!("plugin {} is not loaded here", self.plugin)))?;
        if plugin.sha256 != self.sha256 {
            return Err(mismatch(format!(
                "plugin {} here is another component (SHA-256 {}, the turn was checked against {})",
                self.plugin, plugin.sha256, self.sha256
            )));
        }
        let spec = plugin
            .manifest
            .tools
            .iter()
            .find(|spec| spec.name == self.tool)
            .filter(|spec| turn.agent.is_none() || turn.offers(spec))
            .ok_or_else(|| mismatch(format!("`{}` is not offered here", self.tool)))?;
        let call = ToolCall::with_map(&self.id, &self.tool, self.args.clone()).with_reserved(self.reserved);
        let checked = CheckedCall::check_among(&call, catalog, &[spec]).map_err(|error| mismatch(error.message))?;
        if checked.plugin().sha256 != self.sha256 || checked.call().args != self.args {
            return Err(mismatch(format!("`{}` checks differently here", self.tool)));
        }
        Ok(checked)
    }
}

/// The turn as it travels in a token.
fn payload(paused: &PausedTurn) -> Vec<u8> {
    let slots = paused
        .slots
        .iter()
        .map(|slot| match slot {
            Slot::Done { outcome, .. } => SealedSlot::Done { outcome: outcome.clone() },
            Slot::Pending { call, decided } => SealedSlot::Pending { call: SealedCall::of(call), decided: decided.clone() },
            Slot::Held { call, decided, outcome } => {
                SealedSlot::Held { call: Box::new(SealedCall::of(call)), decided: decided.clone(), outcome: outcome.clone() }
            }
            Slot::Running => unreachable!("nothing runs while a turn waits"),
        })
        .collect();
    let question = match &paused.question {
        Question::Calls { indices, calls } => {
            SealedQuestion::Calls { indices: indices.clone(), reasons: calls.iter().map(|call| call.reason.clone()).collect() }
        }
        Question::Results { indices, .. } => SealedQuestion::Results { indices: indices.clone() },
    };
    serde_json::to_vec(&SealedTurn { agent: paused.agent.clone(), slots, question }).expect("a turn serializes")
}

/// What a token is bound to: the door's `binding` and the turn's agent,
/// so a token of another agent is refused before it is spent.
fn bound(agent: &str, binding: &[u8]) -> Vec<u8> {
    let mut bound = Vec::with_capacity(agent.len() + 1 + binding.len());
    bound.extend_from_slice(agent.as_bytes());
    bound.push(0);
    bound.extend_from_slice(binding);
    bound
}

impl Pipeline {
    /// `paused` as a resume token, bound to `binding` (what the door's
    /// request was: a retry must present the same) and valid for
    /// `lifetime` (at most [`MAX_RESUME_LIFETIME`](crate::approval::MAX_RESUME_LIFETIME)).
    /// What the turn did so far is audited now, before the token is made:
    /// the calls already done, and the calls that ran and whose results
    /// wait (audited again, with what became of the result, by whichever
    /// process finishes the turn), so a token never given back leaves no
    /// call that ran unaudited.
    ///
    /// # Errors
    ///
    /// [`ResumeError::NoKey`] when the host key cannot be read or made,
    /// [`ResumeError::Ledger`] when the ledger of used tokens cannot;
    /// [`ResumeError::TooLarge`] past [`MAX_TOKEN_BYTES`](crate::approval::MAX_TOKEN_BYTES).
    pub async fn seal(&self, paused: PausedTurn, binding: &[u8], lifetime: Duration) -> Result<String, ResumeError> {
        let agent = paused.agent.clone();
        for slot in &paused.slots {
            match slot {
                Slot::Done { audit: Some(audit), .. } => self.approvals.audit(audit),
                Slot::Held { call, decided, outcome } if self.approvals.audits() => {
                    let record =
                        AuditRecord::new(&agent, Some(call.plugin().name()), &call.call().args, decided.as_ref(), outcome);
                    self.approvals.audit(&record);
                }
                _ => {}
            }
        }
        let payload = payload(&paused);
        let (seal, binding) = (self.approvals.resume_seal().clone(), bound(&agent, binding));
        let sealed = match tokio::task::spawn_blocking(move || seal.seal(&payload, &binding, lifetime)).await {
            Ok(sealed) => sealed,
            Err(join) => std::panic::resume_unwind(join.into_panic()),
        };
        self.approvals.flush_audit().await;
        sealed
    }

    /// How long the token [`seal`](Self::seal) would make of `paused` is,
    /// in bytes: for a door that must know whether it can come back (an
    /// MCP retry has a size limit).
    pub fn token_len(&self, paused: &PausedTurn) -> usize {
        ResumeSeal::token_len(payload(paused).len())
    }

    /// The turn `token` holds, to [`resume`](Self::resume) as `turn`: the
    /// token must open under this host's key, be unexpired, bound to
    /// `binding`, of `turn`'s agent, and unused (it is spent now), and
    /// each of its calls must check again against a component here with
    /// the same SHA-256.
    ///
    /// # Errors
    ///
    /// A [`ResumeError`] saying which of those failed.
    pub async fn unseal(&self, turn: &Turn, token: &str, binding: &[u8]) -> Result<PausedTurn, ResumeError> {
        // The key and the ledger are files: read on a blocking thread.
        let (seal, token, binding) = (self.approvals.resume_seal().clone(), token.to_owned(), bound(turn.agent_name(), binding));
        let opened = match tokio::task::spawn_blocking(move || seal.open(&token, &binding)).await {
            Ok(opened) => opened?,
            Err(join) => std::panic::resume_unwind(join.into_panic()),
        };
        let paused = self.rebuild(turn, &opened.payload)?;
        // Spent only once it is known to be good here: a token refused for
        // this process's components may still resume on another replica.
        match tokio::task::spawn_blocking(move || opened.spend()).await {
            Ok(spent) => spent?,
            Err(join) => std::panic::resume_unwind(join.into_panic()),
        }
        Ok(paused)
    }

    /// The paused turn `payload` describes, its calls bound to this
    /// process's components.
    fn rebuild(&self, turn: &Turn, payload: &[u8]) -> Result<PausedTurn, ResumeError> {
        let agent = turn.agent_name();
        let sealed: SealedTurn =
            serde_json::from_slice(payload).map_err(|_| ResumeError::Malformed("its turn is of another format"))?;
        if sealed.agent != agent {
            return Err(ResumeError::Mismatched(format!("it is a turn of agent `{}`, not `{agent}`", sealed.agent)));
        }
        if turn.agent.is_some() && !turn.config.enabled {
            return Err(ResumeError::Mismatched(format!("tool calling is off for agent `{agent}` here")));
        }
        let catalog = self.executor.registry().catalog();
        let slots = sealed
            .slots
            .into_iter()
            .map(|slot| {
                Ok(match slot {
                    SealedSlot::Done { outcome } => Slot::Done { outcome, audit: None },
                    SealedSlot::Pending { call, decided } => Slot::Pending { call: call.bind(&catalog, turn)?, decided },
                    SealedSlot::Held { call, decided, outcome } => {
                        Slot::Held { call: call.bind(&catalog, turn)?, decided, outcome }
                    }
                })
            })
            .collect::<Result<Vec<Slot>, ResumeError>>()?;
        let malformed = ResumeError::Malformed("its question does not fit its calls");
        let question = match sealed.question {
            SealedQuestion::Calls { indices, reasons } if indices.len() == reasons.len() => {
                let calls = indices
                    .iter()
                    .zip(reasons)
                    .map(|(&index, reason)| match slots.get(index) {
                        Some(Slot::Pending { call, decided: None }) => Ok(Judged::call(call).question(agent, reason)),
                        _ => Err(ResumeError::Malformed("its question does not fit its calls")),
                    })
                    .collect::<Result<Vec<PendingCall>, ResumeError>>()?;
                Question::Calls { indices, calls }
            }
            SealedQuestion::Results { indices } => {
                let results = indices
                    .iter()
                    .map(|&index| match slots.get(index) {
                        Some(Slot::Held { call, outcome, .. }) => Ok(PendingResult::new(call, outcome)),
                        _ => Err(ResumeError::Malformed("its question does not fit its calls")),
                    })
                    .collect::<Result<Vec<PendingResult>, ResumeError>>()?;
                Question::Results { indices, results }
            }
            SealedQuestion::Calls { .. } => return Err(malformed),
        };
        Ok(PausedTurn::new(agent, slots, question))
    }
}
