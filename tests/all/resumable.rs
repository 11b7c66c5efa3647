//! The resumable turn over real plugins: a turn that waits for a person
//! comes back as data, and is finished here or — sealed in a resume token
//! — by another host with the same key and components; a forged, altered,
//! expired, replayed, mismatched or foreign token is refused with its
//! reason, and nothing runs.

use crate::built::FILES;
use crate::support::TestHost;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use toolhost::approval::{Answer, AskReason, DecidedBy, ResumeError};
use toolhost::pipeline::{Decisions, PausedTurn, TurnStep, Waiting};
use toolhost::{Approvals, CallDecision, DenyAll, Pipeline, ResultDecision, Status, ToolCall, ToolCallConfig, Turn};

/// A host of the files plugin over `workspace`, its approvals memory (and
/// so its ledger of used tokens) at `shared/approvals.json`, as replicas
/// share it; `extra` appended to its policy.
async fn replica(workspace: &Path, shared: &Path, extra: &str) -> (TestHost, Pipeline) {
    let policy = format!(
        "[plugins.files]\nfile = \"files.wasm\"\ndirs = {{ \"/workspace\" = {{ host = {workspace:?}, access = \"read-write\" }} }}\n\
         [approval]\nmemory_file = {memory:?}\n{extra}",
        workspace = workspace.display().to_string(),
        memory = shared.join("approvals.json").display().to_string(),
    );
    let host = TestHost::new(&[FILES], &policy).await;
    let pipeline = Pipeline::new(host.executor.clone(), Arc::new(Approvals::new(&host.config.approval)), Arc::new(DenyAll));
    (host, pipeline)
}

fn turn() -> Turn {
    Turn::for_agent("assistant", ToolCallConfig::on())
}

fn write(path: &str) -> ToolCall {
    ToolCall::new("w1", "write_file", json!({ "path": path, "content": "resumed elsewhere" }))
}

fn by_person(decision: CallDecision) -> Decisions {
    Decisions::Calls(vec![Answer { decision, by: DecidedBy::Person }])
}

/// The turn paused, asking about its calls.
fn waiting(step: TurnStep) -> PausedTurn {
    match step {
        TurnStep::Waiting(paused) => paused,
        TurnStep::Done(result) => panic!("the turn did not wait: {:?}", result.outcomes),
    }
}

fn done(step: TurnStep) -> toolhost::TurnResult {
    match step {
        TurnStep::Done(result) => result,
        TurnStep::Waiting(paused) => panic!("the turn still waits: {paused:?}"),
    }
}

#[tokio::test]
async fn a_paused_turn_is_finished_by_another_host_with_the_same_key_and_components() {
    let (workspace, shared) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_a, first) = replica(workspace.path(), shared.path(), "").await;
    let (_b, second) = replica(workspace.path(), shared.path(), "").await;
    let paused = waiting(first.start(&turn(), vec![write("note.txt")]).await);
    let Waiting::Calls(asked) = paused.waiting() else { panic!("calls wait") };
    assert_eq!((asked.len(), &asked[0].tool, &asked[0].reason), (1, &"write_file".to_owned(), &AskReason::Sensitive));
    assert!(!asked[0].offers_always(), "a sensitive tool is asked every call");
    assert_eq!(asked[0].args["path"], "note.txt", "the checked arguments");
    let token = first.seal(paused, b"request 1", Duration::from_secs(60)).await.unwrap();
    assert!(!workspace.path().join("note.txt").exists(), "nothing ran before the answer");

    let refused = second.unseal(&turn(), &token, b"request 2").await.unwrap_err();
    assert!(matches!(refused, ResumeError::Mismatched(_)), "another request's retry: {refused}");
    let other_agent = Turn::for_agent("other", ToolCallConfig::on());
    let refused = second.unseal(&other_agent, &token, b"request 1").await.unwrap_err();
    assert!(matches!(refused, ResumeError::Mismatched(_)), "another agent's turn: {refused}");

    let paused = second.unseal(&turn(), &token, b"request 1").await.unwrap();
    let result = done(second.resume(&turn(), paused, by_person(CallDecision::AllowOnce)).await);
    assert_eq!(result.outcomes[0].status, Status::Success, "{}", result.outcomes[0].output);
    assert_eq!(std::fs::read_to_string(workspace.path().join("note.txt")).unwrap(), "resumed elsewhere");

    std::fs::remove_file(workspace.path().join("note.txt")).unwrap();
    let replayed = first.unseal(&turn(), &token, b"request 1").await.unwrap_err();
    assert!(matches!(replayed, ResumeError::Replayed), "used once, on any replica sharing the ledger: {replayed}");
    assert!(!workspace.path().join("note.txt").exists());
}

#[tokio::test]
async fn forged_altered_expired_and_foreign_tokens_are_refused_and_nothing_runs() {
    let (workspace, shared) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_a, host) = replica(workspace.path(), shared.path(), "").await;
    let token = host.seal(waiting(host.start(&turn(), vec![write("x.txt")]).await), b"r", Duration::from_secs(60)).await.unwrap();
    let mut altered: Vec<char> = token.chars().collect();
    let at = altered.len() / 2;
    altered[at] = if altered[at] == 'A' { 'B' } else { 'A' };
    let altered: String = altered.into_iter().collect();
    assert!(matches!(host.unseal(&turn(), &altered, b"r").await, Err(ResumeError::Forged)));
    assert!(matches!(host.unseal(&turn(), "thr1.bm90IGEgdG9rZW4", b"r").await, Err(ResumeError::Malformed(_))));
    assert!(matches!(host.unseal(&turn(), "", b"r").await, Err(ResumeError::Malformed(_))));

    let expired = host.seal(waiting(host.start(&turn(), vec![write("y.txt")]).await), b"r", Duration::ZERO).await.unwrap();
    let refused = host.unseal(&turn(), &expired, b"r").await.unwrap_err();
    assert!(matches!(refused, ResumeError::Expired(_)), "{refused}");

    // A host with another key file: nobody else's token opens there.
    let (other_key, other_shared) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let elsewhere = format!("cache_key = {:?}\n", other_key.path().join("host.key").display().to_string());
    let policy_dir = tempfile::tempdir().unwrap();
    let (_c, foreign) = replica_keyed(workspace.path(), other_shared.path(), policy_dir.path(), &elsewhere).await;
    assert!(matches!(foreign.unseal(&turn(), &token, b"r").await, Err(ResumeError::Forged)));
    // The genuine token still works where it was made: a refusal spends nothing.
    let paused = host.unseal(&turn(), &token, b"r").await.unwrap();
    let result = done(host.resume(&turn(), paused, by_person(CallDecision::Deny { reason: Some("no".into()) })).await);
    assert_eq!((result.outcomes[0].status, result.outcomes[0].output.as_str()), (Status::Denied, "no"));
    assert!(!workspace.path().join("x.txt").exists() && !workspace.path().join("y.txt").exists());
}

/// As [`replica`], with `top` (such as another `cache_key`) at the top of
/// the policy, written in `dir`.
async fn replica_keyed(workspace: &Path, shared: &Path, dir: &Path, top: &str) -> (tempfile::TempDir, Pipeline) {
    let host_dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(host_dir.path().join("plugins")).unwrap();
    std::fs::copy(FILES.path(), host_dir.path().join("plugins/files.wasm")).unwrap();
    let policy = format!(
        "{top}plugin_dirs = [\"plugins\"]\ncache_dir = {cache:?}\nlock_file = {lock:?}\n\
         [plugins.files]\nfile = \"files.wasm\"\ndirs = {{ \"/workspace\" = {{ host = {workspace:?}, access = \"read-write\" }} }}\n\
         [approval]\nmemory_file = {memory:?}\n",
        cache = dir.join("cache").display().to_string(),
        lock = dir.join("toolhost.lock").display().to_string(),
        workspace = workspace.display().to_string(),
        memory = shared.join("approvals.json").display().to_string(),
    );
    std::fs::write(host_dir.path().join("toolhost.toml"), policy).unwrap();
    let config = toolhost::Policy::load(&host_dir.path().join("toolhost.toml")).unwrap();
    let registry = Arc::new(toolhost::Registry::load(config.runtime()).await.unwrap());
    let pipeline =
        Pipeline::new(toolhost::Executor::new(registry), Arc::new(Approvals::new(&config.approval)), Arc::new(DenyAll));
    (host_dir, pipeline)
}

#[tokio::test]
async fn a_token_for_other_component_bytes_is_refused_where_the_plugin_changed() {
    let (workspace, shared) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_a, first) = replica(workspace.path(), shared.path(), "").await;
    let (b, second) = replica(workspace.path(), shared.path(), "").await;
    let token =
        first.seal(waiting(first.start(&turn(), vec![write("z.txt")]).await), b"r", Duration::from_secs(60)).await.unwrap();
    // The second host's files.wasm becomes other bytes (a custom section
    // appended: the same plugin, another component) and is reloaded.
    let component = b.dir.path().join("plugins/files.wasm");
    let mut bytes = std::fs::read(&component).unwrap();
    bytes.extend_from_slice(&[0, 6, 5, b'e', b'x', b't', b'r', b'a']);
    std::fs::write(&component, bytes).unwrap();
    b.registry.reload().await.unwrap();
    let refused = second.unseal(&turn(), &token, b"r").await.unwrap_err();
    let ResumeError::Mismatched(why) = &refused else { panic!("{refused}") };
    assert!(why.contains("plugin files here is another component"), "{why}");
    assert!(!workspace.path().join("z.txt").exists());
}

#[tokio::test]
async fn a_deny_rule_where_the_turn_resumes_wins_over_the_answer() {
    let (workspace, shared) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_a, first) = replica(workspace.path(), shared.path(), "").await;
    let deny = "[[approval.rules]]\naction = \"deny\"\ntool = \"write_file\"\nreason = \"writes are frozen here\"\n";
    let (_b, strict) = replica(workspace.path(), shared.path(), deny).await;
    let token =
        first.seal(waiting(first.start(&turn(), vec![write("d.txt")]).await), b"r", Duration::from_secs(60)).await.unwrap();
    let paused = strict.unseal(&turn(), &token, b"r").await.unwrap();
    let result = done(strict.resume(&turn(), paused, by_person(CallDecision::AllowOnce)).await);
    assert_eq!((result.outcomes[0].status, result.outcomes[0].output.as_str()), (Status::Denied, "writes are frozen here"));
    assert!(!workspace.path().join("d.txt").exists());
}

#[tokio::test]
async fn a_held_result_travels_sealed_and_is_passed_or_withheld_where_it_is_decided() {
    let (workspace, shared) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(workspace.path().join("secret.txt"), "the launch code is 0000").unwrap();
    let (_a, first) = replica(workspace.path(), shared.path(), "").await;
    let (_b, second) = replica(workspace.path(), shared.path(), "").await;
    for (decision, status) in [
        (ResultDecision::Reject { reason: Some("it holds a secret".into()) }, Status::ResultRejected),
        (ResultDecision::Pass, Status::Success),
    ] {
        let read = ToolCall::new("r1", "read_file", json!({ "path": "secret.txt" }));
        let paused = waiting(first.start(&turn(), vec![read]).await);
        let Waiting::Calls(asked) = paused.waiting() else { panic!("read_file is moderate: asked first") };
        assert!(asked[0].offers_always());
        let paused = waiting(first.resume(&turn(), paused, by_person(CallDecision::AllowOnce)).await);
        let Waiting::Results(held) = paused.waiting() else { panic!("its result waits for a person") };
        assert!(held[0].outcome.output.contains("launch code"), "the person sees the result: {:?}", held[0].outcome);
        let token = first.seal(paused, b"r", Duration::from_secs(60)).await.unwrap();
        assert!(!token.contains("launch") && !token.contains("bGF1bmNo"), "the held result travels encrypted");
        let paused = second.unseal(&turn(), &token, b"r").await.unwrap();
        let answer = toolhost::approval::ResultAnswer::by_person(decision.clone());
        let result = done(second.resume(&turn(), paused, Decisions::Results(vec![answer])).await);
        assert_eq!(result.outcomes[0].status, status);
        let said: String = result.messages().iter().map(|message| message.content.as_str()).collect();
        assert_eq!(said.contains("launch code"), status == Status::Success, "{said}");
    }
}

#[tokio::test]
async fn missing_or_mismatched_decisions_deny_and_a_cancel_cancels() {
    let (workspace, shared) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_a, host) = replica(workspace.path(), shared.path(), "").await;
    let paused = waiting(host.start(&turn(), vec![write("m.txt")]).await);
    let pass = toolhost::approval::ResultAnswer::by_person(ResultDecision::Pass);
    let result = done(host.resume(&turn(), paused, Decisions::Results(vec![pass])).await);
    assert_eq!(result.outcomes[0].status, Status::Denied, "a result's pass does not allow a call");
    let paused = waiting(host.start(&turn(), vec![write("m.txt")]).await);
    let result = done(host.resume(&turn(), paused, Decisions::Calls(Vec::new())).await);
    assert_eq!(result.outcomes[0].status, Status::Denied, "no answer denies");
    let paused = waiting(host.start(&turn(), vec![write("m.txt")]).await);
    let result = done(host.resume(&turn(), paused, Decisions::Cancelled).await);
    assert_eq!(result.outcomes[0].status, Status::Cancelled);
    assert!(!workspace.path().join("m.txt").exists());
}

#[tokio::test]
async fn allow_always_answered_on_one_replica_is_remembered_for_the_others() {
    let (workspace, shared) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(workspace.path().join("a.txt"), "shared").unwrap();
    let (_a, first) = replica(workspace.path(), shared.path(), "").await;
    let (_b, second) = replica(workspace.path(), shared.path(), "").await;
    // list_files is moderate with no result approval.
    let list = || ToolCall::new("l1", "list_files", json!({}));
    let token = first.seal(waiting(first.start(&turn(), vec![list()]).await), b"r", Duration::from_secs(60)).await.unwrap();
    let paused = second.unseal(&turn(), &token, b"r").await.unwrap();
    let result = done(second.resume(&turn(), paused, by_person(CallDecision::AllowAlways)).await);
    assert_eq!(result.outcomes[0].status, Status::Success, "{}", result.outcomes[0].output);
    // The first replica reads the shared memory file within a second.
    tokio::time::sleep(toolhost::approval::MEMORY_RECHECK + Duration::from_millis(100)).await;
    let result = done(first.start(&turn(), vec![list()]).await);
    assert_eq!(result.outcomes[0].status, Status::Success, "remembered for every replica sharing the file");
}

#[tokio::test]
async fn a_call_that_ran_is_audited_when_its_turn_is_sealed_though_never_resumed() {
    let (workspace, shared) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(workspace.path().join("secret.txt"), "the launch code").unwrap();
    let (a, host) = replica(workspace.path(), shared.path(), "audit_log = \"audit.jsonl\"\n").await;
    let read = ToolCall::new("r1", "read_file", json!({ "path": "secret.txt" }));
    let paused = waiting(host.start(&turn(), vec![read]).await);
    let paused = waiting(host.resume(&turn(), paused, by_person(CallDecision::AllowOnce)).await);
    assert!(matches!(paused.waiting(), Waiting::Results(_)));
    // The client never comes back with this token.
    let _token = host.seal(paused, b"r", Duration::from_secs(60)).await.unwrap();
    let audit = std::fs::read_to_string(a.dir.path().join("audit.jsonl")).unwrap();
    let record: serde_json::Value = serde_json::from_str(audit.lines().last().unwrap()).unwrap();
    assert_eq!(
        (&record["tool"], &record["status"], &record["by"]),
        (&json!("read_file"), &json!("success"), &json!("person")),
        "{audit}"
    );
}
