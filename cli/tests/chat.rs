//! `toolhost chat`, run as a user runs it, against the scripted stand-in
//! model (a real HTTP server speaking the OpenAI SSE protocol) and the
//! built example plugins: one message per protocol with the transcript
//! checked, approval without a terminal, JSON events, resuming, manual
//! mode, a failing model, bad input — and the interactive prompt in a
//! pseudo-terminal.

mod support;

use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output};
use support::{in_test_home, text};
use toolhost_standin::{Reply, Response, StandIn};

fn examples() -> std::path::PathBuf {
    support::plugins("examples")
}

/// `toolhost` in `cwd`, with the compiled cache and approval state in the
/// build's target directory, and no model settings from the environment.
fn command(cwd: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    in_test_home(&mut command)
        .current_dir(cwd)
        .env_remove("RUST_LOG")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_MODEL");
    command
}

/// A directory whose `toolhost.toml` loads the examples, with `files`
/// writing to `ws/`.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let policy = format!(
        "plugin_dirs = [{:?}]\n[plugins.files]\nfile = \"files.wasm\"\n\
         dirs = {{ \"/workspace\" = {{ host = \"ws\", access = \"read-write\" }} }}\n",
        examples().display().to_string()
    );
    std::fs::write(dir.path().join("toolhost.toml"), policy).unwrap();
    dir
}

/// Run `toolhost chat` with `args` against `model`, off the async runtime
/// the stand-in serves on.
async fn chat(dir: &Path, model: &StandIn, args: &[&str]) -> Output {
    let mut command = command(dir);
    command.args(["chat", "--base-url", &model.base_url()]).args(args);
    tokio::task::spawn_blocking(move || command.output().expect("toolhost runs")).await.unwrap()
}

fn transcript(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

const VCP_CALCULATE: &str = "Let me compute.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」calculate「末」,\nexpression:「始」6 * 7「末」\n<<<[END_TOOL_REQUEST]>>>";
/// An answer that quotes the integer part of the `value` the tool returned.
const QUOTES_VALUE: &str = "The answer is {{last_message:\"value\\\\?\"?:\\s*([0-9]+)}}.";

/// The model's call to `calculate` in `protocol`.
fn calculate_in(protocol: &str) -> Reply {
    let args = json!({ "expression": "6 * 7" });
    match protocol {
        "vcp" => Reply::text(VCP_CALCULATE),
        "json-block" => Reply::text(format!("```json\n{}\n```", json!({ "name": "calculate", "arguments": args }))),
        "xml-tag" => Reply::text(format!("<tool_code>{}</tool_code>", json!({ "name": "calculate", "arguments": args }))),
        "native" => Reply::text("").call("call_abc", "calculate", args),
        other => panic!("{other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_message_in_each_protocol_runs_the_call_answers_and_saves_the_transcript() {
    for protocol in ["vcp", "json-block", "xml-tag", "native"] {
        let dir = workspace();
        let script =
            [Response::Reply(calculate_in(protocol).reasoning("6 * 7 needs the calculator")), Response::text(QUOTES_VALUE)];
        let model = StandIn::start(script).await.unwrap();
        let out =
            chat(dir.path(), &model, &["--protocol", protocol, "--message", "What is 6 × 7?", "--transcript", "t.jsonl"]).await;
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{protocol}: {stderr}");
        assert!(stdout.trim_end().ends_with("The answer is 42."), "{protocol}: the answer streams to stdout:\n{stdout}");
        assert!(stderr.contains("→ calculate {\"expression\":\"6 * 7\"}"), "{protocol}: the call is shown:\n{stderr}");
        assert!(stderr.contains("✓ calculate success in"), "{protocol}: its outcome:\n{stderr}");
        assert!(stderr.contains("6 * 7 needs the calculator"), "{protocol}: reasoning goes to stderr:\n{stderr}");
        assert!(!stdout.contains("needs the calculator"), "{protocol}: and never into the reply");

        let entries = transcript(&dir.path().join("t.jsonl"));
        let roles: Vec<&str> = entries.iter().map(|e| e["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "tool", "assistant"], "{protocol}");
        assert_eq!(entries[2]["calls"][0]["tool"], "calculate");
        assert_eq!(entries[3]["status"], "success");
        assert_eq!(entries[4]["content"], "The answer is 42.");
        let first = &model.requests()[0];
        assert_eq!(first.body.get("tools").is_some(), protocol == "native", "{protocol}: the schema goes only to native");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_terminal_a_sensitive_call_is_denied_unless_yes_allows_it() {
    let write = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」write_file「末」,\npath:「始」note.txt「末」,\ncontent:「始」hello「末」\n<<<[END_TOOL_REQUEST]>>>";
    for yes in [false, true] {
        let dir = workspace();
        let model = StandIn::start([Response::text(write), Response::text("Result: {{last_message}}")]).await.unwrap();
        let mut args = vec!["--message", "Save a note"];
        if yes {
            args.push("--yes");
        }
        let out = chat(dir.path(), &model, &args).await;
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let written = dir.path().join("ws/note.txt").exists();
        assert_eq!(written, yes, "--yes = {yes}:\n{stderr}");
        let told = model.requests()[1].last_message().to_owned();
        if yes {
            assert!(stderr.contains("✓ write_file success"), "{stderr}");
        } else {
            assert!(stderr.contains("no terminal to ask on"), "the person is told why: {stderr}");
            assert!(stderr.contains("✗ write_file denied"), "{stderr}");
            assert!(told.contains("denied"), "the model is told: {told}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_prints_every_event_as_a_line() {
    let dir = workspace();
    let model = StandIn::start([Response::text(VCP_CALCULATE), Response::text("42")]).await.unwrap();
    let out = chat(dir.path(), &model, &["--json", "--message", "6 × 7?"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let events: Vec<Value> = text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["event"].as_str().unwrap()).filter(|k| *k != "text-delta").collect();
    assert_eq!(
        kinds,
        ["requesting", "calls-parsed", "executing", "outcome", "iteration-done", "requesting", "calls-parsed", "finished"]
    );
    let outcome = events.iter().find(|e| e["event"] == "outcome").unwrap();
    assert_eq!((outcome["tool"].as_str(), outcome["status"].as_str()), (Some("calculate"), Some("success")));
    assert_eq!(events.last().unwrap()["stop"]["reason"], "answered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_conversation_resumes_with_what_was_said() {
    let dir = workspace();
    let model = StandIn::start([Response::text("Noted: blue."), Response::text("You said: {{last_message}}")]).await.unwrap();
    let out = chat(dir.path(), &model, &["--message", "My colour is blue", "--transcript", "t.jsonl"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = chat(dir.path(), &model, &["--message", "What was my colour?", "--resume", "t.jsonl"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("resuming t.jsonl (3 entries)"), "{stderr}");
    assert!(stderr.contains("you> My colour is blue\nNoted: blue."), "the last exchange is shown: {stderr}");
    let requests = model.requests();
    let sent = requests[1].messages();
    let said: Vec<&str> = sent.iter().filter_map(|m| m["content"].as_str()).collect();
    assert!(said.contains(&"My colour is blue") && said.contains(&"Noted: blue."), "the earlier turn is sent again: {said:?}");
    assert_eq!(transcript(&dir.path().join("t.jsonl")).len(), 5, "the new turn is added to the file");

    let out = chat(dir.path(), &model, &["--message", "again", "--transcript", "t.jsonl"]).await;
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("exists; resume it"), "{}", text(&out.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_mode_without_a_terminal_waits_and_runs_the_calls_on_resume_with_yes() {
    let dir = workspace();
    let model = StandIn::start([Response::text(VCP_CALCULATE), Response::text(QUOTES_VALUE)]).await.unwrap();
    let out = chat(dir.path(), &model, &["--manual", "--message", "6 × 7?", "--transcript", "t.jsonl"]).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("1 call waits for a decision; nothing ran"), "{stderr}");
    assert!(!stderr.contains("✓ calculate"), "{stderr}");
    assert_eq!(model.requests().len(), 1);

    let out = chat(dir.path(), &model, &["--manual", "--yes", "--resume", "t.jsonl"]).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("✓ calculate success"), "{stderr}");
    assert!(stdout.contains("The answer is 42."), "{stdout}");
    let roles: Vec<String> =
        transcript(&dir.path().join("t.jsonl")).iter().map(|e| e["role"].as_str().unwrap().to_owned()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "assistant"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_model_is_an_error_with_its_status_and_exit_code_one() {
    let dir = workspace();
    let model = StandIn::always(Response::status(401, "invalid API key")).await.unwrap();
    let out = chat(dir.path(), &model, &["--message", "hello"]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("401") && stderr.contains("invalid API key"), "{stderr}");
    assert_eq!(model.requests().len(), 1, "a 401 is not retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_settings_are_refused_with_the_closest_names() {
    let dir = workspace();
    let policy = std::fs::read_to_string(dir.path().join("toolhost.toml")).unwrap()
        + "[agents.helper]\nenabled = true\n[llm.local]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n";
    std::fs::write(dir.path().join("toolhost.toml"), policy).unwrap();
    let model = StandIn::start(Vec::new()).await.unwrap();
    let cases: [(&[&str], &str); 3] = [
        (&["--agent", "helpr", "-m", "x"], "did you mean `helper`"),
        (&["--llm", "locl", "-m", "x"], "did you mean `local`"),
        (&["--api-key-env", "TOOLHOST_TEST_NO_SUCH_KEY", "-m", "x"], "TOOLHOST_TEST_NO_SUCH_KEY` is not set"),
    ];
    for (args, says) in cases {
        let out = chat(dir.path(), &model, args).await;
        let stderr = text(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{args:?}: {stderr}");
    }
    let out = command(dir.path()).args(["chat", "--base-url", "ftp://x", "-m", "x"]).output().unwrap();
    assert!(text(&out.stderr).contains("not an http:// or https:// URL"), "{}", text(&out.stderr));
    assert!(model.requests().is_empty(), "no request was made");
}

/// The interactive prompt in a pseudo-terminal: a sensitive call asked and
/// approved at the prompt, a turn cancelled with Ctrl-C, `/quit`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_a_terminal_calls_are_asked_at_the_prompt_and_ctrl_c_cancels_a_turn() {
    let dir = workspace();
    let write = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」write_file「末」,\npath:「始」note.txt「末」,\ncontent:「始」hello「末」\n<<<[END_TOOL_REQUEST]>>>";
    let long = "word ".repeat(400);
    let script = [
        Response::text(write),
        Response::text("Saved."),
        Response::Reply(Reply::text(long).slowly(20)),
        Response::text("Still here."),
    ];
    let model = StandIn::start(script).await.unwrap();
    let mut command = command(dir.path());
    command.args(["chat", "--base-url", &model.base_url()]);
    let session = tokio::task::spawn_blocking(move || {
        let mut session = rexpect::session::spawn_command(command, Some(30_000)).unwrap();
        session.exp_string("you> ").unwrap();
        session.send_line("Save a note").unwrap();
        session.exp_string("write_file: run it? [y/n/all/none]").unwrap();
        session.send_line("y").unwrap();
        // rexpect reads bytes as Latin-1: the ✓ is not matched.
        session.exp_string("write_file success in").unwrap();
        session.exp_string("Saved.").unwrap();
        session.exp_string("you> ").unwrap();
        session.send_line("Talk for a while").unwrap();
        session.exp_string("word word").unwrap();
        session.send_control('c').unwrap();
        session.exp_string("cancelling the turn").unwrap();
        session.exp_string("you> ").unwrap();
        session.send_line("Are you there?").unwrap();
        session.exp_string("Still here.").unwrap();
        session.exp_string("you> ").unwrap();
        session.send_line("/quit").unwrap();
        session.exp_eof().unwrap();
        session.process_mut().wait().unwrap()
    });
    let status = session.await.unwrap();
    assert!(matches!(status, rexpect::process::WaitStatus::Exited(_, 0)), "{status:?}");
    assert_eq!(std::fs::read_to_string(dir.path().join("ws/note.txt")).unwrap(), "hello");
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    let last: Vec<&str> = requests[3].messages().iter().filter_map(|m| m["content"].as_str()).collect();
    assert!(last.iter().any(|m| m.starts_with("word word")), "what streamed before the cancel is kept: {last:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_a_terminal_slash_commands_list_the_tools_reload_and_are_never_sent() {
    let dir = workspace();
    let model = StandIn::start([Response::text("Hello.")]).await.unwrap();
    let mut command = command(dir.path());
    command.args(["chat", "--base-url", &model.base_url()]);
    let session = tokio::task::spawn_blocking(move || {
        let mut session = rexpect::session::spawn_command(command, Some(30_000)).unwrap();
        session.exp_string("/help lists the commands").unwrap();
        session.exp_string("you> ").unwrap();
        session.send_line("/help").unwrap();
        session.exp_string("/reload").unwrap();
        session.exp_string("you> ").unwrap();
        session.send_line("/tools").unwrap();
        session.exp_string("write_file").unwrap();
        session.exp_string("sensitive").unwrap();
        session.exp_string("you> ").unwrap();
        session.send_line("/tool").unwrap();
        session.exp_string("no command /tool").unwrap();
        session.exp_string("/tools").unwrap();
        session.exp_string("you> ").unwrap();
        session.send_line("/reload").unwrap();
        session.exp_string("reloaded: nothing changed").unwrap();
        session.exp_string("you> ").unwrap();
        session.send_line("Hi").unwrap();
        session.exp_string("Hello.").unwrap();
        session.exp_string("you> ").unwrap();
        session.send_line("/quit").unwrap();
        session.exp_eof().unwrap();
        session.process_mut().wait().unwrap()
    });
    let status = session.await.unwrap();
    assert!(matches!(status, rexpect::process::WaitStatus::Exited(_, 0)), "{status:?}");
    let requests = model.requests();
    assert_eq!(requests.len(), 1, "commands never reach the model");
}
