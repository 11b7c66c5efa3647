//! [`UnattendedApprover`]: approval where nobody can be asked — a VCP node
//! nobody watches, by `[vcp.unattended]`; an MCP client that cannot ask its
//! user, by `[mcp] unattended`.

use super::{Answer, Approver, AskReason, CallDecision, DecidedBy, DenyAll, PendingCall, ResultAnswer, ResultDecision};
use crate::manifest::ToolSpec;
use crate::outcome::ToolOutcome;
use crate::printable::printable;
use serde::Deserialize;

/// What becomes of a call that needs approval when no person is attached,
/// by the tool's level. Calls asked for by an `ask` rule or an agent's
/// `require_confirmation` want a person and are always denied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Unattended {
    /// Moderate tools. Default deny.
    pub moderate: UnattendedAction,
    /// Sensitive tools. Default deny.
    pub sensitive: UnattendedAction,
}

/// Run or refuse, for [`Unattended`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum UnattendedAction {
    /// Refuse, saying approval is needed.
    #[default]
    Deny,
    /// Run.
    Allow,
}

impl UnattendedAction {
    /// `deny` or `allow`, as in `toolhost.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            UnattendedAction::Deny => "deny",
            UnattendedAction::Allow => "allow",
        }
    }
}

/// Decides the calls that need approval when no person is attached to the
/// node, by the tool's level as `[vcp.unattended]` says (deny by default).
/// A call asked for by an `ask` rule or `require_confirmation` wants a
/// person and is denied. A result that needs approval is withheld: nobody
/// is there to see it, and the settings decide calls, never results. Every
/// denial says what needed approval, why, and which setting would let it
/// run.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnattendedApprover {
    policy: Unattended,
    door: Door,
}

/// Where nobody can be asked, which decides the words of a denial.
#[derive(Debug, Clone, Copy, Default)]
enum Door {
    /// A VCP node: `[vcp.unattended] LEVEL`.
    #[default]
    VcpNode,
    /// An MCP server: one `[mcp] unattended` for both levels.
    Mcp,
}

impl UnattendedApprover {
    /// Deciding by `policy`, on a VCP node.
    pub fn new(policy: Unattended) -> Self {
        UnattendedApprover { policy, door: Door::VcpNode }
    }

    /// Deciding by `[mcp] unattended = action`, for an MCP client that
    /// cannot ask its user.
    pub fn for_mcp(action: UnattendedAction) -> Self {
        UnattendedApprover { policy: Unattended { moderate: action, sensitive: action }, door: Door::Mcp }
    }

    /// The setting that decides `call` (its key and value, as in
    /// `toolhost.toml`); `None` when only a person could.
    fn setting(&self, call: &PendingCall) -> Option<(String, UnattendedAction)> {
        let (level, action) = match call.reason {
            AskReason::Moderate => ("moderate", self.policy.moderate),
            AskReason::Sensitive => ("sensitive", self.policy.sensitive),
            AskReason::RequireConfirmation | AskReason::Rule(_) => return None,
        };
        let key = match self.door {
            Door::VcpNode => format!("[vcp.unattended] {level}"),
            Door::Mcp => "[mcp] unattended".to_owned(),
        };
        Some((key, action))
    }

    fn answer(&self, call: &PendingCall) -> Answer {
        let (nobody, to_be_asked) = match self.door {
            Door::VcpNode => ("no person is attached to this node", "run the node from a terminal to be asked"),
            Door::Mcp => (
                "the MCP client cannot ask its user (it does not support elicitation, or the server is stateless)",
                "use a client that supports elicitation to be asked, or start the server with --console to approve \
                 its calls in a browser",
            ),
        };
        let needs = format!(
            "`{}` (plugin {}) needs approval because {}, and {nobody}",
            printable(&call.tool),
            printable(&call.plugin),
            call.reason
        );
        match self.setting(call) {
            Some((key, UnattendedAction::Allow)) => {
                Answer { decision: CallDecision::AllowOnce, by: DecidedBy::Rule(format!("{key} = \"allow\"")) }
            }
            Some((key, UnattendedAction::Deny)) => Answer {
                decision: CallDecision::Deny {
                    reason: Some(format!(
                        "{needs} ({key} = \"deny\"). To let such calls run unattended, set {key} = \"allow\" or add \
                         an [[approval.rules]] allow rule for agent \"{}\"; or {to_be_asked}.",
                        printable(&call.agent)
                    )),
                },
                by: DecidedBy::Rule(format!("{key} = \"deny\"")),
            },
            None => Answer {
                decision: CallDecision::Deny { reason: Some(format!("{needs} to give it; {to_be_asked}.")) },
                by: DecidedBy::DenyAll,
            },
        }
    }
}

#[async_trait::async_trait]
impl Approver for UnattendedApprover {
    async fn approve_calls(&self, calls: &[PendingCall]) -> Vec<CallDecision> {
        calls.iter().map(|call| self.answer(call).decision).collect()
    }

    async fn approve_result(&self, outcome: &ToolOutcome, tool: &ToolSpec) -> ResultDecision {
        self.answer_result(outcome, tool).await.decision
    }

    /// Nobody is there to see the result: it is withheld, on a node as by
    /// [`DenyAll`], and for MCP saying that `[mcp] unattended` decides calls,
    /// never results.
    async fn answer_result(&self, outcome: &ToolOutcome, tool: &ToolSpec) -> ResultAnswer {
        let Door::Mcp = self.door else { return DenyAll.answer_result(outcome, tool).await };
        let reason = format!(
            "`{}` (plugin {}) asks that a person see its result before it goes on, and nobody could: the MCP client \
             cannot ask its user (it does not support elicitation, or the server is stateless). [mcp] unattended \
             decides calls, never results; use a client that supports elicitation, or start the server with \
             --console to pass results in a browser.",
            printable(&tool.name),
            printable(&tool.plugin)
        );
        ResultAnswer { decision: ResultDecision::Reject { reason: Some(reason) }, by: DecidedBy::DenyAll }
    }

    async fn answer_calls(&self, calls: &[PendingCall]) -> Vec<Answer> {
        calls.iter().map(|call| self.answer(call)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Permission;

    fn pending(reason: AskReason) -> PendingCall {
        PendingCall {
            id: "r1".into(),
            agent: "vcp:127.0.0.1:6005".into(),
            plugin: "files".into(),
            tool: "read_file".into(),
            permission: Permission::Moderate,
            args: serde_json::Map::new(),
            reason,
        }
    }

    #[tokio::test]
    async fn levels_follow_the_policy_and_asks_for_a_person_are_denied() {
        let policy = Unattended { moderate: UnattendedAction::Allow, sensitive: UnattendedAction::Deny };
        let calls = [
            pending(AskReason::Moderate),
            pending(AskReason::Sensitive),
            pending(AskReason::Rule("approval.rules[0]: ask read_file".into())),
        ];
        let answers = UnattendedApprover::new(policy).answer_calls(&calls).await;
        assert_eq!(answers[0].decision, CallDecision::AllowOnce);
        assert_eq!(answers[0].by, DecidedBy::Rule("[vcp.unattended] moderate = \"allow\"".into()));
        let CallDecision::Deny { reason: Some(reason) } = &answers[1].decision else { panic!("{answers:?}") };
        assert_eq!(
            reason,
            "`read_file` (plugin files) needs approval because it is sensitive: every call is asked, and no person \
             is attached to this node ([vcp.unattended] sensitive = \"deny\"). To let such calls run unattended, set \
             [vcp.unattended] sensitive = \"allow\" or add an [[approval.rules]] allow rule for agent \
             \"vcp:127.0.0.1:6005\"; or run the node from a terminal to be asked."
        );
        assert!(matches!(answers[2].decision, CallDecision::Deny { .. }), "an ask rule wants a person");
        let by_default = UnattendedApprover::default().answer_calls(&calls[..1]).await;
        assert!(matches!(by_default[0].decision, CallDecision::Deny { .. }), "moderate is denied by default");
    }

    #[tokio::test]
    async fn results_are_withheld_unattended_saying_so_and_a_denial_names_the_console() {
        let mut spec = ToolSpec::new("secret", "vault", "");
        spec.result_approval = true;
        let outcome = ToolOutcome::without_running("r1", "secret", crate::Status::Success, "s3cret".into());
        for action in [UnattendedAction::Allow, UnattendedAction::Deny] {
            let answer = UnattendedApprover::for_mcp(action).answer_result(&outcome, &spec).await;
            let ResultDecision::Reject { reason: Some(reason) } = &answer.decision else { panic!("withheld: {answer:?}") };
            assert!(reason.contains("[mcp] unattended decides calls, never results") && reason.contains("--console"), "{reason}");
            assert!(!reason.contains("s3cret"), "{reason}");
            assert_eq!(answer.by, DecidedBy::DenyAll, "not a person");
        }
        let denying = UnattendedApprover::for_mcp(UnattendedAction::Deny);
        let answers = denying.answer_calls(&[pending(AskReason::Sensitive)]).await;
        let CallDecision::Deny { reason: Some(reason) } = &answers[0].decision else { panic!("{answers:?}") };
        assert!(reason.contains("--console"), "{reason}");
    }
}
