//! [`HostAction`]: something the host does itself at a caller's request,
//! not a plugin's tool (the VCP server's file requests), decided by the
//! same steps as a call of a tool: assessed under the same rules, asked of
//! the pipeline's approver, settled, audited.

use super::{CANCELLED_WAITING, FirstLook, Judged, Pipeline, Turn, TurnObserver};
use crate::approval::{Assessment, Settled};
use crate::manifest::ToolSpec;
use crate::outcome::{Status, ToolOutcome};
use serde_json::{Map, Value};
use std::time::Instant;

/// A host action, as approval judges it and the audit log records it.
pub(crate) struct HostAction<'a> {
    /// The request's id, as its caller gave it.
    pub(crate) id: &'a str,
    /// What it is approved as: its name, the plugin it is remembered and
    /// audited under, its level.
    pub(crate) spec: &'a ToolSpec,
    /// What a remembered "allow always" holds for, as a plugin's SHA-256
    /// does for its tools: another identity is asked about again.
    pub(crate) identity: &'a str,
    /// Its arguments, as the rules judge them.
    pub(crate) args: &'a Map<String, Value>,
}

#[cfg_attr(not(feature = "vcp"), expect(dead_code, reason = "only the VCP node's file requests are host actions"))]
impl Pipeline {
    /// Decide `action` in `turn` as a call is decided and do it if it may:
    /// `checked` is why its door refused it (a status and words for the
    /// caller) or, once it passed the door's checks, the doing of it, run
    /// only if approval lets it. A person is asked through this pipeline's
    /// approver, `observer` hearing it as for a call; a cancel of `turn`
    /// while they think ends it cancelled. Its outcome is audited (and the
    /// log flushed) before this returns: its result, or why it did not run
    /// or failed. It has one record, as it ends: no `decided` line before
    /// it starts, as a plugin's call has.
    pub(crate) async fn run_host_action<T>(
        &self,
        turn: &Turn,
        action: &HostAction<'_>,
        checked: Result<impl Future<Output = Result<T, String>>, (Status, String)>,
        observer: &dyn TurnObserver,
    ) -> Result<T, (Status, String)> {
        let start = Instant::now();
        // A path it names is resolved by the host itself, inside what its
        // door serves: no plugin's grants for the rules to judge it in.
        let judged = Judged { id: action.id, spec: action.spec, sha256: action.identity, args: action.args, dirs: &[] };
        let (done, decided) = match checked {
            Err(refused) => (Err(refused), None),
            Ok(doing) => match self.decide(turn, &judged, observer).await {
                None => (Err((Status::Cancelled, CANCELLED_WAITING.to_owned())), None),
                Some(settled) => {
                    let done = match &settled {
                        Settled::Run { .. } => doing.await.map_err(|why| (Status::Error, why)),
                        Settled::Deny { reason, .. } => Err((Status::Denied, reason.clone())),
                    };
                    (done, Some(Assessment::from(settled)))
                }
            },
        };
        let (status, said) = match &done {
            Ok(_) => (Status::Success, String::new()),
            Err((status, why)) => (*status, why.clone()),
        };
        let mut outcome = ToolOutcome::without_running(action.id, &action.spec.name, status, said);
        outcome.duration = start.elapsed();
        observer.finished(&outcome);
        if let Some(record) = self.audit_record(turn, Some(&action.spec.plugin), action.args, decided.as_ref(), &outcome) {
            self.approvals.audit(&record);
            self.approvals.flush_audit().await;
        }
        done
    }

    /// How approval of `call` ends: decided by the policy, or asked of the
    /// approver and settled; `None` when `turn` was cancelled while a
    /// person was asked.
    async fn decide(&self, turn: &Turn, call: &Judged<'_>, observer: &dyn TurnObserver) -> Option<Settled> {
        let question = match self.first_look(turn, call) {
            FirstLook::Decided(settled) => return Some(settled),
            FirstLook::Asks(question) => question,
        };
        let asked = std::slice::from_ref(&question);
        observer.awaiting_approval(asked);
        let answer = self.ask(turn, asked).await?.into_iter().next().expect("one answer per call asked");
        Some(self.settle(turn, call, &question, answer).await)
    }
}
