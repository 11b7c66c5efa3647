//! Approval through the turn pipeline, with real plugins: levels, rules,
//! remembered decisions across a restart and a plugin change, and the
//! adapters that decide.

use crate::built::{CALC, FILES};
use crate::support::{TestHost, policy_in};
use serde_json::json;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolhost::{
    AllowAll, Approvals, Approver, CallDecision, DenyAll, Executor, PendingCall, Pipeline, Policy, ProtocolId, Registry,
    ResultDecision, Status, ToolCall, ToolCallConfig, ToolOutcome, ToolSpec, Turn, approval::ChannelApprover,
};

/// Answers from a script, and records what it was asked.
#[derive(Default)]
struct Person {
    answers: Mutex<VecDeque<CallDecision>>,
    asked: Mutex<Vec<String>>,
}

impl Person {
    fn answering(answers: impl IntoIterator<Item = CallDecision>) -> Arc<Self> {
        Arc::new(Person { answers: Mutex::new(answers.into_iter().collect()), asked: Mutex::default() })
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl Approver for Person {
    async fn approve_calls(&self, calls: &[PendingCall]) -> Vec<CallDecision> {
        calls
            .iter()
            .map(|call| {
                self.asked.lock().unwrap().push(call.tool.clone());
                self.answers.lock().unwrap().pop_front().unwrap_or(CallDecision::Deny { reason: Some("script ran out".into()) })
            })
            .collect()
    }

    async fn approve_result(&self, _outcome: &ToolOutcome, _tool: &ToolSpec) -> ResultDecision {
        ResultDecision::Pass
    }
}

/// `calc` (public) and `files` (moderate list/read, sensitive write) over
/// a fresh workspace, with `extra` policy text.
async fn host(extra: &str) -> (TestHost, tempfile::TempDir) {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::create_dir(workspace.path().join("notes")).unwrap();
    let policy = format!(
        "[plugins.files]\nfile = \"files.wasm\"\ndirs = {{ \"/workspace\" = {{ host = {:?}, access = \"read-write\" }} }}\n{extra}",
        workspace.path().display().to_string()
    );
    (TestHost::new(&[CALC, FILES], &policy).await, workspace)
}

fn pipeline_of(policy: &Policy, registry: &Arc<Registry>, approver: Arc<dyn Approver>) -> Pipeline {
    let approvals = Approvals::new(&policy.approval);
    Pipeline::new(Executor::new(registry.clone()), Arc::new(approvals), approver)
}

fn call(tool: &str, args: serde_json::Value) -> ToolCall {
    ToolCall::new("c1", tool, args.as_object().unwrap().clone())
}

fn agent(require_confirmation: bool) -> Turn {
    let mut config = ToolCallConfig::on();
    config.require_confirmation = require_confirmation;
    let mut turn = Turn::for_agent("coder", config);
    turn.protocol = ProtocolId::JsonBlock;
    turn
}

/// Run one call as the agent and return its status.
async fn status(pipeline: &Pipeline, turn: &Turn, call: ToolCall) -> (Status, String) {
    let result = pipeline.run(turn, vec![call]).await;
    (result.outcomes[0].status, result.outcomes[0].output.clone())
}

#[tokio::test]
async fn public_tools_run_without_asking() {
    let (host, _ws) = host("").await;
    let person = Person::answering([]);
    let pipeline = pipeline_of(&host.config, &host.registry, person.clone());
    let (status_, _) = status(&pipeline, &agent(false), call("calculate", json!({ "expression": "1+1" }))).await;
    assert_eq!(status_, Status::Success);
    assert!(person.asked().is_empty());
}

#[tokio::test]
async fn moderate_asks_once_always_is_remembered_across_a_restart_and_asked_again_when_the_plugin_changes() {
    let (host, _ws) = host("").await;
    let list = || call("list_files", json!({}));
    let person = Person::answering([CallDecision::AllowAlways]);
    let pipeline = pipeline_of(&host.config, &host.registry, person.clone());
    assert_eq!(status(&pipeline, &agent(false), list()).await.0, Status::Success);
    assert_eq!(status(&pipeline, &agent(false), list()).await.0, Status::Success);
    assert_eq!(person.asked(), ["list_files"], "asked once, then remembered");

    // A restart: a new registry and a new approval policy over the same files.
    let reloaded = host.policy_text_reloaded();
    let restarted = Arc::new(Registry::load(reloaded.runtime()).await.unwrap());
    let nobody = Person::answering([]);
    assert_eq!(status(&pipeline_of(&reloaded, &restarted, nobody.clone()), &agent(false), list()).await.0, Status::Success);
    assert!(nobody.asked().is_empty(), "remembered across the restart");

    // The plugin's bytes change (a custom section appended): asked again.
    let mut changed = std::fs::read(FILES.path()).unwrap();
    changed.extend_from_slice(&[0x00, 0x03, 0x01, b'x', b'y']);
    std::fs::write(host.dir.path().join("plugins/files.wasm"), changed).unwrap();
    let changed = Arc::new(Registry::load(reloaded.runtime()).await.unwrap());
    let asked = Person::answering([CallDecision::AllowOnce]);
    assert_eq!(status(&pipeline_of(&reloaded, &changed, asked.clone()), &agent(false), list()).await.0, Status::Success);
    assert_eq!(asked.asked(), ["list_files"], "a changed plugin asks again");
}

#[tokio::test]
async fn sensitive_asks_every_time_and_an_always_it_did_not_offer_is_refused() {
    let (host, ws) = host("").await;
    let person = Person::answering([
        CallDecision::AllowAlways,
        CallDecision::AllowOnce,
        CallDecision::Deny { reason: Some("no more".into()) },
    ]);
    let pipeline = pipeline_of(&host.config, &host.registry, person.clone());
    let write = |n: u32| call("write_file", json!({ "path": format!("f{n}.txt"), "content": "x" }));
    let (refused, why) = status(&pipeline, &agent(false), write(1)).await;
    assert_eq!(refused, Status::Denied, "the question offered no \"always\": {why}");
    assert!(why.contains("did not offer"), "{why}");
    assert_eq!(status(&pipeline, &agent(false), write(2)).await.0, Status::Success, "asked again: nothing remembered");
    assert_eq!(status(&pipeline, &agent(false), write(3)).await, (Status::Denied, "no more".into()));
    assert_eq!(person.asked(), ["write_file", "write_file", "write_file"]);
    assert!(!ws.path().join("f1.txt").exists() && ws.path().join("f2.txt").exists() && !ws.path().join("f3.txt").exists());
    assert!(host.config.approval.memory_file.metadata().is_err(), "no \"always\" was written");
}

#[tokio::test]
async fn require_confirmation_asks_for_public_tools() {
    let (host, _ws) = host("").await;
    let person = Person::answering([CallDecision::Deny { reason: None }]);
    let pipeline = pipeline_of(&host.config, &host.registry, person.clone());
    let (status_, output) = status(&pipeline, &agent(true), call("calculate", json!({ "expression": "1" }))).await;
    assert_eq!(status_, Status::Denied, "{output}");
    assert_eq!(person.asked(), ["calculate"]);
}

#[tokio::test]
async fn a_deny_rule_beats_an_allow_rule() {
    let rules = "[[approval.rules]]\naction = \"allow\"\ntool = \"write_file\"\n\
                 [[approval.rules]]\naction = \"deny\"\ntool = \"write_*\"\nreason = \"writes are off today\"\n";
    let (host, ws) = host(rules).await;
    let pipeline = pipeline_of(&host.config, &host.registry, Arc::new(AllowAll));
    let (status_, output) =
        status(&pipeline, &agent(false), call("write_file", json!({ "path": "a.txt", "content": "x" }))).await;
    assert_eq!((status_, output.as_str()), (Status::Denied, "writes are off today"));
    assert!(!ws.path().join("a.txt").exists(), "--yes does not beat a deny rule");
}

#[tokio::test]
async fn an_argument_pattern_rule_allows_one_path_and_asks_for_another() {
    let rules = "[[approval.rules]]\naction = \"allow\"\ntool = \"write_file\"\nargs = { path = \"notes/**\" }\n";
    let (host, ws) = host(rules).await;
    let person = Person::answering([CallDecision::Deny { reason: Some("not there".into()) }]);
    let pipeline = pipeline_of(&host.config, &host.registry, person.clone());
    let notes = call("write_file", json!({ "path": "notes/today.txt", "content": "x" }));
    assert_eq!(status(&pipeline, &agent(false), notes).await.0, Status::Success);
    assert!(person.asked().is_empty(), "the allow rule needs nobody");
    let elsewhere = call("write_file", json!({ "path": "todo.txt", "content": "x" }));
    assert_eq!(status(&pipeline, &agent(false), elsewhere).await, (Status::Denied, "not there".into()));
    assert_eq!(person.asked(), ["write_file"]);
    assert!(ws.path().join("notes/today.txt").exists() && !ws.path().join("todo.txt").exists());
}

#[tokio::test]
async fn nobody_attached_denies_saying_approval_was_needed() {
    let (host, _ws) = host("").await;
    let pipeline = pipeline_of(&host.config, &host.registry, Arc::new(DenyAll));
    let (status_, output) = status(&pipeline, &agent(false), call("list_files", json!({}))).await;
    assert_eq!(status_, Status::Denied);
    assert!(output.contains("list_files") && output.contains("--yes"), "{output}");
}

#[tokio::test]
async fn a_channel_approver_that_times_out_denies_with_that_reason() {
    let (host, _ws) = host("").await;
    let (approver, _requests) = ChannelApprover::new(Duration::from_millis(100));
    let pipeline = pipeline_of(&host.config, &host.registry, Arc::new(approver));
    let (status_, output) = status(&pipeline, &agent(false), call("list_files", json!({}))).await;
    assert_eq!(status_, Status::Denied);
    assert!(output.contains("timed out waiting for approval"), "{output}");
    assert!(!output.contains("denied by"), "not reported as a person's denial: {output}");
}

#[tokio::test]
async fn every_call_is_audited_with_its_decision() {
    let (host, _ws) = host("").await;
    let audit = host.dir.path().join("audit.jsonl");
    let text = format!("[approval]\naudit_log = {:?}\n", audit.display().to_string());
    let policy = policy_in(host.dir.path(), &text);
    let registry = Arc::new(Registry::load(policy.runtime()).await.unwrap());
    let pipeline = pipeline_of(&policy, &registry, Arc::new(DenyAll));
    let calls = vec![call("calculate", json!({ "expression": "2" })), call("list_files", json!({})), call("nope", json!({}))];
    pipeline.run(&agent(false), calls).await;
    let all: Vec<serde_json::Value> =
        std::fs::read_to_string(&audit).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // The call that ran was on record as decided before it started.
    let decided: Vec<&serde_json::Value> = all.iter().filter(|l| l["event"] == "decided").collect();
    assert_eq!(decided.len(), 1, "{all:?}");
    assert_eq!(
        (&decided[0]["tool"], &decided[0]["decision"], decided[0].get("status")),
        (&json!("calculate"), &json!("run"), None)
    );
    assert_eq!(all[0]["event"], "decided", "before its outcome: {all:?}");
    let lines: Vec<&serde_json::Value> = all.iter().filter(|l| l["event"] != "decided").collect();
    let summary: Vec<(String, String)> =
        lines.iter().map(|l| (l["tool"].as_str().unwrap().to_owned(), l["status"].as_str().unwrap().to_owned())).collect();
    assert_eq!(
        summary,
        [("calculate".into(), "success".into()), ("list_files".into(), "denied".into()), ("nope".into(), "not-found".into())]
    );
    assert_eq!(lines[0]["decision"], "run");
    assert_eq!(lines[1]["decision"], "deny");
    assert!(lines[0]["args_sha256"].as_str().unwrap().len() == 64);
}
