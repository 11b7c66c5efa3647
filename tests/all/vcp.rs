//! The VCP node against a stand-in VCP server (`vcp_standin`): a real
//! WebSocket server on loopback speaking the protocol as
//! `VCP-PROTOCOL.md` §4–§5 describe, and real plugins in the sandbox.

use crate::built::{CALC, EXPOSED, UNDERSTATED};
use crate::support::{Plugin, TestHost};
use crate::vcp_standin::{PATIENCE, StandIn};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use toolhost::{
    Approvals, Approver, CancellationToken, Console, Executor, Pipeline, VcpNode,
    approval::TerminalApprover,
    console::ConsoleOptions,
    vcp::{NODE_CONCURRENCY, NodeState, NodeStatus, UnattendedApprover, VcpConfig},
};

const KEY: &str = "s3cret-key";
/// Limits under which `exposed_spin` runs until stopped. (A plugin section
/// without a file or digest can only lower the global limits.)
const SPIN_FOREVER: &str = "[limits]\ntimeout_ms = 60000\nfuel = 1000000000000\n";

/// A node joined to a stand-in, running until dropped.
struct Node {
    host: TestHost,
    node: VcpNode,
    shutdown: CancellationToken,
    running: Option<JoinHandle<()>>,
}

impl Node {
    /// A node over `plugins` joining `server` with `key`; `vcp` is added to
    /// its `[vcp]` section and `policy` after it.
    async fn join_with(server: &str, key: &str, plugins: &[Plugin], vcp: &str, policy: &str) -> Node {
        let unattended = |config: &VcpConfig| -> Arc<dyn Approver> { Arc::new(UnattendedApprover::new(config.unattended)) };
        Self::join_approved_by(server, key, plugins, vcp, policy, unattended).await
    }

    /// [`Node::join_with`], calls that need approval decided by `approver`.
    async fn join_approved_by(
        server: &str,
        key: &str,
        plugins: &[Plugin],
        vcp: &str,
        policy: &str,
        approver: impl FnOnce(&VcpConfig) -> Arc<dyn Approver>,
    ) -> Node {
        Self::join_asking(server, key, plugins, vcp, policy, |config, pipeline| pipeline.with_approver(approver(config))).await
    }

    /// [`Node::join_with`], its pipeline changed by `asking` (to ask
    /// someone other than `[vcp.unattended]`).
    /// A node whose executor runs [`NODE_CONCURRENCY`] calls at once, as
    /// `toolhost node`'s does.
    async fn join_at_node_concurrency(standin: &StandIn, plugins: &[Plugin]) -> Node {
        Self::join_asking(&standin.url(), KEY, plugins, "", "", |_, pipeline| {
            let executor = Executor::with_concurrency(pipeline.executor().registry().clone(), NODE_CONCURRENCY);
            pipeline.on_executor(executor)
        })
        .await
    }

    async fn join_asking(
        server: &str,
        key: &str,
        plugins: &[Plugin],
        vcp: &str,
        policy: &str,
        asking: impl FnOnce(&VcpConfig, Pipeline) -> Pipeline,
    ) -> Node {
        let text = format!(
            "[vcp]\nserver = \"{server}\"\nnode_name = \"test node\"\nping_interval_ms = 200\n{vcp}\n\
             [vcp.reconnect]\ninitial_ms = 50\nmax_ms = 400\n{policy}"
        );
        let host = TestHost::new(plugins, &text).await;
        let config = host.config.vcp.clone().expect("[vcp] is set");
        let approvals = Arc::new(Approvals::new(&host.config.approval));
        let approver = Arc::new(UnattendedApprover::new(config.unattended));
        let pipeline = asking(&config, Pipeline::new(host.executor.clone(), approvals, approver));
        let node = VcpNode::new(config, key, pipeline).unwrap();
        let shutdown = CancellationToken::new();
        let running = tokio::spawn({
            let (node, shutdown) = (node.clone(), shutdown.clone());
            async move { node.run(shutdown).await }
        });
        Node { host, node, shutdown, running: Some(running) }
    }

    async fn join(standin: &StandIn, plugins: &[Plugin], vcp: &str, policy: &str) -> Node {
        Self::join_with(&standin.url(), KEY, plugins, vcp, policy).await
    }

    /// Wait until the status satisfies `ok`.
    async fn until(&self, what: &str, ok: impl Fn(&NodeStatus) -> bool) -> NodeStatus {
        let mut changes = self.node.watch();
        let waited = tokio::time::timeout(PATIENCE, changes.wait_for(|status| ok(status))).await;
        let status = waited.unwrap_or_else(|_| panic!("no {what} within {PATIENCE:?}: {:?}", self.node.status()));
        status.unwrap().clone()
    }

    /// Shut down and wait for `run` to return.
    async fn stop(&mut self) {
        self.shutdown.cancel();
        if let Some(running) = self.running.take() {
            tokio::time::timeout(PATIENCE, running).await.expect("the node stops").unwrap();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// The text of a successful `tool_result`'s one content part, as JSON.
fn content_json(result: &Value) -> Value {
    assert_eq!(result["status"], "success", "{result}");
    let parts = result["result"]["content"].as_array().unwrap_or_else(|| panic!("a content array: {result}"));
    assert_eq!(parts.len(), 1, "{result}");
    assert_eq!(parts[0]["type"], "text");
    serde_json::from_str(parts[0]["text"].as_str().unwrap()).unwrap()
}

/// The message of an error `tool_result`.
fn error_of(result: &Value) -> &str {
    assert_eq!(result["status"], "error", "{result}");
    result["error"].as_str().unwrap_or_else(|| panic!("an error message: {result}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_sends_a_manifest_per_exposed_tool_then_the_ip_and_the_placeholder() {
    let standin = StandIn::start(KEY).await;
    let node = Node::join(&standin, &[CALC, EXPOSED], "", "[plugins.exposed.limits]\ntimeout_ms = 4000\n").await;
    let registration = standin.registration(1).await;
    standin.wait_for("the placeholder", |r| r.kind() == "update_static_placeholders").await;
    let data = &registration.frame["data"];
    assert_eq!(data["serverName"], "test node");
    assert_eq!(data["capabilities"], json!({"cancelTool": true}));
    let mut names = StandIn::tool_names(&registration);
    names.sort();
    assert_eq!(
        names,
        ["calculate", "exposed_spin", "exposed_wait", "moderate_echo", "typed_echo"],
        "unexposed_echo is not offered"
    );
    for manifest in data["tools"].as_array().unwrap() {
        let name = manifest["name"].as_str().unwrap();
        assert_eq!(manifest["pluginType"], "synchronous", "{name}");
        assert!(manifest["entryPoint"].as_object().is_some_and(|e| !e.is_empty()), "{name}: {manifest}");
        assert!(manifest["displayName"].as_str().is_some_and(|d| !d.is_empty()), "{name}");
        assert!(manifest["description"].as_str().is_some_and(|d| !d.is_empty()), "{name}");
        let command = &manifest["capabilities"]["invocationCommands"][0];
        assert_eq!(command["command"], name, "the server prints `command`");
        let description = command["description"].as_str().unwrap();
        assert!(
            description.contains("<<<[TOOL_REQUEST]>>>") || description.contains("<<<[TOOL_REQUEST_EXP]>>>"),
            "{description}"
        );
    }
    let manifest = |name: &str| data["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap().clone();
    // The tool's own limit plus the margin that lets the node's error arrive first.
    assert_eq!(manifest("typed_echo")["communication"]["timeout"], 5000);
    let typed = manifest("typed_echo")["capabilities"]["invocationCommands"][0]["description"].as_str().unwrap().to_owned();
    for param in ["text", "count", "ratio", "flag", "items"] {
        assert!(typed.contains(param), "{param} is described: {typed}");
    }
    assert!(
        manifest("moderate_echo")["capabilities"]["invocationCommands"][0]["description"].as_str().unwrap().contains("moderate")
    );

    let kinds: Vec<String> = standin.received().iter().map(|r| r.kind().to_owned()).collect();
    assert_eq!(kinds[..3], ["register_tools", "report_ip", "update_static_placeholders"]);
    let received = standin.received();
    let ip = &received[1].frame["data"];
    assert_eq!(ip["localIPs"], json!(["127.0.0.1"]));
    let placeholders = received[2].frame["data"]["placeholders"].as_object().unwrap();
    let (name, text) = placeholders.iter().next().unwrap();
    assert_eq!(name, "VCPToolhost_test_node");
    assert!(text.as_str().unwrap().contains("calculate") && text.as_str().unwrap().contains("typed_echo"));
    assert!(!text.as_str().unwrap().contains("unexposed_echo"));
    let status = node.until("connected", |s| s.state == NodeState::Connected).await;
    assert_eq!(status.server_id.as_deref(), Some("dist-1"));
    assert_eq!(status.registered.len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn string_arguments_are_coerced_to_each_declared_type_and_results_come_back_as_content() {
    let standin = StandIn::start(KEY).await;
    let _node = Node::join(&standin, &[CALC, EXPOSED], "", "").await;
    standin.registration(1).await;
    standin.execute(
        "r-typed",
        "typed_echo",
        json!({"text": "hello", "count": "42", "ratio": "0.25", "flag": "true", "items": "[1, \"two\"]", "maid": "Nova"}),
    );
    let typed = content_json(&standin.result("r-typed").await);
    assert_eq!(
        typed,
        json!({
            "text": {"type": "string", "value": "hello"},
            "count": {"type": "integer", "value": 42},
            "ratio": {"type": "number", "value": 0.25},
            "flag": {"type": "boolean", "value": true},
            "items": {"type": "array", "value": [1, "two"]},
        }),
        "the reserved `maid` is kept apart from the arguments"
    );
    standin.execute("r-calc", "calculate", json!({"expression": "6 * 7"}));
    assert_eq!(content_json(&standin.result("r-calc").await)["value"], 42.0);
    standin.execute("r-bad", "typed_echo", json!({"text": "x", "count": "many", "ratio": "1", "flag": "no", "items": "[]"}));
    let bad = standin.result("r-bad").await;
    assert!(error_of(&bad).contains("count"), "{bad}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_is_not_exposed_is_refused_and_never_run() {
    let standin = StandIn::start(KEY).await;
    // The audit log records every call the pipeline saw and whether it ran.
    let node = Node::join(&standin, &[EXPOSED], "", "[approval]\naudit_log = \"audit.jsonl\"\n").await;
    standin.registration(1).await;
    standin.execute("r-hidden", "unexposed_echo", json!({"text": "hi"}));
    let refused = standin.result("r-hidden").await;
    assert!(error_of(&refused).contains("unexposed_echo"), "{refused}");
    standin.execute("r-shown", "moderate_echo", json!({"text": "hi"}));
    standin.result("r-shown").await;
    let audit = std::fs::read_to_string(node.host.dir.path().join("audit.jsonl")).unwrap();
    let hidden: Value =
        audit.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).find(|r| r["tool"] == "unexposed_echo").unwrap();
    assert_eq!(hidden["status"], "not-found", "{hidden}");
    assert_eq!((&hidden["decision"], &hidden["fuel"]), (&Value::Null, &json!(0)), "never approved nor run: {hidden}");
    assert_eq!(hidden["agent"], format!("vcp:127.0.0.1:{}", standin.port));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unattended_approval_denies_moderate_tools_by_default_saying_so_and_the_policy_can_allow_them() {
    let standin = StandIn::start(KEY).await;
    let _node = Node::join(&standin, &[EXPOSED], "", "").await;
    standin.registration(1).await;
    standin.execute("r-deny", "moderate_echo", json!({"text": "hi"}));
    let denied = standin.result("r-deny").await;
    let message = error_of(&denied);
    assert!(message.contains("needs approval") && message.contains("[vcp.unattended] moderate = \"deny\""), "{message}");

    let standin = StandIn::start(KEY).await;
    let _node = Node::join(&standin, &[EXPOSED], "[vcp.unattended]\nmoderate = \"allow\"\n", "").await;
    standin.registration(1).await;
    standin.execute("r-allow", "moderate_echo", json!({"text": "hi"}));
    assert_eq!(standin.result("r-allow").await["result"]["content"][0]["text"], "hi");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_its_plugin_declares_public_is_denied_unattended() {
    let workspace = tempfile::tempdir().unwrap();
    let grant = format!(
        "[plugins.understated]\nfile = \"understated.wasm\"\n\
         dirs = {{ \"/workspace\" = {{ host = {:?}, access = \"read-write\" }} }}\n",
        workspace.path().display().to_string()
    );
    let standin = StandIn::start(KEY).await;
    let _node = Node::join(&standin, &[UNDERSTATED], "", &grant).await;
    standin.registration(1).await;
    standin.execute("r-write", "save_note", json!({"path": "a.txt", "content": "x"}));
    let message = error_of(&standin.result("r-write").await).to_owned();
    assert!(message.contains("needs approval") && message.contains("[vcp.unattended] moderate = \"deny\""), "{message}");
    assert!(!workspace.path().join("a.txt").exists(), "nothing was written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_hit_is_an_error_that_names_the_limit() {
    let standin = StandIn::start(KEY).await;
    let _node = Node::join(&standin, &[EXPOSED], "", "[plugins.exposed.limits]\nfuel = 2000000\n").await;
    standin.registration(1).await;
    standin.execute("r-fuel", "exposed_spin", json!({}));
    let failed = standin.result("r-fuel").await;
    let message = error_of(&failed);
    assert!(message.contains("out of fuel after 2 000 000 units"), "{message}");
}

/// A reply's calls arrive together and the server times each from when it
/// sent it: four calls of one waiting tool run at once on a node's
/// executor, not one after another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_one_plugins_waiting_calls_runs_at_once() {
    let standin = StandIn::start(KEY).await;
    let node = Node::join_at_node_concurrency(&standin, &[EXPOSED]).await;
    standin.registration(1).await;
    let start = Instant::now();
    for i in 0..4 {
        standin.execute(&format!("w{i}"), "exposed_wait", json!({"ms": "1000"}));
    }
    for i in 0..4 {
        let result = standin.result(&format!("w{i}")).await;
        assert_eq!(result["status"], "success", "{result}");
    }
    let took = start.elapsed();
    assert!(took < Duration::from_millis(2500), "four 1 s waits took {took:?}: they queued");
    drop(node);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_calls_are_each_answered_with_their_own_id() {
    let standin = StandIn::start(KEY).await;
    let node = Node::join(&standin, &[CALC], "", "").await;
    standin.registration(1).await;
    let mut frames = standin.subscribe();
    for i in 0..200 {
        standin.execute(&format!("r{i}"), "calculate", json!({"expression": format!("{i} * 3")}));
    }
    let mut results = Vec::new();
    while results.len() < 200 {
        let received = tokio::time::timeout(PATIENCE, frames.recv()).await.expect("200 results").unwrap();
        if received.kind() == "tool_result" {
            results.push(received.frame["data"].clone());
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for result in &results {
        let id = result["requestId"].as_str().unwrap();
        let i: f64 = id[1..].parse().unwrap();
        assert_eq!(content_json(result)["value"], i * 3.0, "{id} got its own answer");
        assert!(seen.insert(id.to_owned()), "{id} answered once");
    }
    let status = node.until("all counted", |s| s.calls_served == 200).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(standin.received().iter().filter(|r| r.kind() == "tool_result").count(), 200, "one result per call");
    assert_eq!(status.calls_in_flight, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_tool_stops_a_spinning_plugin() {
    let standin = StandIn::start(KEY).await;
    let node = Node::join(&standin, &[EXPOSED], "", SPIN_FOREVER).await;
    standin.registration(1).await;
    standin.execute("r-spin", "exposed_spin", json!({}));
    node.until("the call running", |s| s.calls_in_flight == 1).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let asked = Instant::now();
    standin.cancel("r-spin");
    let result = standin.result("r-spin").await;
    let stopped_in = asked.elapsed();
    assert!(error_of(&result).contains("cancel"), "{result}");
    assert!(stopped_in < Duration::from_secs(2), "stopped in {stopped_in:?}");
    node.until("nothing running", |s| s.calls_in_flight == 0).await;
    // The node still serves.
    standin.execute("r-after", "typed_echo", json!({"text": "a", "count": "1", "ratio": "1", "flag": "false", "items": "{}"}));
    content_json(&standin.result("r-after").await);
}

/// A person at the node's terminal: what the test types reaches the
/// approval prompt, and what the prompt writes is on the screen.
struct Person {
    keyboard: std::io::PipeWriter,
    screen: Arc<std::sync::Mutex<Vec<u8>>>,
}

/// The terminal's screen, written by the prompt.
struct Screen(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Screen {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().write(bytes)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Person {
    /// The person, and the approver that asks them.
    fn at_terminal() -> (Person, Arc<dyn Approver>) {
        let (reader, keyboard) = std::io::pipe().unwrap();
        let screen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let approver = Arc::new(TerminalApprover::new(std::io::BufReader::new(reader), Screen(screen.clone())));
        (Person { keyboard, screen }, approver)
    }

    fn types(&mut self, line: &str) {
        use std::io::Write;
        writeln!(self.keyboard, "{line}").unwrap();
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).into_owned()
    }

    /// Wait until `text` is on the screen `times` times.
    async fn sees(&self, text: &str, times: usize) {
        let started = Instant::now();
        while self.screen().matches(text).count() < times {
            assert!(started.elapsed() < PATIENCE, "{text:?} ×{times} not shown within {PATIENCE:?}: {}", self.screen());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// The `communication.timeout` `registration` gives `tool`: how long the
/// server waits for a call of it.
fn registered_timeout(registration: &crate::vcp_standin::Received, tool: &str) -> Duration {
    let tools = registration.frame["data"]["tools"].as_array().unwrap();
    let manifest = tools.iter().find(|t| t["name"] == tool).unwrap_or_else(|| panic!("{tool} is registered"));
    Duration::from_millis(manifest["communication"]["timeout"].as_u64().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_approved_after_its_tools_time_limit_is_answered_before_the_server_gives_up() {
    let standin = StandIn::start(KEY).await;
    let (mut person, approver) = Person::at_terminal();
    let limits = "[limits]\ntimeout_ms = 300\n";
    let _node = Node::join_approved_by(&standin.url(), KEY, &[EXPOSED], "", limits, |_| approver).await;
    let registration = standin.registration(1).await;
    assert_eq!(registered_timeout(&registration, "typed_echo"), Duration::from_millis(1300), "a public tool asks nobody");
    let waits = registered_timeout(&registration, "moderate_echo");
    assert_eq!(waits, Duration::from_millis(300 + 300_000 + 1000), "its limit, the approval window, the margin");

    let sent = Instant::now();
    standin.execute("r-thought", "moderate_echo", json!({"text": "hi"}));
    person.sees("run it?", 1).await;
    // Longer than the tool's limit and the margin together.
    tokio::time::sleep(Duration::from_millis(1600)).await;
    person.types("y");
    let result = standin.result("r-thought").await;
    let answered_after = sent.elapsed();
    assert_eq!(result["result"]["content"][0]["text"], "hi", "{result}");
    assert!(answered_after < waits, "answered after {answered_after:?}; the server waits {waits:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_whose_call_the_server_cancels_is_withdrawn_and_the_next_answer_goes_to_the_next_question() {
    let standin = StandIn::start(KEY).await;
    let (mut person, approver) = Person::at_terminal();
    let _node = Node::join_approved_by(&standin.url(), KEY, &[EXPOSED], "", "", |_| approver).await;
    standin.registration(1).await;
    standin.execute("r-gone", "moderate_echo", json!({"text": "gone"}));
    person.sees("run it?", 1).await;
    standin.cancel("r-gone");
    let result = standin.result("r-gone").await;
    assert!(error_of(&result).contains("cancelled while waiting for approval"), "{result}");
    person.sees("withdrawn: the call was cancelled while it waited for an answer", 1).await;
    // The line typed for the withdrawn question answers nothing …
    person.types("y");
    person.sees("the answer was not used", 1).await;
    // … and the next question gets the next line.
    standin.execute("r-next", "moderate_echo", json!({"text": "next"}));
    person.sees("run it?", 2).await;
    person.types("y");
    assert_eq!(standin.result("r-next").await["result"]["content"][0]["text"], "next");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_key_is_a_clear_error_retried_with_backoff_never_in_a_tight_loop() {
    let standin = StandIn::start(KEY).await;
    let node = Node::join_with(&standin.url(), "wrong-key", &[CALC], "", "").await;
    let status = node.until("a reconnect", |s| s.state == NodeState::Reconnecting).await;
    let error = status.last_error.unwrap();
    assert!(error.contains("key in VCP_KEY is probably wrong"), "{error}");
    assert!(!error.contains("wrong-key"), "the key is never shown: {error}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let attempts = standin.attempts();
    assert!(attempts.iter().all(|a| !a.accepted));
    // initial 50 ms doubling to 400 ms, each wait between half and all of
    // its step: in 1.5 s at most ~12 attempts, never hundreds.
    assert!((3..=14).contains(&attempts.len()), "{} attempts", attempts.len());
    let gaps: Vec<Duration> = attempts.windows(2).map(|w| w[1].at - w[0].at).collect();
    assert!(gaps.iter().all(|g| *g >= Duration::from_millis(25)), "{gaps:?}");
    assert!(gaps.last().unwrap() > &gaps[0], "the waits grow: {gaps:?}");
    assert!(standin.received().is_empty(), "nothing registered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_is_rejoined_and_registered_again() {
    let standin = StandIn::start(KEY).await;
    let node = Node::join(&standin, &[CALC], "", "").await;
    let first = standin.registration(1).await;
    node.until("registered", |s| s.registrations == 1).await;
    standin.restart().await;
    let second = standin.registration(2).await;
    assert_eq!(second.connection, 2);
    assert_eq!(StandIn::tool_names(&first), StandIn::tool_names(&second));
    let status = node.until("the new connection", |s| s.server_id.as_deref() == Some("dist-2")).await;
    assert_eq!(status.registrations, 2);
    standin.execute("r-again", "calculate", json!({"expression": "1+1"}));
    assert_eq!(content_json(&standin.result("r-again").await)["value"], 2.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_lost_mid_call_cancels_the_call_and_the_node_rejoins() {
    let standin = StandIn::start(KEY).await;
    let node = Node::join(&standin, &[EXPOSED], "", SPIN_FOREVER).await;
    standin.registration(1).await;
    standin.execute("r-lost", "exposed_spin", json!({}));
    node.until("the call running", |s| s.calls_in_flight == 1).await;
    let dropped = Instant::now();
    standin.drop_connection();
    node.until("the call ended", |s| s.calls_in_flight == 0).await;
    assert!(dropped.elapsed() < Duration::from_secs(3), "cancelled in {:?}", dropped.elapsed());
    standin.registration(2).await;
    assert!(
        !standin.received().iter().any(|r| r.kind() == "tool_result" && r.frame["data"]["requestId"] == "r-lost"),
        "a result for the lost connection's call is not sent on the new one"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_server_is_taken_for_half_open_and_left() {
    let standin = StandIn::start(KEY).await;
    let node = Node::join(&standin, &[CALC], "", "").await;
    standin.registration(1).await;
    standin.silence();
    // Pings every 200 ms: two silent intervals end the connection.
    let status = node.until("a reconnect", |s| s.last_error.as_deref().is_some_and(|e| e.contains("half-open"))).await;
    assert!(status.last_error.unwrap().contains("2 ping intervals"));
    standin.registration(2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_reload_reconnects_and_registers_the_new_tools() {
    let standin = StandIn::start(KEY).await;
    let node = Node::join(&standin, &[CALC], "", "").await;
    let first = standin.registration(1).await;
    assert_eq!(StandIn::tool_names(&first), ["calculate"]);
    std::fs::copy(EXPOSED.path(), node.host.dir.path().join("plugins/exposed.wasm")).unwrap();
    node.host.registry.reload().await.unwrap();
    let second = standin.registration(2).await;
    assert_eq!(second.connection, 2, "the server ignores a second registration on a live connection");
    assert!(StandIn::tool_names(&second).contains(&"typed_echo".to_owned()));
    assert_eq!(standin.closes(), 1, "the old connection was closed cleanly");
    // A reload that changes nothing exposed keeps the connection.
    node.host.registry.reload().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(standin.received().iter().filter(|r| r.kind() == "register_tools").count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_are_refused_by_default_and_served_only_from_an_allowed_directory() {
    let standin = StandIn::start(KEY).await;
    let node = Node::join(&standin, &[CALC], "", "").await;
    standin.registration(1).await;
    let secret = node.host.dir.path().join("toolhost.toml");
    standin.execute("f-default", "internal_request_file", json!({"fileUrl": format!("file://{}", secret.display())}));
    let refused = standin.result("f-default").await;
    assert!(error_of(&refused).contains("serves no files"), "{refused}");
    drop(node);

    let standin = StandIn::start(KEY).await;
    let served = "serve_dirs = [\"shared\"]\nmax_file_kib = 1\n[vcp.unattended]\nmoderate = \"allow\"\n";
    let node = Node::join(&standin, &[CALC], served, "").await;
    let dir = node.host.dir.path();
    let shared = dir.join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::write(shared.join("note.txt"), "hello from the node").unwrap();
    std::fs::write(shared.join("big.txt"), vec![b'x'; 2048]).unwrap();
    std::os::unix::fs::symlink(dir.join("toolhost.toml"), shared.join("link.txt")).unwrap();
    standin.registration(1).await;
    let url = |path: &std::path::Path| format!("file://{}", path.display());
    standin.execute("f-ok", "internal_request_file", json!({"fileUrl": url(&shared.join("note.txt"))}));
    let served = standin.result("f-ok").await;
    assert_eq!(served["status"], "success", "{served}");
    assert_eq!(served["result"]["status"], "success");
    assert_eq!(served["result"]["mimeType"], "text/plain");
    assert_eq!(served["result"]["fileData"], "aGVsbG8gZnJvbSB0aGUgbm9kZQ==");
    for (id, path, says) in [
        ("f-out", url(&dir.join("toolhost.toml")), "not inside a directory"),
        ("f-climb", format!("{}/../toolhost.toml", url(&shared)), "climbs"),
        ("f-link", url(&shared.join("link.txt")), "cannot be served"),
        ("f-big", url(&shared.join("big.txt")), "over the limit of 1024 bytes"),
        ("f-dir", url(&shared), "not a regular file"),
    ] {
        standin.execute(id, "internal_request_file", json!({"fileUrl": path}));
        let refused = standin.result(id).await;
        assert!(error_of(&refused).contains(says), "{id}: {refused}");
    }
}

/// The audit log's records of file requests.
fn file_requests_audited(node: &Node) -> Vec<Value> {
    let audit = std::fs::read_to_string(node.host.dir.path().join("audit.jsonl")).unwrap_or_default();
    audit.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|r| r["tool"] == "internal_request_file").collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_request_is_approved_and_audited_like_a_call_of_a_moderate_tool() {
    const AUDITED: &str = "[approval]\naudit_log = \"audit.jsonl\"\n";
    let serve = |unattended: &str| format!("serve_dirs = [\"shared\"]\n[vcp.unattended]\nmoderate = \"{unattended}\"\n");
    let note = |node: &Node| {
        let shared = node.host.dir.path().join("shared");
        std::fs::create_dir_all(&shared).unwrap();
        std::fs::write(shared.join("note.txt"), "hello").unwrap();
        json!({"fileUrl": format!("file://{}", shared.join("note.txt").display())})
    };

    // Nobody attached, and the unattended policy denies moderate calls.
    let standin = StandIn::start(KEY).await;
    let node = Node::join(&standin, &[CALC], &serve("deny"), AUDITED).await;
    standin.registration(1).await;
    standin.execute("f-unattended", "internal_request_file", note(&node));
    let denied = standin.result("f-unattended").await;
    let message = error_of(&denied);
    assert!(message.contains("needs approval") && message.contains("[vcp.unattended] moderate = \"deny\""), "{message}");
    let records = file_requests_audited(&node);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!((&records[0]["decision"], &records[0]["status"]), (&json!("deny"), &json!("denied")), "{}", records[0]);
    assert_eq!(
        (&records[0]["plugin"], &records[0]["agent"]),
        (&json!("toolhost"), &json!(format!("vcp:127.0.0.1:{}", standin.port)))
    );
    drop(node);

    // The policy lets it run: served, and audited as run.
    let standin = StandIn::start(KEY).await;
    let node = Node::join(&standin, &[CALC], &serve("allow"), AUDITED).await;
    standin.registration(1).await;
    standin.execute("f-allowed", "internal_request_file", note(&node));
    assert_eq!(standin.result("f-allowed").await["result"]["fileData"], "aGVsbG8=");
    let records = file_requests_audited(&node);
    assert_eq!((&records[0]["decision"], &records[0]["status"]), (&json!("run"), &json!("success")), "{}", records[0]);
    drop(node);

    // A deny rule holds whatever the unattended policy allows.
    let standin = StandIn::start(KEY).await;
    let rule = "[[approval.rules]]\naction = \"deny\"\ntool = \"internal_request_file\"\nreason = \"no files today\"\n";
    let node = Node::join(&standin, &[CALC], &serve("allow"), &format!("{AUDITED}{rule}")).await;
    standin.registration(1).await;
    standin.execute("f-rule", "internal_request_file", note(&node));
    assert_eq!(error_of(&standin.result("f-rule").await), "no files today");
    assert_eq!(file_requests_audited(&node)[0]["reason"], "no files today");
}

/// How the audit log's last record of request `tool` says it was decided
/// and how it ended: what a call and a file request must share.
fn last_decided(node: &Node, tool: &str) -> Value {
    let audit = std::fs::read_to_string(node.host.dir.path().join("audit.jsonl")).unwrap();
    let records: Vec<Value> = audit.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let last = records.iter().rev().find(|r| r["tool"] == tool && r.get("status").is_some());
    let last = last.unwrap_or_else(|| panic!("{tool} is audited: {records:?}"));
    json!({ "decision": last["decision"], "by": last["by"], "reason": last.get("reason"), "status": last["status"] })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_request_waits_for_a_person_and_is_cancelled_denied_and_remembered_as_a_call_is() {
    let standin = StandIn::start(KEY).await;
    let (mut person, approver) = Person::at_terminal();
    let serve = "serve_dirs = [\"shared\"]\n";
    let audited = "[approval]\naudit_log = \"audit.jsonl\"\n";
    let node = Node::join_approved_by(&standin.url(), KEY, &[EXPOSED], serve, audited, |_| approver).await;
    let shared = node.host.dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::write(shared.join("note.txt"), "hello").unwrap();
    let note = json!({"fileUrl": format!("file://{}", shared.join("note.txt").display())});
    standin.registration(1).await;
    let mut asked = 0;

    // Cancelled by the server while the person thinks: withdrawn, and
    // audited as cancelled with no decision.
    for (id, tool, args) in [("c-call", "moderate_echo", json!({"text": "x"})), ("c-file", "internal_request_file", note.clone())]
    {
        standin.execute(id, tool, args);
        asked += 1;
        person.sees(&format!("{tool}: run it? [y/a/n/all/none]"), 1).await;
        standin.cancel(id);
        let result = standin.result(id).await;
        assert!(error_of(&result).contains("cancelled while waiting for approval"), "{id}: {result}");
        person.sees("withdrawn: the call was cancelled while it waited for an answer", asked).await;
        person.types("y");
        person.sees("the answer was not used", asked).await;
    }
    let cancelled = json!({"decision": null, "by": null, "reason": null, "status": "cancelled"});
    assert_eq!(last_decided(&node, "moderate_echo"), cancelled);
    assert_eq!(last_decided(&node, "internal_request_file"), cancelled);

    // Denied by the person, with their words for the caller.
    for (id, tool, args) in [("n-call", "moderate_echo", json!({"text": "x"})), ("n-file", "internal_request_file", note.clone())]
    {
        standin.execute(id, tool, args);
        asked += 1;
        person.sees("run it?", asked).await;
        person.types("n not today");
        assert!(error_of(&standin.result(id).await).contains("not today"), "{id}");
    }
    let denied = json!({"decision": "deny", "by": "person", "reason": "not today", "status": "denied"});
    assert_eq!(last_decided(&node, "moderate_echo"), denied);
    assert_eq!(last_decided(&node, "internal_request_file"), denied);

    // "Always": the next request runs unasked, by the remembered answer.
    standin.execute("a-file", "internal_request_file", note.clone());
    asked += 1;
    person.sees("run it?", asked).await;
    person.types("a");
    assert_eq!(standin.result("a-file").await["result"]["fileData"], "aGVsbG8=");
    assert_eq!(last_decided(&node, "internal_request_file")["by"], "person");
    standin.execute("a-file-again", "internal_request_file", note);
    assert_eq!(standin.result("a-file-again").await["result"]["fileData"], "aGVsbG8=");
    assert_eq!(
        last_decided(&node, "internal_request_file"),
        json!({"decision": "run", "by": "remembered", "reason": null, "status": "success"})
    );
    assert_eq!(person.screen().matches("run it?").count(), asked, "the remembered request asked nobody");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_running_calls_finish_within_the_grace_period_then_closes() {
    let standin = StandIn::start(KEY).await;
    let mut node = Node::join(&standin, &[EXPOSED], "shutdown_grace_ms = 3000\n", "").await;
    standin.registration(1).await;
    standin.execute("r-wait", "exposed_wait", json!({"ms": "300"}));
    node.until("the call running", |s| s.calls_in_flight == 1).await;
    node.stop().await;
    assert_eq!(standin.result("r-wait").await["result"]["content"][0]["text"], "waited");
    standin.wait_until("a close frame", |_| (standin.closes() == 1).then_some(())).await;
    assert_eq!(node.node.status().state, NodeState::Stopped);
}

/// The reply a VCP server's chat endpoint gives a client: two rounds of
/// calls, the server's summary after each, then the answer.
const SERVER_REPLY: &str = "Let me compute.\n\
<<<[TOOL_REQUEST]>>>\ntool_name:「始」calculate「末」,\nexpression:「始」1+1「末」\n<<<[END_TOOL_REQUEST]>>>\n\
<<<[TOOL_REQUEST]>>>\ntool_name:「始」FileOperator「末」,\ncommand:「始」ReadFile「末」\n<<<[END_TOOL_REQUEST]>>>\n\
[本轮工具调用摘要:]\ncalculate 调用成功。\nFileOperator 调用拒绝。\n[本轮工具调用摘要结束]\nAnd a slow one.\n\
<<<[TOOL_REQUEST]>>>\ntool_name:「始」exposed_wait「末」,\nms:「始」1「末」\n<<<[END_TOOL_REQUEST]>>>\n\
[本轮工具调用摘要:]\nexposed_wait 调用超时。\n[本轮工具调用摘要结束]\nThe answer is 2.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_through_the_vcp_server_runs_nothing_here_and_reports_the_servers_statuses() {
    use toolhost::{Chain, ChainEvent, OpenAiClient, Status, Stop, ToolCallConfig, Transcript, llm::LlmProfile, vcp::Handover};
    let standin = StandIn::start(KEY).await;
    let node = Node::join(&standin, &[CALC, EXPOSED], "", "[approval]\naudit_log = \"audit.jsonl\"\n").await;
    node.until("connected", |s| s.state == NodeState::Connected).await;
    let model = toolhost_standin::StandIn::start([toolhost_standin::Response::text(SERVER_REPLY)]).await.unwrap();
    let llm = Arc::new(OpenAiClient::new(LlmProfile::new(model.base_url(), "vcp-agent")).unwrap());
    let mut config = ToolCallConfig::on();
    config.system_prompt = Some("Tools here:\n{{tools}}\nEnd.".into());
    let approvals = Arc::new(Approvals::new(&node.host.config.approval));
    let pipeline = Pipeline::new(node.host.executor.clone(), approvals, Arc::new(UnattendedApprover::default()));
    let chain = Chain::new(llm, pipeline, "hub", config).unwrap().handing_over(Handover::to_node(&node.node));

    let prompt = chain.system_prompt().text.clone();
    assert!(prompt.contains("calculate") && prompt.contains("typed_echo"), "the node's tools while connected: {prompt}");
    assert!(!prompt.contains("unexposed_echo"), "{prompt}");

    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = events.clone();
    let on_event = move |event: ChainEvent| sink.lock().unwrap().push(event);
    let mut transcript = Transcript::in_memory();
    let stop = chain.send(&mut transcript, "what is 1+1?", &on_event, &CancellationToken::new()).await.unwrap();
    assert_eq!(stop, Stop::Answered);
    assert_eq!(model.requests().len(), 1, "the chain does not loop: the server did");
    assert!(model.requests()[0].messages()[0]["content"].as_str().unwrap().contains("calculate"));

    let events = events.lock().unwrap().clone();
    let statuses: Vec<(String, Status)> = events
        .iter()
        .filter_map(|e| match e {
            ChainEvent::Outcome { tool, status, .. } => Some((tool.clone(), *status)),
            _ => None,
        })
        .collect();
    assert_eq!(
        statuses,
        [
            ("calculate".to_owned(), Status::Success),
            ("FileOperator".to_owned(), Status::Denied),
            ("exposed_wait".to_owned(), Status::TimedOut),
        ]
    );
    let parsed: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            ChainEvent::CallsParsed { calls, .. } => Some(calls.len()),
            _ => None,
        })
        .collect();
    assert_eq!(parsed, [2, 1], "the server's two rounds, with their raw blocks parsed");
    assert!(!events.iter().any(|e| matches!(e, ChainEvent::Executing { .. } | ChainEvent::AwaitingApproval { .. })));
    let audit = std::fs::read_to_string(node.host.dir.path().join("audit.jsonl")).unwrap_or_default();
    assert_eq!(audit, "", "nothing ran or was even checked here");
    assert!(transcript.unanswered().is_empty(), "no call is left for the chain to answer");
    assert!(
        transcript
            .entries()
            .iter()
            .any(|e| matches!(e, toolhost::transcript::Entry::Assistant { content, .. } if content == SERVER_REPLY))
    );

    // Not connected: the model is told about no tools nobody could run.
    standin.stop();
    node.until("disconnected", |s| s.state != NodeState::Connected).await;
    let prompt = chain.system_prompt().text.clone();
    assert_eq!(prompt, "Tools here:\n\nEnd.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handover_to_a_node_another_process_runs_follows_its_status_file_without_reading_it_per_prompt() {
    use toolhost::vcp::Handover;
    let standin = StandIn::start(KEY).await;
    let mut node = Node::join(&standin, &[CALC], "", "").await;
    node.until("connected", |s| s.state == NodeState::Connected).await;
    let config = node.node.config().clone();
    let handover = Handover::to_status_file(&config);
    let settles_on = |expected: &'static [&'static str], why: &'static str| {
        let handover = handover.clone();
        async move {
            let deadline = Instant::now() + PATIENCE;
            while handover.tools() != expected {
                assert!(Instant::now() < deadline, "{why}: {:?}", handover.tools());
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    settles_on(&["calculate"], "the status file never said connected").await;
    // Asking reads no file: the status comes through a channel.
    let kept = std::fs::read(&config.status_file).unwrap();
    std::fs::remove_file(&config.status_file).unwrap();
    assert_eq!(handover.tools(), ["calculate"], "the tools were not read from the file for this prompt");
    std::fs::write(&config.status_file, kept).unwrap();
    node.stop().await;
    settles_on(&[], "a stopped node offers nothing").await;
    // A node that was killed leaves `connected` behind.
    let mut left = NodeStatus::read(&config.status_file).unwrap();
    left.state = NodeState::Connected;
    left.registered = vec!["calculate".into()];
    left.pid = u32::MAX;
    left.write(&config.status_file).unwrap();
    tokio::time::sleep(toolhost::vcp::STATUS_FILE_POLL * 3).await;
    assert_eq!(handover.tools(), Vec::<String>::new(), "its process is gone");
    left.pid = std::process::id();
    left.write(&config.status_file).unwrap();
    settles_on(&["calculate"], "a live node's status is followed").await;
}

/// The `toolhost` binary, as the workspace's release build leaves it
/// (`cargo xtask test` builds it before the tests run).
fn toolhost_binary() -> std::path::PathBuf {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/toolhost");
    assert!(
        path.exists(),
        "{} is not built; run `cargo build --release -p toolhost-cli` (cargo xtask test does)",
        path.display()
    );
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_command_joins_the_server_and_its_calculate_answers_then_ctrl_c_ends_it_cleanly() {
    let standin = StandIn::start(KEY).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    std::fs::copy(CALC.path(), dir.path().join("plugins/calc.wasm")).unwrap();
    let node = std::process::Command::new(toolhost_binary())
        .current_dir(dir.path())
        .env("VCP_KEY", KEY)
        .env("XDG_CACHE_HOME", crate::support::shared_cache().parent().unwrap())
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .args(["--plugins", "plugins", "node", "--server", &standin.url(), "--key-env", "VCP_KEY"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let registration = standin.registration(1).await;
    assert!(StandIn::tool_names(&registration).contains(&"calculate".to_owned()));
    standin.execute("r-cli", "calculate", json!({ "expression": "6 * 7" }));
    assert_eq!(content_json(&standin.result("r-cli").await)["value"], 42.0);

    let pid = node.id().to_string();
    assert!(std::process::Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
    let output = tokio::time::timeout(PATIENCE, tokio::task::spawn_blocking(move || node.wait_with_output()))
        .await
        .expect("the node ends after Ctrl-C")
        .unwrap()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(!String::from_utf8_lossy(&output.stderr).contains(KEY), "the key is never shown");
}

/// How a [`Hostile`] server reads what the node sends.
#[derive(Clone, Copy)]
enum Reading {
    /// One frame, then a pause: a slow reader.
    Slowly(Duration),
    /// Not at all, after the node registered.
    Never,
}

/// Frames made one at a time, as they are sent.
type Frames = Box<dyn Iterator<Item = String> + Send>;

/// A hostile VCP server on loopback: it takes any key, acknowledges, and
/// once told to [`go`](Hostile::go) sends `frames` on every connection,
/// then reads as `reading` says. Results are dropped as they come; only
/// their status and error are kept.
struct Hostile {
    url: String,
    connections: Arc<std::sync::atomic::AtomicUsize>,
    results: Arc<std::sync::Mutex<Vec<(String, String)>>>,
    go: Arc<tokio::sync::Semaphore>,
}

impl Hostile {
    async fn start(frames: impl Fn() -> Frames + Send + Sync + 'static, reading: Reading) -> Hostile {
        use futures::{SinkExt, StreamExt};
        use tokio_tungstenite::tungstenite::Message;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}", listener.local_addr().unwrap());
        let hostile =
            Hostile { url, connections: Arc::default(), results: Arc::default(), go: Arc::new(tokio::sync::Semaphore::new(0)) };
        let (connections, results, frames, go) =
            (hostile.connections.clone(), hostile.results.clone(), Arc::new(frames), hostile.go.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (connections, results, frames, go) = (connections.clone(), results.clone(), frames.clone(), go.clone());
                tokio::spawn(async move {
                    let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else { return };
                    connections.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let ack = json!({"type": "connection_ack", "data": {"serverId": "hostile", "clientId": "1"}});
                    ws.send(Message::text(ack.to_string())).await.unwrap();
                    // register_tools, report_ip, update_static_placeholders.
                    for _ in 0..3 {
                        ws.next().await;
                    }
                    go.acquire().await.unwrap().forget();
                    for frame in frames() {
                        if ws.send(Message::text(frame)).await.is_err() {
                            return;
                        }
                    }
                    let Reading::Slowly(pause) = reading else {
                        std::future::pending::<()>().await;
                        return;
                    };
                    while let Some(Ok(message)) = ws.next().await {
                        if let Message::Text(text) = message {
                            let frame: Value = serde_json::from_str(&text).unwrap_or_default();
                            let data = &frame["data"];
                            let error = data["error"].as_str().unwrap_or_default().to_owned();
                            results.lock().unwrap().push((data["status"].as_str().unwrap_or_default().to_owned(), error));
                        }
                        tokio::time::sleep(pause).await;
                    }
                });
            }
        });
        hostile
    }

    /// Send the frames, on this connection and every later one.
    fn go(&self) {
        self.go.add_permits(1 << 20);
    }

    fn results(&self) -> Vec<(String, String)> {
        self.results.lock().unwrap().clone()
    }

    /// Wait until the results satisfy `ok`.
    async fn until(&self, what: &str, ok: impl Fn(&[(String, String)]) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !ok(&self.results()) {
            assert!(Instant::now() < deadline, "no {what} within 30 s: {} results", self.results().len());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn execute_frame(id: &str, tool: &str, args: Value) -> String {
    json!({"type": "execute_tool", "data": {"requestId": id, "toolName": tool, "toolArgs": args}}).to_string()
}

/// The most a hostile VCP server may make this process grow.
const NODE_MEMORY_BOUND: usize = 256 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_waiting_are_bounded_in_bytes_not_only_in_count() {
    if !crate::support::alone(module_path!(), "calls_waiting_are_bounded_in_bytes_not_only_in_count") {
        return;
    }
    // Two slow calls hold the plugin's place; forty 8 MiB calls queue behind.
    let frames = || -> Frames {
        let slow = (0..2).map(|i| execute_frame(&format!("w{i}"), "exposed_wait", json!({"ms": 6000})));
        let big = (0..40).map(|i| {
            let args = json!({"text": "x".repeat(8 << 20), "count": 1, "ratio": 1, "flag": true, "items": []});
            execute_frame(&format!("big{i}"), "typed_echo", args)
        });
        Box::new(slow.chain(big))
    };
    let hostile = Hostile::start(frames, Reading::Slowly(Duration::ZERO)).await;
    let node = Node::join_with(&hostile.url, KEY, &[EXPOSED], "", "").await;
    node.until("registered", |s| s.registrations == 1).await;
    let grew = crate::support::within_memory(NODE_MEMORY_BOUND, async {
        hostile.go();
        let refused = |results: &[(String, String)]| results.iter().filter(|(_, e)| e.contains("MAX_PENDING_BYTES")).count();
        hostile.until("refusals", |results| refused(results) >= 30).await;
        let refusal = hostile.results().into_iter().find(|(_, e)| e.contains("MAX_PENDING_BYTES")).unwrap().1;
        assert!(refusal.contains("64 MiB"), "{refusal}");
    })
    .await
    .unwrap_or_else(|grew| panic!("the node grew {} MiB", grew >> 20))
    .1;
    eprintln!("grew {} MiB", grew >> 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_served_to_a_slow_reader_are_bounded_in_bytes_in_flight() {
    if !crate::support::alone(module_path!(), "files_served_to_a_slow_reader_are_bounded_in_bytes_in_flight") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.bin"), vec![7u8; 4 << 20]).unwrap();
    let url = format!("file://{}", dir.path().join("big.bin").display());
    let frames = move || -> Frames {
        let url = url.clone();
        Box::new((0..60).map(move |i| execute_frame(&format!("f{i}"), "internal_request_file", json!({"fileUrl": url}))))
    };
    let vcp = format!("serve_dirs = [\"{}\"]\n[vcp.unattended]\nmoderate = \"allow\"\n", dir.path().display());
    let hostile = Hostile::start(frames, Reading::Slowly(Duration::from_millis(30))).await;
    let node = Node::join_with(&hostile.url, KEY, &[CALC], &vcp, "").await;
    node.until("registered", |s| s.registrations == 1).await;
    let grew = crate::support::within_memory(NODE_MEMORY_BOUND, async {
        hostile.go();
        hostile.until("every file", |results| results.len() >= 60).await;
        let failed = hostile.results().into_iter().find(|(status, _)| status != "success");
        assert!(failed.is_none(), "{failed:?}");
    })
    .await
    .unwrap_or_else(|grew| panic!("the node grew {} MiB", grew >> 20))
    .1;
    eprintln!("grew {} MiB", grew >> 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_reading_is_left_after_the_write_timeout_and_rejoined() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.bin"), vec![7u8; 4 << 20]).unwrap();
    let url = format!("file://{}", dir.path().join("big.bin").display());
    let frames = move || -> Frames {
        let url = url.clone();
        Box::new((0..10).map(move |i| execute_frame(&format!("f{i}"), "internal_request_file", json!({"fileUrl": url}))))
    };
    let vcp =
        format!("write_timeout_ms = 500\nserve_dirs = [\"{}\"]\n[vcp.unattended]\nmoderate = \"allow\"\n", dir.path().display());
    let hostile = Hostile::start(frames, Reading::Never).await;
    hostile.go();
    let node = Node::join_with(&hostile.url, KEY, &[CALC], &vcp, "").await;
    let status = node.until("a write timeout", |s| s.last_error.as_deref().is_some_and(|e| e.contains("write_timeout_ms"))).await;
    assert!(status.last_error.unwrap().contains("did not take what the node wrote within 500ms"));
    node.until("a second connection", |s| s.registrations >= 2).await;
    assert!(hostile.connections.load(std::sync::atomic::Ordering::SeqCst) >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_plugins_slow_calls_do_not_starve_another_plugins_quick_call() {
    let standin = StandIn::start(KEY).await;
    let node = Node::join(&standin, &[EXPOSED, CALC], "", "").await;
    standin.registration(1).await;
    for i in 0..10 {
        standin.execute(&format!("slow{i}"), "exposed_wait", json!({"ms": 4000}));
    }
    node.until("the slow calls in", |s| s.calls_in_flight == 10).await;
    let asked = Instant::now();
    standin.execute("quick", "calculate", json!({"expression": "2 + 2"}));
    assert_eq!(content_json(&standin.result("quick").await)["value"], 4.0);
    assert!(asked.elapsed() < Duration::from_secs(2), "the quick call waited {:?}", asked.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugins_quick_call_does_not_wait_behind_its_own_slow_calls_while_the_node_has_room() {
    let standin = StandIn::start(KEY).await;
    let node = Node::join_at_node_concurrency(&standin, &[EXPOSED]).await;
    standin.registration(1).await;
    // Its half of the node's slots: the share it always has.
    let half = NODE_CONCURRENCY / 2;
    for i in 0..half {
        standin.execute(&format!("slow{i}"), "exposed_wait", json!({"ms": 4000}));
    }
    node.until("the slow calls in", |s| s.calls_in_flight == half as u64).await;
    let asked = Instant::now();
    standin.execute("quick", "exposed_wait", json!({"ms": 0}));
    let quick = standin.result("quick").await;
    assert_eq!(quick["result"]["content"][0]["text"], "waited", "{quick}");
    assert!(asked.elapsed() < Duration::from_secs(2), "the quick call waited {:?}", asked.elapsed());
}

/// The console's API, as its page uses it (the token as a bearer header).
async fn console_api(console: &Console, base: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
    let mut request = reqwest::Client::new().request(method, format!("{base}{path}")).bearer_auth(console.token());
    if let Some(body) = body {
        request = request.json(&body);
    }
    request.send().await.expect("the console answers").json().await.expect("JSON")
}

/// Wait until `count` requests wait at the console's desk.
async fn console_pending(console: &Console, base: &str, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let desk = console_api(console, base, reqwest::Method::GET, "/api/pending", None).await;
        let pending = desk["pending"].as_array().cloned().unwrap_or_default();
        if pending.len() == count {
            return pending;
        }
        assert!(Instant::now() < deadline, "{count} pending never came: {desk}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_from_the_server_waits_at_the_console_and_its_cancel_withdraws_it() {
    let standin = StandIn::start(KEY).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let base = format!("http://{addr}");
    let console = Arc::new(std::sync::OnceLock::<Console>::new());
    let server = standin.url();
    let node = Node::join_asking(&server, KEY, &[EXPOSED], "", "", |_, pipeline| {
        let made = Console::new(pipeline.clone(), ConsoleOptions::default(), addr);
        let asking = pipeline.with_approver(Arc::new(made.approver("vcp", &server)));
        console.set(made).ok().expect("set once");
        asking
    })
    .await;
    let console = console.get().unwrap().clone();
    tokio::spawn({
        let (console, shutdown) = (console.clone(), node.shutdown.clone());
        async move { console.serve(listener, shutdown).await }
    });
    standin.registration(1).await;

    // Approved in the console: it runs, and the server gets its result.
    standin.execute("r-ok", "moderate_echo", json!({"text": "hi"}));
    let pending = console_pending(&console, &base, 1).await;
    assert_eq!((pending[0]["door"].as_str(), pending[0]["caller"].as_str()), (Some("vcp"), Some(server.as_str())), "{pending:?}");
    assert_eq!(pending[0]["calls"][0]["args"], json!({"text": "hi"}));
    let id = pending[0]["id"].as_u64().unwrap();
    console_api(&console, &base, reqwest::Method::POST, &format!("/api/pending/{id}"), Some(json!({"verdict": "allow"}))).await;
    assert_eq!(standin.result("r-ok").await["result"]["content"][0]["text"], "hi");

    // The server gives up on the next: the question is withdrawn.
    standin.execute("r-gone", "moderate_echo", json!({"text": "late"}));
    console_pending(&console, &base, 1).await;
    standin.cancel("r-gone");
    let result = standin.result("r-gone").await;
    assert!(error_of(&result).contains("cancel"), "{result}");
    console_pending(&console, &base, 0).await;
}
