//! A door in another process asking at this user's console: one desk for
//! every door the user starts. [`RemoteDesk::find`] reads the console's
//! announcement (see `announce`) and checks the console answers;
//! [`RemoteApprover`] puts each question on its desk over HTTP and waits
//! for the person's answer there. A question withdrawn on this side (the
//! call cancelled) closes its request, which takes it off the desk, as
//! for a door in the console's own process; the console's timeout and
//! refusals come back as they are.
//!
//! Both sides of the exchange are here: the console's handlers and the
//! door's client.

use super::Shared;
use super::agents::Toggles;
use super::announce::{self, Announced};
use super::desk::{Verdict, WaitingCall, WaitingResult};
use super::doors::{DOOR_HELLO_EVERY, DoorView};
use super::json_body::JsonBody;
use super::workbench::refuse;
use crate::agent::LiveSettings;
use crate::approval::{Answer, Approver, CallDecision, DecidedBy, PendingCall, ResultAnswer, ResultDecision};
use crate::manifest::ToolSpec;
use crate::outcome::ToolOutcome;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The longest door name put on the desk.
const MAX_DOOR_CHARS: usize = 80;
/// The longest a console may say its questions wait: a day, as
/// `[console] approval_timeout_ms` allows.
const MAX_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;
/// How long a door waits for a console to say it is there.
const FIND_TIMEOUT: Duration = Duration::from_secs(2);
/// Between a hello the console held and the next: enough that a console
/// answering at once cannot keep a door busy.
const HELD_HELLO_PAUSE: Duration = Duration::from_millis(250);
/// Past the console's own timeout, how long a door waits for its answer
/// (the console answers a timed-out question itself).
const ANSWER_GRACE: Duration = Duration::from_secs(10);

/// What the console says of its desk.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct DeskInfo {
    /// How long a question waits for a person.
    timeout_ms: u64,
    /// The console's process.
    pid: u32,
}

/// A door saying it is there; with its agent's toggles, when the page may
/// toggle them.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Hello {
    door: String,
    agent: String,
    pid: u32,
    #[serde(default)]
    toggles: Option<Toggles>,
}

/// A question from a door in another process: calls, or one result.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Ask {
    door: String,
    caller: String,
    agent: String,
    pid: u32,
    #[serde(default)]
    calls: Vec<WaitingCall>,
    #[serde(default)]
    result: Option<WaitingResult>,
}

/// One answer, as it travels back.
#[derive(Debug, Serialize, Deserialize)]
struct Answered {
    verdict: Verdict,
    #[serde(default)]
    reason: Option<String>,
    by: DecidedBy,
}

#[derive(Debug, Serialize, Deserialize)]
struct Answers {
    answers: Vec<Answered>,
}

impl From<Answer> for Answered {
    fn from(answer: Answer) -> Self {
        let (verdict, reason) = match answer.decision {
            CallDecision::AllowOnce => (Verdict::Allow, None),
            CallDecision::AllowAlways => (Verdict::Always, None),
            CallDecision::Deny { reason } => (Verdict::Deny, reason),
        };
        Answered { verdict, reason, by: answer.by }
    }
}

impl From<ResultAnswer> for Answered {
    fn from(answer: ResultAnswer) -> Self {
        let (verdict, reason) = match answer.decision {
            ResultDecision::Pass => (Verdict::Pass, None),
            ResultDecision::Reject { reason } => (Verdict::Reject, reason),
        };
        Answered { verdict, reason, by: answer.by }
    }
}

// The console's side.

/// `GET /api/desk`: the desk is here, and how long it waits.
pub(super) async fn desk_info(State(shared): State<Arc<Shared>>) -> Json<DeskInfo> {
    Json(DeskInfo { timeout_ms: shared.desk.timeout().as_millis() as u64, pid: std::process::id() })
}

/// `GET /api/doors`: the doors the console serves.
pub(super) async fn doors(State(shared): State<Arc<Shared>>) -> Json<Vec<DoorView>> {
    Json(shared.doors.list())
}

/// `POST /api/doors`: a door in another process is there. One that sends
/// its settings is answered with its agent's toggles as the page has them:
/// at once when they differ from its own, else when the page changes them
/// or, at the latest, when the door is due to say hello again.
pub(super) async fn hello(State(shared): State<Arc<Shared>>, JsonBody(hello): JsonBody<Hello>) -> Response {
    shared.doors.seen_remote(&hello.door, hello.pid, &hello.agent, None);
    let Some(reported) = hello.toggles.filter(|_| !hello.agent.is_empty()) else {
        return StatusCode::NO_CONTENT.into_response();
    };
    if let Err(why) = reported.check() {
        return refuse(StatusCode::BAD_REQUEST, why);
    }
    let settings = shared.agents.heard(&hello.agent, &reported);
    let mut changes = settings.watch();
    // At most so many hellos are held at once; past them, one is answered
    // at once (its door asks again a moment later).
    if let Ok(_held) = shared.agents.hold()
        && settings.with(Toggles::of) == reported
    {
        tokio::select! {
            () = changes.changed() => {}
            () = tokio::time::sleep(DOOR_HELLO_EVERY) => {}
            () = shared.closing.cancelled() => {}
        }
    }
    Json(settings.with(Toggles::of)).into_response()
}

/// `POST /api/desk/ask`: put a door's question on the desk and answer it
/// when the person has (the request stays open meanwhile; closing it
/// withdraws the question).
pub(super) async fn ask(State(shared): State<Arc<Shared>>, JsonBody(ask): JsonBody<Ask>) -> Response {
    shared.doors.seen_remote(&ask.door, ask.pid, &ask.agent, Some(&ask.caller));
    let door: String = ask.door.chars().take(MAX_DOOR_CHARS).collect();
    let approver = shared.desk.approver(&door, &ask.caller);
    match (ask.calls.is_empty(), ask.result) {
        (false, None) => {
            let answers = approver.ask_calls(ask.calls).await;
            Json(Answers { answers: answers.into_iter().map(Answered::from).collect() }).into_response()
        }
        (true, Some(result)) => Json(Answered::from(approver.ask_result(result.excerpt()).await)).into_response(),
        _ => refuse(StatusCode::BAD_REQUEST, "a question holds calls or one result"),
    }
}

// The door's side.

/// This user's console, in another process, as a door finds it.
#[derive(Clone)]
pub struct RemoteDesk {
    /// Where it was announced: read again before each question, so a
    /// console that is gone is not asked at an address someone else may
    /// now hold.
    path: Arc<std::path::PathBuf>,
    announced: Arc<Announced>,
    timeout: Duration,
    client: reqwest::Client,
}

impl RemoteDesk {
    /// The console this user has open, if one is announced, the file is
    /// theirs alone and the console answers with the token it names.
    pub async fn find() -> Option<RemoteDesk> {
        let path = announce::announcement_path()?;
        if !path.exists() {
            return None;
        }
        let announced = match announce::read(&path) {
            Ok(announced) => announced,
            Err(why) => {
                tracing::warn!("not asking at the console announced in {}: {why}", path.display());
                return None;
            }
        };
        if !announce::is_ours_and_running(announced.pid) {
            tracing::debug!("the console announced in {} is no longer running", path.display());
            return None;
        }
        // Loopback, directly: no proxy sees the token, no redirect takes it
        // elsewhere.
        let client = crate::http_client::builder()
            .connect_timeout(FIND_TIMEOUT)
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .ok()?;
        let asked = client.get(format!("{}/api/desk", announced.base)).bearer_auth(&announced.token).timeout(FIND_TIMEOUT);
        let info: DeskInfo = match asked.send().await.and_then(reqwest::Response::error_for_status) {
            Ok(answer) => answer.json().await.ok()?,
            Err(error) => {
                // A console that crashed leaves its file behind.
                tracing::debug!("the console announced at {} does not answer: {error}", announced.base);
                return None;
            }
        };
        if info.pid != announced.pid {
            tracing::warn!("the console at {} is not the process announced in {}", announced.base, path.display());
            return None;
        }
        let timeout = Duration::from_millis(info.timeout_ms.clamp(1, MAX_TIMEOUT_MS));
        Some(RemoteDesk { path: Arc::new(path), announced: Arc::new(announced), timeout, client })
    }

    /// The console's address (without its token).
    pub fn base(&self) -> &str {
        &self.announced.base
    }

    /// The console's process.
    pub fn pid(&self) -> u32 {
        self.announced.pid
    }

    /// How long the console lets a question wait for a person.
    pub fn approval_timeout(&self) -> Duration {
        self.timeout
    }

    /// Tell the console that `door` of this process serves `agent`, and
    /// keep telling it until `stop` fires, so its page lists the door.
    /// With the `settings` the door serves by, the page may toggle the
    /// agent's tools: the door takes each change as the console tells it.
    pub fn attend(&self, door: &str, agent: &str, settings: Option<LiveSettings>, stop: CancellationToken) {
        let desk = self.clone();
        let (door, agent) = (door.to_owned(), agent.to_owned());
        tokio::spawn(async move {
            loop {
                if desk.gone().is_some() {
                    return;
                }
                let hello = Hello {
                    door: door.clone(),
                    agent: agent.clone(),
                    pid: std::process::id(),
                    toggles: settings.as_ref().map(|settings| settings.with(Toggles::of)),
                };
                // The console holds a hello with settings until they change.
                let said = desk.post("/api/doors").json(&hello).timeout(DOOR_HELLO_EVERY + FIND_TIMEOUT).send();
                let pause = tokio::select! {
                    () = stop.cancelled() => return,
                    said = said => match (said.and_then(reqwest::Response::error_for_status), &settings) {
                        (Ok(answer), Some(settings)) => match answer.json::<Toggles>().await {
                            Ok(toggles) => {
                                settings.update(|config| toggles.apply(config));
                                HELD_HELLO_PAUSE
                            }
                            Err(error) => {
                                tracing::debug!("the console at {} sent toggles not understood: {error}", desk.base());
                                DOOR_HELLO_EVERY
                            }
                        },
                        (Ok(_), None) => DOOR_HELLO_EVERY,
                        (Err(error), _) => {
                            tracing::debug!("the console at {} did not hear the door: {error}", desk.base());
                            DOOR_HELLO_EVERY
                        }
                    },
                };
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(pause) => {}
                }
            }
        });
    }

    /// An approver that asks at this console for calls arriving through
    /// `door` of this process from `caller`, running as `agent`.
    pub fn approver(&self, door: &str, agent: &str, caller: &str) -> RemoteApprover {
        RemoteApprover { desk: self.clone(), door: door.to_owned(), agent: agent.to_owned(), caller: caller.to_owned() }
    }

    /// Why the console found is no longer the one announced, if it is not:
    /// its file changed or went, or its process ended.
    fn gone(&self) -> Option<String> {
        match announce::read(&self.path) {
            Ok(now) if now == *self.announced && announce::is_ours_and_running(now.pid) => None,
            Ok(_) => Some("its announcement changed or its process ended".to_owned()),
            Err(why) => Some(why),
        }
    }

    fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.client.post(format!("{}{path}", self.announced.base)).bearer_auth(&self.announced.token)
    }
}

/// Asks the person at a console in another process. Cheap to clone.
#[derive(Clone)]
pub struct RemoteApprover {
    desk: RemoteDesk,
    door: String,
    agent: String,
    caller: String,
}

impl RemoteApprover {
    /// Ask, and read the answer as `T`; why there is none, in words.
    async fn ask<T: serde::de::DeserializeOwned>(
        &self,
        calls: Vec<WaitingCall>,
        result: Option<WaitingResult>,
    ) -> Result<T, String> {
        let ask = Ask {
            door: self.door.clone(),
            caller: self.caller.clone(),
            agent: self.agent.clone(),
            pid: std::process::id(),
            calls,
            result,
        };
        if let Some(why) = self.desk.gone() {
            return Err(format!("the console at {} could not be asked ({why})", self.desk.base()));
        }
        let sent = self.desk.post("/api/desk/ask").json(&ask).timeout(self.desk.timeout + ANSWER_GRACE).send().await;
        let unreachable = |error: reqwest::Error| format!("the console at {} could not be asked ({error})", self.desk.base());
        let answer = sent.and_then(reqwest::Response::error_for_status).map_err(unreachable)?;
        answer
            .json()
            .await
            .map_err(|error| format!("the console at {} answered in a way not understood ({error})", self.desk.base()))
    }
}

#[async_trait::async_trait]
impl Approver for RemoteApprover {
    async fn approve_calls(&self, calls: &[PendingCall]) -> Vec<CallDecision> {
        self.answer_calls(calls).await.into_iter().map(|answer| answer.decision).collect()
    }

    async fn answer_calls(&self, calls: &[PendingCall]) -> Vec<Answer> {
        let answered: Result<Answers, String> = self.ask(calls.iter().map(WaitingCall::of).collect(), None).await;
        let answers = match answered {
            Ok(Answers { answers }) if answers.len() == calls.len() => Ok(answers),
            Ok(_) => Err("the console answered for other calls".to_owned()),
            Err(why) => Err(why),
        };
        let answers = match answers {
            Ok(answers) => answers,
            Err(why) => {
                let decision = CallDecision::Deny { reason: Some(format!("not approved: {why}")) };
                return vec![Answer { decision, by: DecidedBy::NoAnswer }; calls.len()];
            }
        };
        answers
            .into_iter()
            .map(|answered| {
                let decision = match answered.verdict {
                    Verdict::Allow => CallDecision::AllowOnce,
                    Verdict::Always => CallDecision::AllowAlways,
                    Verdict::Deny | Verdict::Pass | Verdict::Reject => CallDecision::Deny { reason: answered.reason },
                };
                Answer { decision, by: answered.by }
            })
            .collect()
    }

    async fn approve_result(&self, outcome: &ToolOutcome, tool: &ToolSpec) -> ResultDecision {
        self.answer_result(outcome, tool).await.decision
    }

    async fn answer_result(&self, outcome: &ToolOutcome, tool: &ToolSpec) -> ResultAnswer {
        match self.ask::<Answered>(Vec::new(), Some(WaitingResult::of(outcome, tool))).await {
            Ok(Answered { verdict: Verdict::Pass, by, .. }) => ResultAnswer { decision: ResultDecision::Pass, by },
            Ok(Answered { reason, by, .. }) => ResultAnswer { decision: ResultDecision::Reject { reason }, by },
            Err(why) => ResultAnswer {
                decision: ResultDecision::Reject { reason: Some(format!("not approved: {why}")) },
                by: DecidedBy::NoAnswer,
            },
        }
    }
}
