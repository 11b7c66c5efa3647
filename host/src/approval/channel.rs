//! [`ChannelApprover`]: approval by whatever reads a channel — a UI, an
//! embedding program — with a timeout after which the call is denied and
//! the model is told it timed out waiting for approval.

use super::adapters::by;
use super::{Answer, Approver, CallDecision, DecidedBy, PendingCall, ResultAnswer, ResultDecision};
use crate::manifest::ToolSpec;
use crate::outcome::ToolOutcome;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// Requests waiting to be read before senders wait for room; more than a
/// few means nobody is reading, which the timeout then reports.
const QUEUED_REQUESTS: usize = 8;

/// What a [`ChannelApprover`] asks; answer with `reply`.
#[derive(Debug)]
#[non_exhaustive]
pub enum ApprovalRequest {
    /// Decide these calls: one decision each, in order.
    Calls {
        /// The calls.
        calls: Vec<PendingCall>,
        /// Where the decisions go.
        reply: Reply<Vec<CallDecision>>,
    },
    /// Pass or reject this result.
    Result {
        /// The result.
        outcome: ToolOutcome,
        /// The tool it came from (boxed: the variants stay small).
        tool: Box<ToolSpec>,
        /// Where the decision goes.
        reply: Reply<ResultDecision>,
    },
}

/// Where the answer to one [`ApprovalRequest`] goes.
#[derive(Debug)]
pub struct Reply<T> {
    sender: oneshot::Sender<T>,
}

impl<T> Reply<T> {
    /// Answer the request.
    ///
    /// # Errors
    ///
    /// The answer, given back, when nobody waits for it any more: the
    /// approver timed out, or the turn that asked was cancelled.
    pub fn send(self, answer: T) -> Result<(), T> {
        self.sender.send(answer)
    }

    /// Whether nobody waits for the answer any more.
    pub fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }
}

/// The requests a [`ChannelApprover`] sends, in the order they are asked.
#[derive(Debug)]
pub struct ApprovalRequests {
    receiver: mpsc::Receiver<ApprovalRequest>,
}

impl ApprovalRequests {
    /// The next request; `None` once every approver sending here is gone.
    pub async fn recv(&mut self) -> Option<ApprovalRequest> {
        self.receiver.recv().await
    }
}

/// Sends each batch of pending calls, and each result that needs approval,
/// as an [`ApprovalRequest`] on a channel, and waits for the reply up to a
/// timeout. On timeout every call is denied (decided by
/// [`DecidedBy::TimedOut`]) and every result rejected, with a reason that
/// says approval timed out; if the receiver is gone, with one that says
/// nobody is listening.
#[derive(Debug, Clone)]
pub struct ChannelApprover {
    requests: mpsc::Sender<ApprovalRequest>,
    timeout: Duration,
}

impl ChannelApprover {
    /// An approver that waits up to `timeout` for each answer, and the
    /// receiver its requests arrive on.
    pub fn new(timeout: Duration) -> (Self, ApprovalRequests) {
        let (requests, receiver) = mpsc::channel(QUEUED_REQUESTS);
        (ChannelApprover { requests, timeout }, ApprovalRequests { receiver })
    }

    /// Send the request `make` builds around a reply sender, and wait for
    /// the reply.
    async fn request<T>(&self, make: impl FnOnce(Reply<T>) -> ApprovalRequest) -> Result<T, Unanswered> {
        let (sender, answer) = oneshot::channel();
        let asked = async {
            self.requests.send(make(Reply { sender })).await.map_err(|_| Unanswered::Closed)?;
            answer.await.map_err(|_| Unanswered::Closed)
        };
        tokio::time::timeout(self.timeout, asked).await.unwrap_or(Err(Unanswered::TimedOut))
    }

    fn waited(&self) -> humantime::FormattedDuration {
        humantime::format_duration(self.timeout)
    }
}

/// Why a request got no reply.
enum Unanswered {
    TimedOut,
    /// The receiver, or the reply sender, was dropped.
    Closed,
}

/// What the model reads when nobody is there to answer.
const CLOSED: &str = "nobody is listening for approvals (the approval channel is closed)";

#[async_trait::async_trait]
impl Approver for ChannelApprover {
    async fn approve_calls(&self, calls: &[PendingCall]) -> Vec<CallDecision> {
        self.answer_calls(calls).await.into_iter().map(|answer| answer.decision).collect()
    }

    async fn approve_result(&self, outcome: &ToolOutcome, tool: &ToolSpec) -> ResultDecision {
        self.answer_result(outcome, tool).await.decision
    }

    async fn answer_result(&self, outcome: &ToolOutcome, tool: &ToolSpec) -> ResultAnswer {
        let request = |reply| ApprovalRequest::Result { outcome: outcome.clone(), tool: Box::new(tool.clone()), reply };
        let (by, reason) = match self.request(request).await {
            Ok(decision) => return ResultAnswer::by_person(decision),
            Err(Unanswered::TimedOut) => {
                (DecidedBy::TimedOut, format!("timed out waiting for approval of the result after {}", self.waited()))
            }
            Err(Unanswered::Closed) => (DecidedBy::NoAnswer, CLOSED.to_owned()),
        };
        ResultAnswer { decision: ResultDecision::Reject { reason: Some(reason) }, by }
    }

    async fn answer_calls(&self, calls: &[PendingCall]) -> Vec<Answer> {
        let (who, reason) = match self.request(|reply| ApprovalRequest::Calls { calls: calls.to_vec(), reply }).await {
            Ok(decisions) => return by(DecidedBy::Person, decisions),
            Err(Unanswered::TimedOut) => (DecidedBy::TimedOut, format!("timed out waiting for approval after {}", self.waited())),
            Err(Unanswered::Closed) => (DecidedBy::NoAnswer, CLOSED.to_owned()),
        };
        by(who, vec![CallDecision::Deny { reason: Some(reason) }; calls.len()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::AskReason;
    use crate::manifest::Permission;
    use crate::outcome::Status;

    fn pending(id: &str) -> PendingCall {
        PendingCall {
            id: id.into(),
            agent: "coder".into(),
            plugin: "files".into(),
            tool: "read_file".into(),
            permission: Permission::Moderate,
            args: serde_json::Map::new(),
            reason: AskReason::Moderate,
        }
    }

    #[tokio::test]
    async fn a_ui_answers_a_batch_and_a_result() {
        let (approver, mut requests) = ChannelApprover::new(Duration::from_secs(5));
        let ui = tokio::spawn(async move {
            let Some(ApprovalRequest::Calls { calls, reply }) = requests.recv().await else { panic!("calls first") };
            assert_eq!(calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["a", "b"]);
            reply.send(vec![CallDecision::AllowAlways, CallDecision::Deny { reason: Some("not b".into()) }]).unwrap();
            let Some(ApprovalRequest::Result { outcome, reply, .. }) = requests.recv().await else { panic!("a result") };
            assert_eq!(outcome.output, "the text");
            reply.send(ResultDecision::Reject { reason: Some("private".into()) }).unwrap();
        });
        let answers = approver.answer_calls(&[pending("a"), pending("b")]).await;
        assert_eq!(
            answers,
            [
                Answer { decision: CallDecision::AllowAlways, by: DecidedBy::Person },
                Answer { decision: CallDecision::Deny { reason: Some("not b".into()) }, by: DecidedBy::Person },
            ]
        );
        let outcome = ToolOutcome::without_running("a", "read_file", Status::Success, "the text".into());
        let decision = approver.approve_result(&outcome, &ToolSpec::new("read_file", "files", "")).await;
        assert_eq!(decision, ResultDecision::Reject { reason: Some("private".into()) });
        ui.await.unwrap();
    }

    #[tokio::test]
    async fn nobody_answering_in_time_denies_and_says_it_timed_out() {
        let (approver, mut requests) = ChannelApprover::new(Duration::from_millis(50));
        // The UI reads the request but never answers.
        let ui = tokio::spawn(async move {
            let held = requests.recv().await;
            tokio::time::sleep(Duration::from_millis(500)).await;
            drop(held);
        });
        let started = std::time::Instant::now();
        let answers = approver.answer_calls(&[pending("a"), pending("b")]).await;
        assert!(started.elapsed() < Duration::from_millis(400), "{:?}", started.elapsed());
        let timed_out = CallDecision::Deny { reason: Some("timed out waiting for approval after 50ms".into()) };
        assert_eq!(answers, vec![Answer { decision: timed_out, by: DecidedBy::TimedOut }; 2]);
        ui.abort();
    }

    #[tokio::test]
    async fn a_result_nobody_passes_in_time_is_rejected_as_timed_out() {
        let (approver, _requests) = ChannelApprover::new(Duration::from_millis(20));
        let outcome = ToolOutcome::without_running("a", "read_file", Status::Success, "x".into());
        let decision = approver.approve_result(&outcome, &ToolSpec::new("read_file", "files", "")).await;
        let reason = "timed out waiting for approval of the result after 20ms";
        assert_eq!(decision, ResultDecision::Reject { reason: Some(reason.into()) });
    }

    #[tokio::test]
    async fn a_closed_channel_denies_without_waiting() {
        let (approver, requests) = ChannelApprover::new(Duration::from_secs(60));
        drop(requests);
        let answers = approver.answer_calls(&[pending("a")]).await;
        assert_eq!(answers[0].by, DecidedBy::NoAnswer);
        assert!(matches!(&answers[0].decision, CallDecision::Deny { reason: Some(r) } if r.contains("nobody is listening")));
    }
}
