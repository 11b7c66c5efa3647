//! `tools/call` for a client of the 2026-07-28 revision, which the server
//! cannot ask anything back: a call that needs the user's answer returns
//! `input_required`, carrying the questions (elicitation forms) and the
//! paused turn sealed as `requestState`; the client asks its user and
//! retries the request with the answers and the state, and whichever
//! process gets the retry — this one, or a replica with the same key file
//! and components — finishes the turn. A result that needs approval takes
//! a second round the same way.

use super::Shared;
use super::questions::{Reply, call_form, result_form};
use crate::approval::{Answer, CallDecision, DecidedBy, ResultAnswer, ResultDecision, ResumeError, args_sha256};
use crate::call::ToolCall;
use crate::log_throttle::warn_throttled;
use crate::pipeline::{Decisions, PausedTurn, Turn, TurnResult, TurnStep, Waiting};
use crate::printable::printable;
use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, ElicitRequest, InputRequest, InputRequests, InputRequiredResult, InputResponses};

/// What a round of a call ends with: its result, or the questions and the
/// sealed turn.
pub(super) enum Round {
    Done(TurnResult),
    Asks(InputRequiredResult),
}

/// One round of the call `request`, as `turn`: started fresh, or resumed
/// from its `requestState` with the answers its retry carries.
pub(super) async fn call_round(
    shared: &Shared,
    turn: &Turn,
    id: &str,
    request: CallToolRequestParams,
) -> Result<Round, ErrorData> {
    let arguments = request.arguments.unwrap_or_default();
    let binding = binding(turn, &request.name, &arguments);
    let pipeline = &shared.pipeline;
    let mut step = match request.request_state.as_deref() {
        Some(token) => {
            let paused = pipeline.unseal(turn, token, &binding).await.map_err(|error| {
                warn_throttled!("refused an MCP retry of `{}`: {error}", printable(&request.name));
                refusal(&error)
            })?;
            let decisions = decisions(&paused, request.input_responses.as_ref());
            pipeline.resume(turn, paused, decisions).await
        }
        None => pipeline.start(turn, vec![ToolCall::with_map(id, request.name.as_ref(), arguments.clone())]).await,
    };
    loop {
        let paused = match step {
            TurnStep::Done(result) => return Ok(Round::Done(result)),
            TurnStep::Waiting(paused) => paused,
        };
        // The retry carries the arguments again, the sealed turn, and the
        // answers: one that could not come back within the request limit is
        // decided here instead, saying so, rather than handed out.
        let arguments_len = serde_json::to_vec(&arguments).map_or(0, |bytes| bytes.len());
        let retry = arguments_len + pipeline.token_len(&paused) + RETRY_ROOM;
        let limit = shared.config.max_request_bytes;
        if retry > limit {
            let why = format!(
                "it cannot be put to the user over MCP 2026-07-28: the retry carrying the answer would be {} KiB, more \
                 than [mcp] max_request_kib = {}",
                retry.div_ceil(1024),
                limit >> 10
            );
            let decisions = match paused.waiting() {
                Waiting::Calls(calls) => Decisions::Calls(
                    calls
                        .iter()
                        .map(|_| Answer { decision: CallDecision::Deny { reason: Some(why.clone()) }, by: DecidedBy::NoAnswer })
                        .collect(),
                ),
                Waiting::Results(results) => Decisions::Results(
                    results
                        .iter()
                        .map(|_| ResultAnswer {
                            decision: ResultDecision::Reject { reason: Some(why.clone()) },
                            by: DecidedBy::NoAnswer,
                        })
                        .collect(),
                ),
            };
            step = pipeline.resume(turn, paused, decisions).await;
            continue;
        }
        let questions = questions(&paused);
        let token = pipeline.seal(paused, &binding, shared.config.approval_timeout).await.map_err(|error| {
            warn_throttled!("could not pause an MCP call of `{}` for its user: {error}", printable(&request.name));
            ErrorData::internal_error("the call could not be paused for its user's answer; the server's log says why", None)
        })?;
        return Ok(Round::Asks(InputRequiredResult::new(Some(questions), Some(token))));
    }
}

/// Room in a retry, past the arguments and the token, for the answers and
/// the request around them.
const RETRY_ROOM: usize = 16 << 10;

/// What the client is told of a token refused: why, unless the cause is
/// the server's own (its key or ledger files), which only its log names.
fn refusal(error: &ResumeError) -> ErrorData {
    match error {
        ResumeError::NoKey(_) | ResumeError::Ledger { .. } => {
            ErrorData::internal_error("the server could not check the retry's requestState; its log says why", None)
        }
        error => ErrorData::invalid_params(error.to_string(), None),
    }
}

/// What a token of this request is bound to: the agent, the tool and the
/// arguments as the client sent them (keys in any order), so that a retry
/// of another request cannot present it.
fn binding(turn: &Turn, tool: &str, arguments: &serde_json::Map<String, serde_json::Value>) -> Vec<u8> {
    format!("mcp tools/call\n{}\n{tool}\n{}", turn.agent_name(), args_sha256(arguments)).into_bytes()
}

/// The key of the `index`th question of a kind.
fn key(kind: &str, index: usize) -> String {
    format!("{kind}-{index}")
}

const CALL_QUESTION: &str = "approve";
const RESULT_QUESTION: &str = "pass";

/// The questions `paused` puts to the user, one elicitation form each.
fn questions(paused: &PausedTurn) -> InputRequests {
    let form = |params| InputRequest::Elicitation(ElicitRequest::new(params));
    match paused.waiting() {
        Waiting::Calls(calls) => {
            calls.iter().enumerate().map(|(index, call)| (key(CALL_QUESTION, index), form(call_form(call)))).collect()
        }
        Waiting::Results(results) => results
            .iter()
            .enumerate()
            .map(|(index, held)| (key(RESULT_QUESTION, index), form(result_form(&held.outcome, &held.spec))))
            .collect(),
    }
}

/// The decisions the retry's `responses` carry, one per question; one
/// missing or unreadable denies its call (or withholds its result).
fn decisions(paused: &PausedTurn, responses: Option<&InputResponses>) -> Decisions {
    let answer = |kind: &str, index: usize| {
        let key = key(kind, index);
        Reply::in_response(responses.and_then(|responses| responses.get(&key)), &key)
    };
    match paused.waiting() {
        Waiting::Calls(calls) => {
            Decisions::Calls((0..calls.len()).map(|index| answer(CALL_QUESTION, index).call_answer()).collect())
        }
        Waiting::Results(results) => {
            Decisions::Results((0..results.len()).map(|index| answer(RESULT_QUESTION, index).result_answer()).collect())
        }
    }
}
