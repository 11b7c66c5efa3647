//! The approvers that decide by themselves: [`DenyAll`] when nobody is
//! attached, [`AllowAll`] for an explicit `--yes`.

use super::{Answer, Approver, CallDecision, DecidedBy, PendingCall, ResultAnswer, ResultDecision};
use crate::manifest::ToolSpec;
use crate::outcome::ToolOutcome;
use crate::printable::printable;

/// No person is attached (no terminal, no UI): every call that needs
/// approval is denied, with a message that says so and how to change it,
/// and every result that needs approval is rejected.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyAll;

/// An explicit "yes to everything" (`--yes`): every asked call runs once
/// (nothing is remembered) and every result passes. Deny rules are applied
/// before any approver is asked, so they still win.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl DenyAll {
    fn denial(call: &PendingCall) -> String {
        format!(
            "`{}` (plugin {}) needs approval because {}, and nobody could give it: no person is attached to \
             approve tool calls. Run with --yes to allow such calls, or from a terminal to be asked.",
            printable(&call.tool),
            printable(&call.plugin),
            call.reason
        )
    }
}

#[async_trait::async_trait]
impl Approver for DenyAll {
    async fn approve_calls(&self, calls: &[PendingCall]) -> Vec<CallDecision> {
        calls.iter().map(|call| CallDecision::Deny { reason: Some(Self::denial(call)) }).collect()
    }

    async fn approve_result(&self, outcome: &ToolOutcome, _tool: &ToolSpec) -> ResultDecision {
        let reason = format!(
            "the result of `{}` needs a person's approval before it is passed on, and nobody could give it: \
             no person is attached. Run from a terminal to be asked.",
            printable(&outcome.tool)
        );
        ResultDecision::Reject { reason: Some(reason) }
    }

    async fn answer_calls(&self, calls: &[PendingCall]) -> Vec<Answer> {
        by(DecidedBy::DenyAll, self.approve_calls(calls).await)
    }

    async fn answer_result(&self, outcome: &ToolOutcome, tool: &ToolSpec) -> ResultAnswer {
        ResultAnswer { decision: self.approve_result(outcome, tool).await, by: DecidedBy::DenyAll }
    }
}

#[async_trait::async_trait]
impl Approver for AllowAll {
    async fn approve_calls(&self, calls: &[PendingCall]) -> Vec<CallDecision> {
        vec![CallDecision::AllowOnce; calls.len()]
    }

    async fn approve_result(&self, _outcome: &ToolOutcome, _tool: &ToolSpec) -> ResultDecision {
        ResultDecision::Pass
    }

    async fn answer_calls(&self, calls: &[PendingCall]) -> Vec<Answer> {
        by(DecidedBy::AllowAll, self.approve_calls(calls).await)
    }

    async fn answer_result(&self, outcome: &ToolOutcome, tool: &ToolSpec) -> ResultAnswer {
        ResultAnswer { decision: self.approve_result(outcome, tool).await, by: DecidedBy::AllowAll }
    }
}

/// `decisions`, each made by `by`.
pub(super) fn by(by: DecidedBy, decisions: Vec<CallDecision>) -> Vec<Answer> {
    decisions.into_iter().map(|decision| Answer { decision, by: by.clone() }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::AskReason;
    use crate::manifest::Permission;
    use crate::outcome::Status;

    fn pending(reason: AskReason) -> PendingCall {
        PendingCall {
            id: "c1".into(),
            agent: "coder".into(),
            plugin: "files".into(),
            tool: "write_file".into(),
            permission: Permission::Sensitive,
            args: serde_json::Map::new(),
            reason,
        }
    }

    #[tokio::test]
    async fn deny_all_says_what_needed_approval_why_and_how_to_give_it() {
        let answers = DenyAll.answer_calls(&[pending(AskReason::Sensitive)]).await;
        let [Answer { decision: CallDecision::Deny { reason: Some(reason) }, by: DecidedBy::DenyAll }] = &answers[..] else {
            panic!("{answers:?}")
        };
        assert_eq!(
            reason,
            "`write_file` (plugin files) needs approval because it is sensitive: every call is asked, and nobody \
             could give it: no person is attached to approve tool calls. Run with --yes to allow such calls, or \
             from a terminal to be asked."
        );
        let outcome = ToolOutcome::without_running("c1", "read_file", Status::Success, "secret".into());
        let tool = ToolSpec::new("read_file", "files", "reads");
        let ResultDecision::Reject { reason: Some(reason) } = DenyAll.approve_result(&outcome, &tool).await else {
            panic!("deny-all rejects results")
        };
        assert!(reason.contains("the result of `read_file` needs a person's approval"), "{reason}");
    }

    #[tokio::test]
    async fn allow_all_allows_once_and_passes_results() {
        let calls = [pending(AskReason::Moderate), pending(AskReason::RequireConfirmation)];
        let answers = AllowAll.answer_calls(&calls).await;
        assert_eq!(answers, vec![Answer { decision: CallDecision::AllowOnce, by: DecidedBy::AllowAll }; 2]);
        let outcome = ToolOutcome::without_running("c1", "read_file", Status::Success, "x".into());
        assert_eq!(AllowAll.approve_result(&outcome, &ToolSpec::new("read_file", "files", "")).await, ResultDecision::Pass);
    }
}
