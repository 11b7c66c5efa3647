//! The console's chat: one conversation with the agent's model, through
//! the library's [`Chain`]. Each turn runs in the background; its events
//! (text as it streams, calls, approvals, outcomes) reach the page through
//! the feed, and calls that need approval wait at the desk. Stop cancels
//! the turn.

use super::Shared;
use super::json_body::JsonBody;
use super::workbench::refuse;
use crate::chain::Chain;
use crate::llm::LlmClient;
use crate::transcript::Transcript;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// The conversation and the turn in flight.
pub(super) struct ChatRoom {
    llm: Option<Arc<dyn LlmClient>>,
    transcript: tokio::sync::Mutex<Transcript>,
    /// What the conversation may hold (`[console] max_chat_kib`): a new
    /// message is refused past it, so one turn's growth (each reply and
    /// result has its own cap) is the most it can pass by.
    max_bytes: usize,
    /// The running turn's cancel token.
    running: Mutex<Option<CancellationToken>>,
}

impl ChatRoom {
    pub(super) fn new(llm: Option<Arc<dyn LlmClient>>, max_bytes: usize) -> Self {
        ChatRoom { llm, transcript: tokio::sync::Mutex::new(Transcript::in_memory()), running: Mutex::new(None), max_bytes }
    }

    fn running(&self) -> std::sync::MutexGuard<'_, Option<CancellationToken>> {
        self.running.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether there is a model, and whether a turn runs.
    pub(super) fn describe(&self) -> Value {
        json!({ "model": self.llm.is_some(), "busy": self.running().is_some() })
    }

    /// Cancel the turn in flight, if any.
    pub(super) fn stop(&self) -> bool {
        self.running().as_ref().map(CancellationToken::cancel).is_some()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Say {
    message: String,
}

/// Start a turn with the person's message; 409 while one runs.
pub(super) async fn send(State(shared): State<Arc<Shared>>, JsonBody(say): JsonBody<Say>) -> Response {
    let Some(llm) = shared.chat.llm.clone() else {
        return refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "no model: start the console with --base-url URL, --llm NAME or OPENAI_BASE_URL to chat",
        );
    };
    if say.message.trim().is_empty() {
        return refuse(StatusCode::BAD_REQUEST, "an empty message");
    }
    let cancel = CancellationToken::new();
    {
        let mut running = shared.chat.running();
        if running.is_some() {
            return refuse(StatusCode::CONFLICT, "a turn is running: wait for it, or stop it");
        }
        let held = match shared.chat.transcript.try_lock() {
            Ok(transcript) => serde_json::to_vec(transcript.entries()).map_or(0, |json| json.len()),
            Err(_) => return refuse(StatusCode::CONFLICT, "a turn is running: wait for it, or stop it"),
        };
        let max = shared.chat.max_bytes;
        if held.saturating_add(say.message.len()) > max {
            let why = format!(
                "the conversation holds {} KiB, more than [console] max_chat_kib = {} allows with this message: start a new one (Reset)",
                held.div_ceil(1024),
                max >> 10
            );
            return refuse(StatusCode::PAYLOAD_TOO_LARGE, why);
        }
        *running = Some(cancel.clone());
    }
    let turn = shared.clone();
    tokio::spawn(async move {
        // However the turn ends — a panic included — the chat is free again.
        let mut over = TurnOver { shared: turn.clone(), finished: json!({ "error": "the turn failed inside the host" }) };
        turn.feed.publish("chat-started", &json!({ "message": say.message }));
        over.finished = converse(&turn, llm, &say.message, &cancel).await;
    });
    (StatusCode::ACCEPTED, Json(json!({ "started": true }))).into_response()
}

/// Frees the chat when its turn ends, and tells the page how.
struct TurnOver {
    shared: Arc<Shared>,
    finished: Value,
}

impl Drop for TurnOver {
    fn drop(&mut self) {
        *self.shared.chat.running() = None;
        self.shared.feed.publish("chat-finished", &self.finished);
    }
}

/// One turn, as the chain runs it; what the page is told at its end.
async fn converse(shared: &Shared, llm: Arc<dyn LlmClient>, message: &str, cancel: &CancellationToken) -> Value {
    let pipeline = shared.pipeline.with_approver(Arc::new(shared.desk.approver("console", "chat")));
    let chain = match Chain::new(llm, pipeline, shared.agents.own_name().to_owned(), shared.agents.own().get()) {
        Ok(chain) => chain.with_prompt_cache(shared.prompts.clone()),
        Err(error) => return json!({ "error": error.to_string() }),
    };
    let mut transcript = shared.chat.transcript.lock().await;
    let feed = shared.feed.clone();
    let events = move |event: crate::chain::ChainEvent| feed.publish("chat", &event);
    match chain.send(&mut transcript, message, &events, cancel).await {
        Ok(stop) => json!({ "stop": stop, "said": stop.to_string() }),
        Err(error) => json!({ "error": error.to_string() }),
    }
}

/// Cancel the turn in flight.
pub(super) async fn stop(State(shared): State<Arc<Shared>>) -> Json<Value> {
    Json(json!({ "stopped": shared.chat.stop() }))
}

/// The conversation so far (`busy` while a turn holds it).
pub(super) async fn history(State(shared): State<Arc<Shared>>) -> Json<Value> {
    match shared.chat.transcript.try_lock() {
        Ok(transcript) => Json(json!({ "busy": false, "entries": transcript.entries() })),
        Err(_) => Json(json!({ "busy": true, "entries": null })),
    }
}

/// Start a new conversation.
pub(super) async fn reset(State(shared): State<Arc<Shared>>) -> Response {
    let running = || refuse(StatusCode::CONFLICT, "a turn is running: stop it first");
    if shared.chat.running().is_some() {
        return running();
    }
    // A turn that starts meanwhile holds the transcript: it is not erased.
    match shared.chat.transcript.try_lock() {
        Ok(mut transcript) => *transcript = Transcript::in_memory(),
        Err(_) => return running(),
    }
    Json(json!({ "reset": true })).into_response()
}
