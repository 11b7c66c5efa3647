//! [`Approvals`]: the rules, the remembered decisions and the audit log
//! together, deciding which calls run, which are asked and which are
//! denied.

use super::assessment::{Assessment, Settled};
use super::audit::{AuditLog, AuditRecord};
use super::memory::{ApprovalMemory, MemoryError};
use super::opened_path::CallArguments;
use super::resume::ResumeSeal;
use super::rules::{ApprovalConfig, Rule, RuleAction};
use super::{Answer, Approver, AskReason, CallDecision, DecidedBy, PendingCall};
use crate::manifest::{Permission, ToolSpec};
use crate::sandbox::DirGrant;
use serde_json::{Map, Value};
use std::path::Path;
use std::sync::Arc;

/// The approval policy at work: `[approval]` rules, the remembered
/// decisions and the audit log. Shared by every turn (`&self` throughout).
#[derive(Debug)]
pub struct Approvals {
    rules: Vec<Rule>,
    memory: Arc<ApprovalMemory>,
    audit: Option<AuditLog>,
    resume: Arc<ResumeSeal>,
}

impl Approvals {
    /// The policy `config` describes, its memory file read now. A memory
    /// file that cannot be trusted is read as empty; see
    /// [`take_warnings`](Self::take_warnings).
    pub fn new(config: &ApprovalConfig) -> Self {
        Approvals {
            rules: config.rules.clone(),
            memory: Arc::new(ApprovalMemory::open(&config.memory_file)),
            audit: config.audit_log.clone().map(AuditLog::new),
            resume: Arc::new(ResumeSeal::new(config.key_file.clone(), &config.memory_file)),
        }
    }

    /// What seals paused turns into resume tokens and opens them, once.
    pub(crate) fn resume_seal(&self) -> &Arc<ResumeSeal> {
        &self.resume
    }

    /// The remembered decisions.
    pub fn memory(&self) -> &ApprovalMemory {
        &self.memory
    }

    /// What becomes of a call of `tool` by `agent` with the checked `args`,
    /// its plugin's component having `plugin_sha256` and the directories
    /// `dirs` (where the rules judge path arguments; see [`Rule`]):
    ///
    /// 1. a path a rule judges that leaves its directory denies, and so
    ///    does a matching deny rule (even with `require_confirmation`);
    /// 2. a matching ask rule asks;
    /// 3. `require_confirmation` asks, whatever allow rules say;
    /// 4. a matching allow rule runs it (a sensitive tool too);
    /// 5. otherwise its level: public runs, moderate asks unless "allow
    ///    always" is remembered for this agent, plugin, tool and SHA-256,
    ///    sensitive asks.
    pub fn assess(
        &self,
        agent: &str,
        require_confirmation: bool,
        plugin_sha256: &str,
        tool: &ToolSpec,
        args: &Map<String, Value>,
        dirs: &[DirGrant],
    ) -> Assessment {
        let args = CallArguments::new(args, dirs);
        let first = |action| {
            self.rules
                .iter()
                .enumerate()
                .find(|(_, rule)| rule.action() == action && rule.matches_call(agent, &tool.plugin, &tool.name, &args))
                .map(|(i, rule)| (describe(i, rule), rule))
        };
        let applicable = self.rules.iter().enumerate().filter(|(_, rule)| rule.applies_to(agent, &tool.plugin, &tool.name));
        if let Some((which, why)) = applicable.filter_map(|(i, rule)| Some((describe(i, rule), rule.escape(&args)?))).next() {
            let reason = format!("{why}, so {which} cannot judge where it ends");
            return Assessment::Deny { by: DecidedBy::Rule(which), reason };
        }
        if let Some((which, rule)) = first(RuleAction::Deny) {
            let reason = rule.reason().map_or_else(|| format!("denied by {which}"), str::to_owned);
            return Assessment::Deny { by: DecidedBy::Rule(which), reason };
        }
        if let Some((which, rule)) = first(RuleAction::Ask) {
            return Assessment::Ask(AskReason::Rule(match rule.reason() {
                Some(reason) => format!("{which} ({reason})"),
                None => which,
            }));
        }
        if require_confirmation {
            return Assessment::Ask(AskReason::RequireConfirmation);
        }
        if let Some((which, _)) = first(RuleAction::Allow) {
            return Assessment::Run { by: DecidedBy::Rule(which) };
        }
        match tool.permission {
            Permission::Public => Assessment::Run { by: DecidedBy::Level },
            Permission::Moderate if self.memory.contains(agent, &tool.plugin, &tool.name, plugin_sha256) => {
                Assessment::Run { by: DecidedBy::Remembered }
            }
            Permission::Moderate => Assessment::Ask(AskReason::Moderate),
            Permission::Sensitive => Assessment::Ask(AskReason::Sensitive),
        }
    }

    /// Whether a call of `tool` by `agent` may be put to a person, as
    /// [`assess`](Self::assess) decides for some arguments: an ask rule
    /// for it, `require_confirmation`, or a level above public that no
    /// allow rule for every call of it covers. Remembered decisions are not
    /// counted: they may be revoked.
    pub fn may_ask(&self, agent: &str, require_confirmation: bool, tool: &ToolSpec) -> bool {
        let rule =
            |action| self.rules.iter().any(|rule| rule.action() == action && rule.applies_to(agent, &tool.plugin, &tool.name));
        let always = |action| {
            let any_args = Map::new();
            self.rules.iter().any(|rule| rule.action() == action && rule.matches(agent, &tool.plugin, &tool.name, &any_args))
        };
        if always(RuleAction::Deny) {
            return false;
        }
        rule(RuleAction::Ask) || require_confirmation || (tool.permission != Permission::Public && !always(RuleAction::Allow))
    }

    /// Ask `approver` about `calls` (one batch, so a person can answer all
    /// at once): one answer per call, in order. An approver that answers
    /// too few calls is taken to deny the rest.
    pub async fn ask(&self, approver: &dyn Approver, calls: &[PendingCall]) -> Vec<Answer> {
        if calls.is_empty() {
            return Vec::new();
        }
        let mut answers = approver.answer_calls(calls).await;
        if answers.len() != calls.len() {
            tracing::warn!("the approver answered {} of {} calls; the rest are denied", answers.len(), calls.len());
            answers.truncate(calls.len());
            answers.resize_with(calls.len(), || Answer {
                decision: CallDecision::Deny { reason: Some("the approver gave no decision for this call".into()) },
                by: DecidedBy::NoAnswer,
            });
        }
        answers
    }

    /// What `answer` makes of `call`, whose plugin's component has
    /// `plugin_sha256`: run or deny ([`Settled`]). "Allow always" where the
    /// question offered it ([`PendingCall::offers_always`]) is remembered
    /// (a failure to write it is logged; the call still runs); where it did
    /// not, the answer chose what nobody was asked and the call is denied,
    /// nothing remembered. An adapter's "always" (`--yes`) counts as once.
    /// A denial without words gets some.
    pub async fn settle(&self, call: &PendingCall, plugin_sha256: &str, answer: Answer) -> Settled {
        match answer.decision {
            CallDecision::AllowAlways if call.offers_always() => {
                if let Err(e) = self.remember(&call.agent, &call.plugin, &call.tool, plugin_sha256).await {
                    tracing::warn!("{e}");
                }
                Settled::Run { by: answer.by }
            }
            CallDecision::AllowAlways if answer.by == DecidedBy::Person => Settled::Deny {
                by: answer.by,
                reason: format!(
                    "the answer chose \"allow always\", which the question did not offer ({} is asked every call: {})",
                    call.tool, call.reason
                ),
            },
            CallDecision::AllowOnce | CallDecision::AllowAlways => Settled::Run { by: answer.by },
            CallDecision::Deny { reason } => {
                Settled::Deny { reason: reason.unwrap_or_else(|| DENIED_WITHOUT_REASON.to_owned()), by: answer.by }
            }
        }
    }

    /// Remember "allow always" for `tool` of `plugin` at `plugin_sha256`,
    /// for `agent`. The file is written on a blocking thread.
    ///
    /// # Errors
    ///
    /// A [`MemoryError`] when the memory file cannot be read, is not trusted,
    /// or the change cannot be written.
    pub async fn remember(&self, agent: &str, plugin: &str, tool: &str, plugin_sha256: &str) -> Result<(), MemoryError> {
        let memory = Arc::clone(&self.memory);
        let key = [agent, plugin, tool, plugin_sha256].map(str::to_owned);
        let write = move || memory.remember(&key[0], &key[1], &key[2], &key[3]);
        match tokio::task::spawn_blocking(write).await {
            Ok(result) => result,
            Err(join) => std::panic::resume_unwind(join.into_panic()),
        }
    }

    /// Whether records are written at all: without an audit log, callers
    /// need not build them.
    pub fn audits(&self) -> bool {
        self.audit.is_some()
    }

    /// Hand `record` over to the audit log, if there is one, to be
    /// written on the log's own thread. A failure is logged, never
    /// returned: auditing does not stop calls.
    pub fn audit(&self, record: &AuditRecord) {
        if let Some(log) = &self.audit {
            log.append(record);
        }
    }

    /// The audit log's file (`[approval] audit_log`), if there is one.
    pub fn audit_log(&self) -> Option<&Path> {
        self.audit.as_ref().map(AuditLog::path)
    }

    /// Wait until every record handed to [`audit`](Self::audit) is
    /// written: a turn does this before it reports its result.
    pub async fn flush_audit(&self) {
        if let Some(log) = &self.audit {
            log.flush().await;
        }
    }

    /// Problems met reading the memory file since the last call, for the
    /// caller to show; each was also logged.
    pub fn take_warnings(&self) -> Vec<MemoryError> {
        self.memory.take_warnings()
    }
}

/// What the model reads when a call is denied without a reason.
const DENIED_WITHOUT_REASON: &str = "the call was not approved (no reason was given)";

/// How a rule is named in decisions and the audit log:
/// `approval.rules[0]: deny write_file where path = "secrets/**"`.
fn describe(index: usize, rule: &Rule) -> String {
    format!("approval.rules[{index}]: {rule}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::{AllowAll, DenyAll};
    use serde_json::json;

    const SHA: &str = "1111";

    struct Setup {
        _dir: tempfile::TempDir,
        approvals: Approvals,
    }

    fn with_rules(rules: Vec<Rule>) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let config = ApprovalConfig {
            memory_file: dir.path().join("approvals.json"),
            audit_log: Some(dir.path().join("audit.jsonl")),
            rules,
            key_file: Some(dir.path().join("host.key")),
        };
        Setup { approvals: Approvals::new(&config), _dir: dir }
    }

    fn rule(action: RuleAction, tool: &str) -> Rule {
        Rule::new(action, tool, None, None, [], None).unwrap()
    }

    fn tool(name: &str, permission: Permission) -> ToolSpec {
        ToolSpec { permission, ..ToolSpec::new(name, "files", "a tool") }
    }

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn assess(setup: &Setup, tool: &ToolSpec, args: &Map<String, Value>) -> Assessment {
        setup.approvals.assess("coder", false, SHA, tool, args, &[])
    }

    fn by_rule(index: usize, text: &str) -> DecidedBy {
        DecidedBy::Rule(format!("approval.rules[{index}]: {text}"))
    }

    #[test]
    fn without_rules_the_level_decides() {
        let setup = with_rules(Vec::new());
        let none = Map::new();
        assert_eq!(assess(&setup, &tool("calculate", Permission::Public), &none), Assessment::Run { by: DecidedBy::Level });
        assert_eq!(assess(&setup, &tool("read_file", Permission::Moderate), &none), Assessment::Ask(AskReason::Moderate));
        assert_eq!(assess(&setup, &tool("write_file", Permission::Sensitive), &none), Assessment::Ask(AskReason::Sensitive));
    }

    #[test]
    fn deny_beats_allow_whatever_the_order() {
        let mut deny = Rule::new(RuleAction::Deny, "write_*", None, None, [], Some("writes are off today".into())).unwrap();
        let setup = with_rules(vec![rule(RuleAction::Allow, "write_file"), deny.clone()]);
        let write = tool("write_file", Permission::Sensitive);
        let expected = Assessment::Deny { by: by_rule(1, "deny write_*"), reason: "writes are off today".into() };
        assert_eq!(assess(&setup, &write, &Map::new()), expected);
        assert_eq!(
            setup.approvals.assess("coder", true, SHA, &write, &Map::new(), &[]),
            expected,
            "deny rules win over require_confirmation too"
        );
        deny = rule(RuleAction::Deny, "write_file");
        let setup = with_rules(vec![deny]);
        assert_eq!(
            assess(&setup, &write, &Map::new()),
            Assessment::Deny { by: by_rule(0, "deny write_file"), reason: "denied by approval.rules[0]: deny write_file".into() }
        );
    }

    #[test]
    fn an_ask_rule_makes_a_public_tool_ask_and_beats_allow() {
        let ask = Rule::new(RuleAction::Ask, "calc*", None, None, [], Some("costly".into())).unwrap();
        let setup = with_rules(vec![rule(RuleAction::Allow, "*"), ask]);
        assert_eq!(
            assess(&setup, &tool("calculate", Permission::Public), &Map::new()),
            Assessment::Ask(AskReason::Rule("approval.rules[1]: ask calc* (costly)".into()))
        );
    }

    #[test]
    fn an_allow_rule_makes_a_sensitive_tool_run() {
        let setup = with_rules(vec![rule(RuleAction::Allow, "write_file")]);
        assert_eq!(
            assess(&setup, &tool("write_file", Permission::Sensitive), &Map::new()),
            Assessment::Run { by: by_rule(0, "allow write_file") }
        );
        assert_eq!(
            assess(&setup, &tool("delete_file", Permission::Sensitive), &Map::new()),
            Assessment::Ask(AskReason::Sensitive)
        );
    }

    #[test]
    fn an_argument_pattern_allows_one_path_and_asks_for_another() {
        let notes = Rule::new(RuleAction::Allow, "write_file", None, None, [("path".into(), "notes/**".into())], None).unwrap();
        let setup = with_rules(vec![notes]);
        let write = tool("write_file", Permission::Sensitive);
        assert_eq!(
            assess(&setup, &write, &args(json!({ "path": "notes/today.md", "content": "x" }))),
            Assessment::Run { by: by_rule(0, r#"allow write_file where path = "notes/**""#) }
        );
        for path in ["src/main.rs", "notes/../src/main.rs"] {
            assert_eq!(assess(&setup, &write, &args(json!({ "path": path }))), Assessment::Ask(AskReason::Sensitive), "{path}");
        }
    }

    #[test]
    fn an_agent_narrowed_rule_applies_to_that_agent_only() {
        let coder = Rule::new(RuleAction::Allow, "write_file", None, Some("coder".into()), [], None).unwrap();
        let setup = with_rules(vec![coder]);
        let write = tool("write_file", Permission::Sensitive);
        assert!(matches!(setup.approvals.assess("coder", false, SHA, &write, &Map::new(), &[]), Assessment::Run { .. }));
        assert_eq!(setup.approvals.assess("writer", false, SHA, &write, &Map::new(), &[]), Assessment::Ask(AskReason::Sensitive));
    }

    #[tokio::test]
    async fn require_confirmation_asks_for_public_tools_and_past_allow_rules_and_memory() {
        let setup = with_rules(vec![rule(RuleAction::Allow, "write_file")]);
        let approvals = &setup.approvals;
        let ask = Assessment::Ask(AskReason::RequireConfirmation);
        assert_eq!(approvals.assess("coder", true, SHA, &tool("calculate", Permission::Public), &Map::new(), &[]), ask);
        assert_eq!(approvals.assess("coder", true, SHA, &tool("write_file", Permission::Sensitive), &Map::new(), &[]), ask);
        let read = tool("read_file", Permission::Moderate);
        approvals.remember("coder", "files", "read_file", SHA).await.unwrap();
        assert_eq!(approvals.assess("coder", true, SHA, &read, &Map::new(), &[]), ask);
        assert_eq!(approvals.assess("coder", false, SHA, &read, &Map::new(), &[]), Assessment::Run { by: DecidedBy::Remembered });
    }

    #[tokio::test]
    async fn allow_always_on_a_moderate_tool_is_remembered_until_the_plugin_changes() {
        let setup = with_rules(Vec::new());
        let read = tool("read_file", Permission::Moderate);
        let Assessment::Ask(reason) = assess(&setup, &read, &Map::new()) else { panic!("moderate asks") };
        let call = pending(&read, reason);
        let always = Answer { decision: CallDecision::AllowAlways, by: DecidedBy::Person };
        assert_eq!(setup.approvals.settle(&call, SHA, always.clone()).await, Settled::Run { by: DecidedBy::Person });
        assert_eq!(assess(&setup, &read, &Map::new()), Assessment::Run { by: DecidedBy::Remembered });
        assert_eq!(
            setup.approvals.assess("coder", false, "2222", &read, &Map::new(), &[]),
            Assessment::Ask(AskReason::Moderate),
            "a changed plugin asks again"
        );
        assert_eq!(
            setup.approvals.assess("writer", false, SHA, &read, &Map::new(), &[]),
            Assessment::Ask(AskReason::Moderate),
            "remembered per agent"
        );
        let reopened = Approvals::new(&ApprovalConfig {
            memory_file: setup.approvals.memory().path().to_owned(),
            audit_log: None,
            rules: Vec::new(),
            key_file: None,
        });
        assert_eq!(reopened.assess("coder", false, SHA, &read, &Map::new(), &[]), Assessment::Run { by: DecidedBy::Remembered });

        let write = tool("write_file", Permission::Sensitive);
        let call = pending(&write, AskReason::Sensitive);
        let Settled::Deny { by: DecidedBy::Person, reason } = setup.approvals.settle(&call, SHA, always.clone()).await else {
            panic!("\"always\" was not offered for a sensitive tool")
        };
        assert!(reason.contains("did not offer"), "{reason}");
        assert_eq!(assess(&setup, &write, &Map::new()), Assessment::Ask(AskReason::Sensitive), "nothing remembered");
        let by_adapter = Answer { decision: CallDecision::AllowAlways, by: DecidedBy::AllowAll };
        assert_eq!(setup.approvals.settle(&call, SHA, by_adapter).await, Settled::Run { by: DecidedBy::AllowAll });
    }

    #[tokio::test]
    async fn always_is_refused_where_an_ask_rule_asked_and_nothing_is_remembered() {
        // An ask rule narrowed to some arguments of a moderate tool: its
        // question offers no "always"; remembering one would let every
        // other call of the tool run unasked.
        let notes = Rule::new(RuleAction::Ask, "read_file", None, None, [("path".into(), "secrets/**".into())], None).unwrap();
        let setup = with_rules(vec![notes]);
        let read = tool("read_file", Permission::Moderate);
        let secret = args(json!({ "path": "secrets/key" }));
        let Assessment::Ask(reason) = assess(&setup, &read, &secret) else { panic!("the rule asks") };
        let call = pending(&read, reason);
        assert!(!call.offers_always());
        let always = Answer { decision: CallDecision::AllowAlways, by: DecidedBy::Person };
        assert!(matches!(setup.approvals.settle(&call, SHA, always).await, Settled::Deny { .. }));
        assert_eq!(
            assess(&setup, &read, &args(json!({ "path": "notes/a" }))),
            Assessment::Ask(AskReason::Moderate),
            "the tool's other calls still ask"
        );
    }

    #[tokio::test]
    async fn a_corrupt_memory_file_is_reported_and_grants_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let memory_file = dir.path().join("approvals.json");
        std::fs::write(&memory_file, "{\"version\": 1, \"allowed\": [{\"agent\": \"coder\"").unwrap();
        let approvals = Approvals::new(&ApprovalConfig { memory_file, audit_log: None, rules: Vec::new(), key_file: None });
        let warnings = approvals.take_warnings();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].to_string().contains("corrupt"), "{}", warnings[0]);
        let read = tool("read_file", Permission::Moderate);
        assert_eq!(approvals.assess("coder", false, SHA, &read, &Map::new(), &[]), Assessment::Ask(AskReason::Moderate));
    }

    #[tokio::test]
    async fn answers_are_one_per_call_and_denials_carry_words() {
        struct Silent;
        #[async_trait::async_trait]
        impl Approver for Silent {
            async fn approve_calls(&self, _: &[PendingCall]) -> Vec<CallDecision> {
                vec![CallDecision::Deny { reason: None }]
            }
            async fn approve_result(&self, _: &crate::ToolOutcome, _: &ToolSpec) -> super::super::ResultDecision {
                super::super::ResultDecision::Pass
            }
        }
        let setup = with_rules(Vec::new());
        let write = tool("write_file", Permission::Sensitive);
        let calls = [pending(&write, AskReason::Sensitive), pending(&write, AskReason::Sensitive)];
        let answers = setup.approvals.ask(&Silent, &calls).await;
        assert_eq!(answers.len(), 2);
        assert_eq!(answers[1].by, DecidedBy::NoAnswer);
        assert_eq!(
            setup.approvals.settle(&calls[0], SHA, answers[0].clone()).await,
            Settled::Deny { by: DecidedBy::Person, reason: DENIED_WITHOUT_REASON.into() }
        );
        let allowed = setup.approvals.ask(&AllowAll, &calls).await;
        assert!(allowed.iter().all(|a| a.by == DecidedBy::AllowAll && a.decision == CallDecision::AllowOnce));
        let denied = setup.approvals.ask(&DenyAll, &calls).await;
        assert!(denied.iter().all(|a| a.by == DecidedBy::DenyAll));
    }

    fn pending(tool: &ToolSpec, reason: AskReason) -> PendingCall {
        PendingCall {
            id: "c1".into(),
            agent: "coder".into(),
            plugin: tool.plugin.clone(),
            tool: tool.name.clone(),
            permission: tool.permission,
            args: Map::new(),
            reason,
        }
    }
}
