//! The approval desk: calls and results waiting for a person at the
//! console, whichever door they came through. [`ConsoleApprover`] puts a
//! request on the desk and waits for the page's decision, up to the
//! console's timeout; a request whose call is cancelled meanwhile (Stop,
//! an MCP client's cancellation, a VCP server's `cancel_tool`) is taken off
//! the desk, and the page is told.

use super::feed::Feed;
use crate::approval::{Answer, Approver, CallDecision, DecidedBy, PendingCall, ResultAnswer, ResultDecision};
use crate::manifest::{Permission, ToolSpec};
use crate::outcome::{Status, ToolOutcome};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::oneshot;

/// How much of a result the page is shown to pass or reject.
const RESULT_EXCERPT_BYTES: usize = 64 * 1024;
/// Requests the desk holds at once; past it a call is denied (a result
/// rejected) at once, saying why, rather than piling up unseen.
pub(super) const MAX_WAITING: usize = 64;
/// The longest caller name shown (an MCP client names itself).
const MAX_CALLER_CHARS: usize = 80;

/// One request on the desk, as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Waiting {
    /// The desk's number for it.
    pub id: u64,
    /// The door it came through: `console`, `mcp`, `vcp`.
    pub door: String,
    /// Who asked: the chat, an MCP client's name, the VCP server.
    pub caller: String,
    /// When it must be decided by, in milliseconds since the epoch.
    pub expires_at_ms: u64,
    /// Calls to approve (empty for a result).
    pub calls: Vec<WaitingCall>,
    /// A result to pass or reject.
    pub result: Option<WaitingResult>,
}

/// A call waiting for a decision (as a door in another process sends it
/// too).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct WaitingCall {
    pub id: String,
    pub agent: String,
    pub plugin: String,
    pub tool: String,
    pub level: Permission,
    pub args: Map<String, Value>,
    /// Why it is asked.
    pub reason: String,
    /// Whether "allow always" means anything for it.
    pub can_remember: bool,
    /// Its decision, once made (the batch waits for all of them).
    #[serde(skip_deserializing)]
    pub decided: Option<&'static str>,
}

/// A result waiting to be passed on or rejected.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct WaitingResult {
    pub id: String,
    pub plugin: String,
    pub tool: String,
    pub status: Status,
    pub output: String,
    /// The output was cut to the excerpt shown.
    pub cut: bool,
    /// The whole output's size: what Pass passes on.
    pub total_bytes: usize,
}

/// Where an answer goes.
enum Reply {
    Calls { decisions: Vec<Option<CallDecision>>, send: Option<oneshot::Sender<Vec<CallDecision>>> },
    Result { send: Option<oneshot::Sender<ResultDecision>> },
}

struct Entry {
    view: Waiting,
    reply: Reply,
    /// Its JSON's bytes, as counted against `[console] max_waiting_kib`.
    bytes: usize,
}

impl Entries {
    /// Take request `id` off the desk; whether it was there.
    fn remove(&mut self, id: u64) -> bool {
        match self.waiting.remove(&id) {
            Some(entry) => {
                self.bytes -= entry.bytes;
                true
            }
            None => false,
        }
    }
}

/// A person's answer to one pending call, as the page sends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(super) enum Verdict {
    Allow,
    Always,
    Deny,
    Pass,
    Reject,
}

/// Why a decision could not be taken.
#[derive(Debug, thiserror::Error)]
pub(super) enum DeskError {
    #[error("nothing with number {0} waits for a decision (it was decided, cancelled or timed out)")]
    Gone(u64),
    #[error("request {0} has no call {1}")]
    NoCall(u64, usize),
    #[error("`{0:?}` does not answer this request: calls take allow, always or deny; results take pass or reject")]
    Mismatch(Verdict),
}

/// The requests waiting for a person; shared by every door's approver.
pub(super) struct Desk {
    next: AtomicU64,
    entries: Mutex<Entries>,
    feed: Feed,
    timeout: Duration,
    /// What the waiting requests may hold in all (`[console] max_waiting_kib`).
    max_bytes: usize,
}

#[derive(Default)]
struct Entries {
    waiting: BTreeMap<u64, Entry>,
    /// What the waiting requests hold: their JSON's bytes.
    bytes: usize,
    /// The console shut down: nothing more is put on the desk.
    closed: bool,
}

/// Why a request was not put on the desk, or got no answer.
enum Unanswered {
    /// Nobody decided in time.
    TimedOut,
    /// The console closed, or the desk was full: the words say which.
    Refused(String),
}

impl Desk {
    pub(super) fn new(feed: Feed, timeout: Duration, max_bytes: usize) -> Self {
        Desk { next: AtomicU64::new(1), entries: Mutex::new(Entries::default()), feed, timeout, max_bytes }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// How long a request waits for a person.
    pub(super) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Everything waiting now, oldest first.
    pub(super) fn waiting(&self) -> Vec<Waiting> {
        self.entries().waiting.values().map(|entry| entry.view.clone()).collect()
    }

    /// Put a request on the desk, unless the console closed or the desk is
    /// full.
    fn put(&self, mut view: Waiting, reply: Reply) -> Result<Withdrawal<'_>, Unanswered> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        view.id = id;
        view.expires_at_ms = now_ms() + self.timeout.as_millis() as u64;
        {
            let mut entries = self.entries();
            if entries.closed {
                return Err(Unanswered::Refused("the console closed before anyone decided".to_owned()));
            }
            if entries.waiting.len() >= MAX_WAITING {
                return Err(Unanswered::Refused(format!("{MAX_WAITING} requests already wait for a person at the console")));
            }
            let bytes = serde_json::to_vec(&view).map_or(0, |json| json.len());
            if entries.bytes.saturating_add(bytes) > self.max_bytes {
                return Err(Unanswered::Refused(format!(
                    "the requests waiting at the console would hold {} KiB, more than [console] max_waiting_kib = {}",
                    entries.bytes.saturating_add(bytes).div_ceil(1024),
                    self.max_bytes >> 10
                )));
            }
            entries.bytes += bytes;
            entries.waiting.insert(id, Entry { view: view.clone(), reply, bytes });
        }
        self.feed.publish("pending", &view);
        Ok(Withdrawal { desk: self, id })
    }

    /// The console shuts down: whatever waits is answered as refused (its
    /// waiter sees the reply dropped), and nothing more is put here.
    pub(super) fn close(&self) {
        let drained = {
            let mut entries = self.entries();
            entries.closed = true;
            entries.bytes = 0;
            std::mem::take(&mut entries.waiting)
        };
        for id in drained.into_keys() {
            self.feed.publish("resolved", &serde_json::json!({ "id": id, "how": "closed" }));
        }
    }

    /// Wait for the answer to a request put on the desk.
    async fn answer<T>(&self, withdrawal: Withdrawal<'_>, answer: oneshot::Receiver<T>) -> Result<T, Unanswered> {
        match tokio::time::timeout(self.timeout, answer).await {
            Ok(Ok(decided)) => {
                withdrawal.finish("decided");
                Ok(decided)
            }
            // The reply was dropped: the console closed.
            Ok(Err(_)) => {
                withdrawal.finish("closed");
                Err(Unanswered::Refused("the console closed before anyone decided".to_owned()))
            }
            Err(_) => {
                withdrawal.finish("timed-out");
                Err(Unanswered::TimedOut)
            }
        }
    }

    /// Decide call `index` of request `id` (`None`: every undecided call).
    pub(super) fn decide(
        &self,
        id: u64,
        index: Option<usize>,
        verdict: Verdict,
        reason: Option<String>,
    ) -> Result<(), DeskError> {
        let mut entries = self.entries();
        let entry = entries.waiting.get_mut(&id).ok_or(DeskError::Gone(id))?;
        let done = match &mut entry.reply {
            Reply::Calls { decisions, send } => {
                let decision = match verdict {
                    Verdict::Allow => CallDecision::AllowOnce,
                    Verdict::Always => CallDecision::AllowAlways,
                    Verdict::Deny => CallDecision::Deny {
                        reason: Some(match reason.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
                            Some(reason) => format!("the user denied it: {reason}"),
                            None => "the user denied it".to_owned(),
                        }),
                    },
                    Verdict::Pass | Verdict::Reject => return Err(DeskError::Mismatch(verdict)),
                };
                let indices: Vec<usize> = match index {
                    Some(index) if index < decisions.len() => vec![index],
                    Some(index) => return Err(DeskError::NoCall(id, index)),
                    None => (0..decisions.len()).filter(|&i| decisions[i].is_none()).collect(),
                };
                for index in indices {
                    let shown = match (&decision, entry.view.calls[index].can_remember) {
                        (CallDecision::AllowAlways, false) => CallDecision::AllowOnce,
                        (decision, _) => decision.clone(),
                    };
                    entry.view.calls[index].decided = Some(decision_name(&shown));
                    decisions[index] = Some(shown);
                }
                if decisions.iter().all(Option::is_some) {
                    let all = decisions.iter_mut().map(|d| d.take().expect("all decided")).collect();
                    // The waiter gave up (timed out) a moment ago: the
                    // decision came too late, and the page is told so.
                    if send.take().is_none_or(|send| send.send(all).is_err()) {
                        return Err(DeskError::Gone(id));
                    }
                    true
                } else {
                    self.feed.publish("pending", &entry.view);
                    false
                }
            }
            Reply::Result { send } => {
                let decision = match verdict {
                    Verdict::Pass => ResultDecision::Pass,
                    Verdict::Reject => ResultDecision::Reject { reason: reason.filter(|r| !r.trim().is_empty()) },
                    _ => return Err(DeskError::Mismatch(verdict)),
                };
                if send.take().is_none_or(|send| send.send(decision).is_err()) {
                    return Err(DeskError::Gone(id));
                }
                true
            }
        };
        if done {
            entries.remove(id);
            self.feed.publish("resolved", &serde_json::json!({ "id": id, "how": "decided" }));
        }
        Ok(())
    }

    /// An approver for calls arriving through `door` from `caller`.
    pub(super) fn approver(self: &Arc<Self>, door: &str, caller: &str) -> ConsoleApprover {
        let caller = match caller.char_indices().nth(MAX_CALLER_CHARS) {
            Some((cut, _)) => format!("{}…", &caller[..cut]),
            None => caller.to_owned(),
        };
        ConsoleApprover { desk: self.clone(), door: door.to_owned(), caller }
    }
}

/// Takes a request off the desk when its waiter goes away — answered,
/// timed out or cancelled — and tells the page why.
struct Withdrawal<'a> {
    desk: &'a Desk,
    id: u64,
}

impl Withdrawal<'_> {
    fn finish(self, how: &str) {
        if self.desk.entries().remove(self.id) {
            self.desk.feed.publish("resolved", &serde_json::json!({ "id": self.id, "how": how }));
        }
        std::mem::forget(self);
    }
}

impl Drop for Withdrawal<'_> {
    /// The waiting future was dropped: its call was cancelled.
    fn drop(&mut self) {
        if self.desk.entries().remove(self.id) {
            self.desk.feed.publish("resolved", &serde_json::json!({ "id": self.id, "how": "cancelled" }));
        }
    }
}

fn decision_name(decision: &CallDecision) -> &'static str {
    match decision {
        CallDecision::AllowOnce => "allow",
        CallDecision::AllowAlways => "always",
        CallDecision::Deny { .. } => "deny",
    }
}

/// Where an excerpt of `output` the page is shown ends.
fn excerpt_end(output: &str) -> usize {
    let mut end = output.len().min(RESULT_EXCERPT_BYTES);
    while !output.is_char_boundary(end) {
        end -= 1;
    }
    end
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Asks the person at the console, tagging each request with the door and
/// caller it came from. Cheap to clone; every clone uses the same desk.
#[derive(Clone)]
pub struct ConsoleApprover {
    desk: Arc<Desk>,
    door: String,
    caller: String,
}

impl ConsoleApprover {
    fn view(&self) -> Waiting {
        Waiting { id: 0, door: self.door.clone(), caller: self.caller.clone(), expires_at_ms: 0, calls: Vec::new(), result: None }
    }

    fn waited(&self) -> String {
        humantime::format_duration(self.desk.timeout).to_string()
    }
}

impl ConsoleApprover {
    /// Put `calls` on the desk and wait for every decision.
    pub(super) async fn ask_calls(&self, calls: Vec<WaitingCall>) -> Vec<Answer> {
        let count = calls.len();
        let mut view = self.view();
        view.calls = calls;
        let (send, answer) = oneshot::channel();
        let reply = Reply::Calls { decisions: vec![None; count], send: Some(send) };
        let answered = match self.desk.put(view, reply) {
            Ok(withdrawal) => self.desk.answer(withdrawal, answer).await,
            Err(refused) => Err(refused),
        };
        let (reason, by) = match answered {
            Ok(decisions) => return decisions.into_iter().map(|decision| Answer { decision, by: DecidedBy::Person }).collect(),
            Err(Unanswered::TimedOut) => {
                (format!("timed out waiting for approval at the console after {}", self.waited()), DecidedBy::TimedOut)
            }
            Err(Unanswered::Refused(why)) => (format!("not approved: {why}"), DecidedBy::NoAnswer),
        };
        vec![Answer { decision: CallDecision::Deny { reason: Some(reason) }, by }; count]
    }

    /// Put `result` on the desk and wait for the decision.
    pub(super) async fn ask_result(&self, result: WaitingResult) -> ResultAnswer {
        let mut view = self.view();
        view.result = Some(result);
        let (send, answer) = oneshot::channel();
        let answered = match self.desk.put(view, Reply::Result { send: Some(send) }) {
            Ok(withdrawal) => self.desk.answer(withdrawal, answer).await,
            Err(refused) => Err(refused),
        };
        let (reason, by) = match answered {
            Ok(decision) => return ResultAnswer::by_person(decision),
            Err(Unanswered::TimedOut) => (
                format!("timed out waiting for approval of the result at the console after {}", self.waited()),
                DecidedBy::TimedOut,
            ),
            Err(Unanswered::Refused(why)) => (format!("not approved: {why}"), DecidedBy::NoAnswer),
        };
        ResultAnswer { decision: ResultDecision::Reject { reason: Some(reason) }, by }
    }
}

impl WaitingCall {
    /// `call` as the desk shows it.
    pub(super) fn of(call: &PendingCall) -> Self {
        WaitingCall {
            id: call.id.clone(),
            agent: call.agent.clone(),
            plugin: call.plugin.clone(),
            tool: call.tool.clone(),
            level: call.permission,
            args: call.args.clone(),
            reason: call.reason.to_string(),
            can_remember: call.offers_always(),
            decided: None,
        }
    }
}

impl WaitingResult {
    /// `outcome` of `tool` as the desk shows it: an excerpt.
    pub(super) fn of(outcome: &ToolOutcome, tool: &ToolSpec) -> Self {
        let end = excerpt_end(&outcome.output);
        WaitingResult {
            id: outcome.id.clone(),
            plugin: tool.plugin.clone(),
            tool: tool.name.clone(),
            status: outcome.status,
            output: outcome.output[..end].to_owned(),
            cut: end < outcome.output.len(),
            total_bytes: outcome.output.len(),
        }
    }

    /// No more of the output than the desk shows, whoever cut it before.
    pub(super) fn excerpt(mut self) -> Self {
        let end = excerpt_end(&self.output);
        if end < self.output.len() {
            self.output.truncate(end);
            self.cut = true;
        }
        self
    }
}

#[async_trait::async_trait]
impl Approver for ConsoleApprover {
    async fn approve_calls(&self, calls: &[PendingCall]) -> Vec<CallDecision> {
        self.answer_calls(calls).await.into_iter().map(|answer| answer.decision).collect()
    }

    async fn answer_calls(&self, calls: &[PendingCall]) -> Vec<Answer> {
        self.ask_calls(calls.iter().map(WaitingCall::of).collect()).await
    }

    async fn approve_result(&self, outcome: &ToolOutcome, tool: &ToolSpec) -> ResultDecision {
        self.answer_result(outcome, tool).await.decision
    }

    async fn answer_result(&self, outcome: &ToolOutcome, tool: &ToolSpec) -> ResultAnswer {
        self.ask_result(WaitingResult::of(outcome, tool)).await
    }
}
