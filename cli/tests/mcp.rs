//! `toolhost mcp`, against real peers: the official MCP Python client over
//! stdio and streamable HTTP (driven by `tests/mcp/client.py`, which
//! prints what it saw; the assertions are here), the official conformance
//! suite, and two stateless servers behind Debian's nginx.
//!
//! The peers are installed by `cargo xtask test` (or `cargo xtask
//! mcp-clients`) under `target/toolchains/mcp/`.

mod support;

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use support::{in_test_home, text};

fn toolchains() -> PathBuf {
    support::toolchains().join("mcp")
}

fn workspace() -> tempfile::TempDir {
    support::workspace_with_hostile()
}

/// `toolhost mcp ARGS` as an MCP client starts it, in `cwd`.
fn toolhost_mcp(cwd: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    in_test_home(&mut command).current_dir(cwd).env_remove("RUST_LOG").arg("mcp").args(args);
    command
}

/// Run the client script's `scenario` against `server` (`--stdio CMD…`
/// or `--http URL …`) from `cwd`, and read what it printed.
fn client(cwd: &Path, scenario: &[&str], server: &[String]) -> Value {
    client_as("session", cwd, scenario, server)
}

/// [`client`] with the SDK's `Client` in `mode` (`legacy`, `auto` or
/// `2026-07-28`), or `session` for a `ClientSession` after the handshake.
fn client_as(mode: &str, cwd: &Path, scenario: &[&str], server: &[String]) -> Value {
    let mut command = Command::new(support::mcp_python());
    command.current_dir(cwd).arg(support::mcp_client_script()).args(["--mode", mode]);
    // `--stdio CMD ARG…` takes the rest of the line.
    let (stdio, http) = if server.first().is_some_and(|s| s == "--stdio") { (true, false) } else { (false, true) };
    if http {
        command.args(server);
    }
    command.args(scenario);
    if stdio {
        command.args(server);
    }
    let output = command.output().expect("the Python client runs");
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "client.py {scenario:?} failed: {}\n{stdout}", text(&output.stderr));
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("client.py printed no JSON ({e}): {stdout}"))
}

/// The `--stdio` arguments that make the client start `toolhost mcp ARGS`
/// in the test home.
fn over_stdio(args: &[&str]) -> Vec<String> {
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    // The client starts the server with its own environment: `env` sets
    // the test home for it.
    let mut line: Vec<String> = vec!["--stdio".into(), "env".into(), "-u".into(), "RUST_LOG".into()];
    for (key, dir) in [
        ("XDG_CONFIG_HOME", "toolhost-test-config"),
        ("XDG_CACHE_HOME", "toolhost-test-cache"),
        ("XDG_STATE_HOME", "toolhost-test-state"),
        ("XDG_DATA_HOME", "toolhost-test-data"),
    ] {
        line.push(format!("{key}={}", target.join(dir).display()));
    }
    line.push(env!("CARGO_BIN_EXE_toolhost").into());
    line.push("mcp".into());
    line.extend(args.iter().map(|a| a.to_string()));
    line
}

/// A `toolhost mcp --http` server, killed when dropped.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    /// Start `toolhost mcp --http 127.0.0.1:0 EXTRA` in `cwd` and wait for
    /// the URL it prints.
    fn start(cwd: &Path, extra: &[&str], envs: &[(&str, &str)]) -> HttpServer {
        let mut command = toolhost_mcp(cwd, &["--http", "127.0.0.1:0"]);
        command.args(extra).envs(envs.iter().copied());
        HttpServer::spawn(command)
    }

    /// Start `command`, a `toolhost mcp --http` however started, and wait
    /// for the URL it prints.
    fn spawn(mut command: Command) -> HttpServer {
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = command.spawn().expect("toolhost mcp starts");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut seen = String::new();
        let url = loop {
            let mut line = String::new();
            if stderr.read_line(&mut line).unwrap() == 0 {
                panic!("toolhost mcp --http ended before serving: {seen}");
            }
            seen.push_str(&line);
            if let Some(at) = line.find("http://") {
                break line[at..].split_whitespace().next().unwrap().to_owned();
            }
        };
        // Keep reading stderr so that the server never blocks on it.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        HttpServer { child, url }
    }

    fn authority(&self) -> &str {
        self.url.trim_start_matches("http://").split('/').next().unwrap()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The status code of a raw `initialize` POST to `server` with `headers`.
fn post_status(server: &HttpServer, headers: &[(&str, &str)]) -> u16 {
    post(server, headers).0
}

/// A raw `initialize` POST to `server` with `headers`: the status code and
/// what of the response arrived within a second.
fn post(server: &HttpServer, headers: &[(&str, &str)]) -> (u16, String) {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if !headers.iter().any(|(name, _)| *name == "Host") {
        request.push_str(&format!("Host: {}\r\n", server.authority()));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    let mut stream = TcpStream::connect(server.authority()).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut status = [0u8; 12];
    stream.read_exact(&mut status).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest);
    (text(&status[9..12]).parse().unwrap(), text(&rest))
}

/// What every transport must show of the basics: the list, a result with
/// structured content, a bad argument and a limit as tool errors the
/// model can read, a sensitive call denied (the client cannot be asked)
/// with the reason, an unknown tool as a protocol error, and the server
/// still serving after all that.
fn assert_basics(seen: &Value) {
    let tools: Vec<&str> = seen["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    for tool in ["calculate", "read_file", "write_file", "spin"] {
        assert!(tools.contains(&tool), "{tool} is offered: {tools:?}");
    }
    assert!(!tools.contains(&"exhaust_memory"), "only agent-callable tools are offered: {tools:?}");
    assert_eq!(seen["calculate"]["title"], "Calculate");
    assert_eq!((&seen["calculate"]["read_only"], &seen["calculate"]["destructive"]), (&Value::Bool(true), &Value::Bool(false)));
    assert_eq!(seen["write_file"]["destructive"], true, "sensitive is destructive: {}", seen["write_file"]);
    assert_eq!(seen["calculate"]["schema"]["required"][0], "expression");
    assert_eq!(seen["calculate"]["schema"]["properties"]["expression"]["type"], "string");

    assert_eq!(seen["sum"]["is_error"], false, "{}", seen["sum"]);
    assert_eq!(seen["sum"]["structured"]["value"], 42.0);
    assert_eq!(seen["bad_argument"]["is_error"], true);
    assert!(
        seen["bad_argument"]["text"].as_str().unwrap().contains("needs the parameter `expression`"),
        "{}",
        seen["bad_argument"]
    );
    let limit = &seen["limit"];
    assert_eq!(limit["is_error"], true, "{limit}");
    assert!(limit["text"].as_str().unwrap().contains("out of fuel after 1 000 000 000 units"), "{limit}");
    assert_eq!(limit["meta"]["toolhost/failure"]["limit"]["name"], "fuel", "{limit}");
    let sensitive = &seen["sensitive"];
    assert_eq!(sensitive["is_error"], true, "{sensitive}");
    let why = sensitive["text"].as_str().unwrap();
    assert!(why.starts_with("denied: `write_file` (plugin files) needs approval because it is sensitive"), "{why}");
    assert!(why.contains("[mcp] unattended = \"deny\""), "{why}");
    assert!(seen["unknown"]["protocol_error"].as_str().unwrap().contains("did you mean `calculate`?"), "{}", seen["unknown"]);
    assert_eq!(seen["after"]["structured"]["value"], 2.0, "the server still serves: {}", seen["after"]);
    // No cursor was ever given out: one is a bad parameter.
    assert_eq!(seen["bogus_cursor"]["code"], -32602, "{}", seen["bogus_cursor"]);
}

#[test]
fn stdio_lists_calls_names_limits_and_denies_what_nobody_can_approve() {
    let dir = workspace();
    let seen = client(dir.path(), &["basics"], &over_stdio(&[]));
    assert_basics(&seen);
    assert!(!dir.path().join("ws/note.txt").exists(), "the denied write did not happen");
}

#[test]
fn http_needs_the_token_and_a_loopback_host_and_serves_the_same() {
    let dir = workspace();
    let server = HttpServer::start(dir.path(), &["--token-env", "MCP_TEST_TOKEN"], &[("MCP_TEST_TOKEN", "s3cret")]);
    assert_eq!(post_status(&server, &[]), 401, "no token");
    assert_eq!(post_status(&server, &[("Authorization", "Bearer wrong")]), 401, "a wrong token");
    let with_token = ("Authorization", "Bearer s3cret");
    assert_eq!(post_status(&server, &[with_token]), 200, "the token");
    assert_eq!(post_status(&server, &[("Authorization", "bearer s3cret")]), 200, "the scheme in any case");
    assert_eq!(post_status(&server, &[with_token, ("Host", "evil.example.com")]), 403, "a rebound host name");
    assert_eq!(post_status(&server, &[with_token, ("Origin", "http://evil.example.com")]), 403, "a foreign page");
    let seen = client(dir.path(), &["basics"], &["--http".into(), server.url.clone(), "--token".into(), "s3cret".into()]);
    assert_basics(&seen);
}

#[test]
fn sessions_past_the_limit_are_refused_saying_why() {
    let dir = workspace();
    let policy = std::fs::read_to_string(dir.path().join("toolhost.toml")).unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), format!("{policy}[mcp]\nmax_sessions = 2\n")).unwrap();
    let server = HttpServer::start(dir.path(), &[], &[]);
    assert_eq!(post_status(&server, &[]), 200);
    assert_eq!(post_status(&server, &[]), 200);
    let (status, said) = post(&server, &[]);
    assert_eq!(status, 503, "{said}");
    assert!(said.contains("at most 2 MCP sessions at once ([mcp] max_sessions)"), "{said}");
    assert!(said.to_ascii_lowercase().contains("retry-after: 5"), "{said}");
}

#[test]
fn a_session_holds_two_event_streams_at_most() {
    let dir = workspace();
    let server = HttpServer::start(dir.path(), &[], &[]);
    let (status, said) = post(&server, &[]);
    assert_eq!(status, 200, "{said}");
    let session = said
        .lines()
        .find_map(|line| line.to_ascii_lowercase().strip_prefix("mcp-session-id:").map(|id| id.trim().to_owned()))
        .unwrap_or_else(|| panic!("a session id: {said}"));
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let (status, said) = post_body_with(&server, &format!("Mcp-Session-Id: {session}\r\n"), initialized.as_bytes());
    assert_eq!(status, 202, "{said}");
    // The status line of a GET of the session's event stream; the stream
    // is held open with its connection.
    let open_stream = || {
        let mut stream = TcpStream::connect(server.authority()).unwrap();
        let request = format!(
            "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\r\n",
            server.authority()
        );
        stream.write_all(request.as_bytes()).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut status = [0u8; 12];
        stream.read_exact(&mut status).unwrap();
        (text(&status[9..12]), stream)
    };
    let first = open_stream();
    let second = open_stream();
    assert_eq!((first.0.as_str(), second.0.as_str()), ("200", "200"));
    assert_eq!(open_stream().0, "429", "a third stream of one session");
    drop(first);
    let reopened = (0..50).map(|_| {
        std::thread::sleep(Duration::from_millis(100));
        open_stream().0
    });
    assert!(reopened.into_iter().any(|status| status == "200"), "a closed stream's place is given back");
}

#[test]
fn a_request_reusing_the_id_of_one_in_flight_in_its_session_is_refused_over_http() {
    let dir = workspace();
    let server = HttpServer::start(dir.path(), &[], &[]);
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}"#;
    let (status, said) = post_body(&server, initialize.as_bytes());
    assert_eq!(status, 200, "{said}");
    let session = said
        .lines()
        .find_map(|line| line.to_ascii_lowercase().strip_prefix("mcp-session-id:").map(|id| id.trim().to_owned()))
        .unwrap_or_else(|| panic!("a session id: {said}"));
    let in_session = format!("Mcp-Session-Id: {session}\r\n");
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(post_body_with(&server, &in_session, initialized.as_bytes()).0, 202);
    // A sensitive call, id 7, waits on its stream for the user's answer.
    let call = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"note.txt","content":"x"}}}"#;
    let mut first = TcpStream::connect(server.authority()).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         {in_session}Content-Length: {}\r\n\r\n{call}",
        server.authority(),
        call.len()
    );
    first.write_all(head.as_bytes()).unwrap();
    first.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let mut seen = String::new();
    let read_until = |first: &mut TcpStream, seen: &mut String, what: &str| {
        for _ in 0..100 {
            let mut chunk = [0u8; 4096];
            match first.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => seen.push_str(&text(&chunk[..n])),
                Err(_) => {}
            }
            if seen.contains(what) {
                return;
            }
        }
        panic!("{what} never came: {seen}");
    };
    read_until(&mut first, &mut seen, "elicitation/create");
    // The same id again, while the call is in flight: refused, under it.
    let ping = r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;
    let (status, said) = post_body_with(&server, &in_session, ping.as_bytes());
    assert_eq!(status, 400, "{said}");
    assert!(said.contains("\"id\":7") && said.contains("already in use by a request in flight"), "{said}");
    // Written another way, it is the same id to rmcp, which routes by it.
    let ping_again = r#"{"jsonrpc":"2.0","id":7.0,"method":"ping"}"#;
    assert_eq!(post_body_with(&server, &in_session, ping_again.as_bytes()).0, 400);
    // The user declines; the call's own stream gets its answer, and ends.
    let question = seen
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message["method"] == "elicitation/create")
        .unwrap();
    let answer = serde_json::json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}}).to_string();
    assert_eq!(post_body_with(&server, &in_session, answer.as_bytes()).0, 202);
    read_until(&mut first, &mut seen, "declined it in the MCP client");
    assert!(seen.contains("\"id\":7"), "{seen}");
    // Answered, the id is free again.
    let free = (0..50).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        post_body_with(&server, &in_session, ping.as_bytes()).0 == 200
    });
    assert!(free, "the id is taken back once its call is answered");
}

/// Sends `signal` (`TERM`, `INT`) to process `pid`.
fn send_signal(pid: u32, signal: &str) {
    let sent = Command::new("kill").args([format!("-{signal}"), pid.to_string()]).status().unwrap();
    assert!(sent.success());
}

/// How `child` exited within `within`, and after how long.
fn exit_within(child: &mut Child, within: Duration) -> Option<(std::process::ExitStatus, Duration)> {
    let started = std::time::Instant::now();
    while started.elapsed() < within {
        if let Some(status) = child.try_wait().unwrap() {
            return Some((status, started.elapsed()));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

#[test]
fn connections_held_open_take_no_more_than_their_share_of_the_descriptors() {
    let dir = workspace();
    let mut command = Command::new("prlimit");
    in_test_home(&mut command).current_dir(dir.path()).env_remove("RUST_LOG");
    command.args(["--nofile=256:256", env!("CARGO_BIN_EXE_toolhost"), "mcp", "--http", "127.0.0.1:0"]);
    let server = HttpServer::spawn(command);
    // Idle connections, more than the process may open: each served one
    // holds a descriptor until its 30 seconds are up.
    let flood: Vec<TcpStream> = (0..300).map(|_| TcpStream::connect(server.authority()).unwrap()).collect();
    std::thread::sleep(Duration::from_secs(1));
    let open = std::fs::read_dir(format!("/proc/{}/fd", server.child.id())).unwrap().count();
    // A fifth of 256 for connections, beside the host's own: before, the
    // server took connections until no descriptor was left.
    assert!(open <= 128, "{open} descriptors open of 256");
    drop(flood);
    assert_eq!(post_status(&server, &[]), 200, "served once the connections close");
}

#[test]
fn sigterm_stops_the_http_server_gracefully_and_a_held_connection_does_not_hold_it() {
    let dir = workspace();
    let mut server = HttpServer::start(dir.path(), &[], &[]);
    // Half a request: serving would wait for the rest up to its read timeout.
    let mut half = TcpStream::connect(server.authority()).unwrap();
    half.write_all(b"POST /mcp HTTP/1.1\r\nHost: loc").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    send_signal(server.child.id(), "TERM");
    let (status, took) = exit_within(&mut server.child, Duration::from_secs(15)).expect("the server exits");
    assert!(status.success(), "a graceful stop: {status:?}");
    assert!(took < Duration::from_secs(10), "the held connection is closed after the grace: {took:?}");
    // A second request to stop ends it at once.
    let mut server = HttpServer::start(dir.path(), &[], &[]);
    let _half = {
        let mut half = TcpStream::connect(server.authority()).unwrap();
        half.write_all(b"POST /mcp HTTP/1.1\r\nHost: loc").unwrap();
        half
    };
    std::thread::sleep(Duration::from_millis(200));
    send_signal(server.child.id(), "INT");
    std::thread::sleep(Duration::from_millis(200));
    send_signal(server.child.id(), "TERM");
    let (status, took) = exit_within(&mut server.child, Duration::from_secs(15)).expect("the server exits");
    assert_eq!(status.code(), Some(130), "stopped at once: {status:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
}

#[test]
fn a_body_that_cannot_be_read_is_a_bad_request_and_one_announced_too_large_is_refused_at_once() {
    let dir = workspace();
    let server = HttpServer::start(dir.path(), &["--stateless"], &[]);
    let send = |head: &str, body: &str| {
        let mut stream = TcpStream::connect(server.authority()).unwrap();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Connection: close\r\n{head}\r\n{body}",
            server.authority()
        );
        stream.write_all(request.as_bytes()).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        text(&answer)
    };
    let answer = send("Transfer-Encoding: chunked\r\n", "zz\r\n{}\r\n0\r\n\r\n");
    assert!(answer.starts_with("HTTP/1.1 400"), "a bad chunk size: {answer}");
    let started = std::time::Instant::now();
    let answer = send("Content-Length: 2147483648\r\n", "{");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(4), "refused before the body was waited for: {:?}", started.elapsed());
}

#[test]
fn a_body_that_is_no_json_rpc_message_is_a_bad_request_with_its_error() {
    let dir = workspace();
    let server = HttpServer::start(dir.path(), &["--stateless"], &[]);
    for (body, code) in [("not json", -32700), ("{\"jsonrpc\":\"2.0\",\"id\":1}", -32600), ("[1, 2]", -32600)] {
        let (status, said) = post_body(&server, body.as_bytes());
        assert_eq!(status, 400, "{body}: {said}");
        let error = said.split("\r\n\r\n").nth(1).unwrap_or_default();
        let error: serde_json::Value = serde_json::from_str(error).unwrap_or_else(|e| panic!("{body}: {e}: {said}"));
        assert_eq!(
            (error["id"].clone(), error["error"]["code"].as_i64()),
            (serde_json::Value::Null, Some(code)),
            "{body}: {said}"
        );
    }
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let (status, said) = post_body_with(&server, "MCP-Protocol-Version: 2025-11-25\r\n", ping.as_bytes());
    assert_eq!(status, 200, "a message still passes: {said}");
}

#[test]
fn a_sensitive_call_is_asked_of_the_clients_user() {
    let dir = workspace();
    let note = dir.path().join("ws/note.txt");
    let denied = client(dir.path(), &["approve", "--answer", "deny"], &over_stdio(&[]));
    assert_eq!(denied["asked"].as_array().unwrap().len(), 1, "{denied}");
    let question = denied["asked"][0]["message"].as_str().unwrap();
    assert!(
        question.contains("Run `write_file` (plugin files, sensitive)?") && question.contains("approved over MCP"),
        "{question}"
    );
    assert_eq!(denied["result"]["text"], "denied: the user denied it: not today");
    let declined = client(dir.path(), &["approve", "--answer", "decline"], &over_stdio(&[]));
    assert_eq!(declined["result"]["text"], "denied: the user declined it in the MCP client");
    assert!(!note.exists(), "nothing was written before the user approved");
    let approved = client(dir.path(), &["approve", "--answer", "approve"], &over_stdio(&[]));
    assert_eq!(approved["result"]["is_error"], false, "{approved}");
    assert_eq!(std::fs::read_to_string(&note).unwrap(), "approved over MCP");
    // Each decision is audited under the `[mcp]` agent, by a person.
    let writes = audited(dir.path(), "write_file");
    assert_eq!(writes.len(), 3, "{writes:?}");
    assert!(writes.iter().all(|r| r["agent"] == "mcp"), "{writes:?}");
}

#[test]
fn a_question_the_user_leaves_unanswered_denies_the_call_in_time() {
    let dir = workspace();
    let policy = std::fs::read_to_string(dir.path().join("toolhost.toml")).unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), format!("{policy}[mcp]\napproval_timeout_ms = 1000\n")).unwrap();
    let seen = client(dir.path(), &["slow_answer", "--delay", "6"], &over_stdio(&[]));
    assert_eq!(seen["result"]["is_error"], true, "{seen}");
    assert_eq!(
        seen["result"]["text"], "denied: nobody answered in the MCP client within 1000 ms ([mcp] approval_timeout_ms)",
        "{seen}"
    );
    assert!(seen["took_s"].as_f64().unwrap() < 5.0, "denied at the timeout, not at the late answer: {seen}");
    assert_eq!(seen["withdrawn"], true, "the question was withdrawn at the timeout: {seen}");
    assert!(!dir.path().join("ws/late.txt").exists(), "the late answer approved nothing");
    assert_eq!(seen["after"]["structured"]["value"], 5.0, "{seen}");
}

#[test]
fn a_call_the_client_abandons_while_its_user_is_asked_withdraws_the_question() {
    let dir = workspace();
    let seen = client(dir.path(), &["slow_answer", "--delay", "20", "--abandon-after", "1"], &over_stdio(&[]));
    assert!(seen["result"]["protocol_error"].as_str().unwrap_or_default().contains("timed out"), "{seen}");
    assert_eq!(seen["withdrawn"], true, "the question of a cancelled call was withdrawn: {seen}");
    assert!(!dir.path().join("ws/late.txt").exists());
    assert_eq!(seen["after"]["structured"]["value"], 5.0, "{seen}");
}

#[test]
fn sessions_are_closed_by_delete_once_and_list_changes_only_where_kept() {
    let dir = workspace();
    let server = HttpServer::start(dir.path(), &[], &[]);
    let (status, said) = post(&server, &[]);
    assert_eq!(status, 200, "{said}");
    assert!(said.contains("\"listChanged\":true"), "{said}");
    let id = said
        .lines()
        .find_map(|line| line.split_once(':').filter(|(name, _)| name.eq_ignore_ascii_case("mcp-session-id")))
        .map(|(_, id)| id.trim().to_owned())
        .expect("a session id");
    assert_eq!(delete_status(&server, &id), 204, "the session is closed");
    assert_eq!(delete_status(&server, &id), 404, "a closed session is gone");
    assert_eq!(delete_status(&server, "never-issued"), 404);
    let stateless = HttpServer::start(dir.path(), &["--stateless"], &[]);
    let (status, said) = post(&stateless, &[]);
    assert_eq!(status, 200, "{said}");
    assert!(said.contains("\"listChanged\":false"), "nobody is told of changes without a session: {said}");
}

/// The status of a `DELETE /mcp` for session `id`.
fn delete_status(server: &HttpServer, id: &str) -> u16 {
    let request = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-11-25\r\nConnection: close\r\n\r\n",
        server.authority()
    );
    let mut stream = TcpStream::connect(server.authority()).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut status = [0u8; 12];
    stream.read_exact(&mut status).unwrap();
    text(&status[9..12]).parse().unwrap()
}

#[test]
fn a_component_dropped_into_a_plugin_directory_changes_the_tool_list() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::copy(support::plugins("examples").join("calc.wasm"), plugins.join("calc.wasm")).unwrap();
    let clock = support::plugins("examples").join("clock.wasm");
    let seen = client(
        dir.path(),
        &["list_changed", "--component", clock.to_str().unwrap(), "--into", plugins.to_str().unwrap()],
        &over_stdio(&["--plugins", "plugins"]),
    );
    assert_eq!(seen["before"], serde_json::json!(["calculate"]), "{seen}");
    assert_eq!(seen["notified"], true, "notifications/tools/list_changed arrived: {seen}");
    assert!(seen["after"].as_array().unwrap().contains(&Value::from("current_time")), "{seen}");
}

#[test]
fn a_component_removed_while_its_call_is_asked_runs_as_approved_and_is_gone_after() {
    let dir = workspace();
    let component = dir.path().join("plugins/files.wasm");
    let seen = client(dir.path(), &["reload_while_asked", "--remove", component.to_str().unwrap()], &over_stdio(&[]));
    assert_eq!(seen["notified"], true, "the reload happened while the user was asked: {seen}");
    // The call approved is the one that runs: the plugin it was checked
    // against, not whatever the directory holds now.
    assert_eq!(seen["result"]["is_error"], false, "{seen}");
    assert_eq!(std::fs::read_to_string(dir.path().join("ws/during.txt")).unwrap(), "approved before the reload");
    assert!(!seen["after"].as_array().unwrap().contains(&Value::from("write_file")), "{seen}");
    assert!(seen["again"]["protocol_error"].as_str().unwrap().contains("no tool named `write_file`"), "{seen}");
    assert!(!dir.path().join("ws/again.txt").exists());
}

#[test]
fn a_call_the_client_abandons_is_cancelled_on_the_server() {
    let dir = workspace();
    let seen = client(dir.path(), &["cancel"], &over_stdio(&[]));
    assert!(seen["slow"]["protocol_error"].as_str().unwrap().contains("timed out"), "{seen}");
    assert_eq!(seen["quick"]["structured"]["value"], 4.0, "{seen}");
    let wait = audited(dir.path(), "wait_ms").remove(0);
    assert_eq!(wait["status"], "cancelled", "{wait}");
    assert!(wait["duration_ms"].as_f64().unwrap() < 10_000.0, "stopped long before its 30 s: {wait}");
}

#[test]
fn fifty_http_clients_each_get_their_own_answers() {
    let dir = workspace();
    let server = HttpServer::start(dir.path(), &[], &[]);
    let seen = client(dir.path(), &["concurrent", "--clients", "50", "--calls", "100"], &["--http".into(), server.url.clone()]);
    assert_eq!(seen["clients"], 50, "{seen}");
    assert_eq!((seen["mismatched"].as_u64(), seen["failed"].as_u64()), (Some(0), Some(0)), "{seen}");
}

/// A free loopback port, as the kernel hands one out.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn stateless_replicas_behind_nginx_share_one_url() {
    // Two replicas, each with its own audit log, to count what each served.
    let replicas: Vec<(tempfile::TempDir, HttpServer)> = (0..2)
        .map(|_| {
            let dir = workspace();
            let server = HttpServer::start(dir.path(), &["--stateless"], &[]);
            (dir, server)
        })
        .collect();
    let balancer = Balancer::start(&[replicas[0].1.authority(), replicas[1].1.authority()]);
    let seen =
        client(balancer.dir.path(), &["concurrent", "--clients", "4", "--calls", "50"], &["--http".into(), balancer.url()]);
    drop(balancer);
    assert_eq!(
        (seen["mismatched"].as_u64(), seen["failed"].as_u64(), seen["clients"].as_u64()),
        (Some(0), Some(0), Some(4)),
        "{seen}"
    );
    let served: Vec<usize> = replicas.iter().map(|(dir, _)| audited(dir.path(), "calculate").len()).collect();
    assert_eq!(served.iter().sum::<usize>(), 200, "every call was served once: {served:?}");
    assert!(served.iter().all(|&n| n > 0), "both replicas served some: {served:?}");
}

/// Run the official conformance suite installed in `node` (a folder of
/// `target/toolchains/mcp/`) against a `toolhost mcp --http` serving the
/// fixture plugins, with `args` and the expected failures in `baseline`
/// (a file of `tests/mcp/`); what it printed, once it passed. `None` when
/// Node 22 could not be installed (the skip is reported).
fn conformance(node: &str, args: &[&str], baseline: &str) -> Option<String> {
    let skipped = toolchains().join("conformance.skipped");
    if let Ok(reason) = std::fs::read_to_string(&skipped) {
        support::skip("Node 22, for the MCP conformance suite", &reason);
        return None;
    }
    let bin = toolchains().join(node).join("node_modules/.bin");
    assert!(bin.join("conformance").exists(), "{} is missing; run `cargo xtask mcp-clients`", bin.display());
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(dir.path(), &["--plugins", support::plugins("testing").to_str().unwrap()], &[]);
    let baseline = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp").join(baseline);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let output = Command::new(bin.join("conformance"))
        .args(["server", "--url", &server.url])
        .args(args)
        .arg("--expected-failures")
        .arg(&baseline)
        .env("PATH", path)
        .current_dir(dir.path())
        .output()
        .expect("the conformance suite runs");
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "conformance failed:\n{stdout}\n{}", text(&output.stderr));
    Some(stdout)
}

#[test]
fn the_official_conformance_suite_passes_but_for_its_baseline() {
    let Some(stdout) = conformance("node", &[], "conformance-baseline.yml") else { return };
    for scenario in ["server-initialize", "tools-list", "tools-call-simple-text", "tools-call-error", "dns-rebinding-protection"]
    {
        assert!(stdout.contains(&format!("✓ {scenario}:")), "{scenario} passed:\n{stdout}");
    }
}

#[test]
fn the_official_conformance_suites_2026_requirements_pass_but_for_their_baseline() {
    let args = ["--requirements", MODERN];
    let Some(stdout) = conformance("node-2026", &args, "conformance-2026-baseline.yml") else { return };
    for scenario in [
        "tools-list",
        "tools-call-simple-text",
        "tools-call-error",
        "dns-rebinding-protection",
        "input-required-result-request-state",
        "input-required-result-result-type",
        "input-required-result-tampered-state",
        "input-required-result-validate-input",
        "input-required-result-unsupported-methods",
    ] {
        assert!(stdout.contains(&format!("✓ {scenario}:")), "{scenario} passed:\n{stdout}");
    }
}

/// The 2026-07-28 revision beside the handshake era, on one endpoint.
const MODERN: &str = "2026-07-28";

#[test]
fn a_2026_client_lists_calls_and_answers_approvals_through_input_required_over_stdio() {
    let dir = workspace();
    let note = dir.path().join("ws/note.txt");
    for mode in [MODERN, "auto"] {
        let seen = client_as(mode, dir.path(), &["basics"], &over_stdio(&[]));
        assert_basics(&seen);
        let denied = client_as(mode, dir.path(), &["approve", "--answer", "deny"], &over_stdio(&[]));
        assert_eq!(denied["version"], MODERN, "{mode} speaks 2026-07-28 with toolhost: {denied}");
        assert_eq!(denied["asked"].as_array().unwrap().len(), 1, "{denied}");
        let question = denied["asked"][0]["message"].as_str().unwrap();
        assert!(question.contains("Run `write_file` (plugin files, sensitive)?"), "{question}");
        assert!(denied["asked"][0]["schema"]["properties"].get("always").is_none(), "a sensitive call is asked every time");
        assert_eq!(denied["result"]["text"], "denied: the user denied it: not today");
        let declined = client_as(mode, dir.path(), &["approve", "--answer", "decline"], &over_stdio(&[]));
        assert_eq!(declined["result"]["text"], "denied: the user declined it in the MCP client");
        assert!(!note.exists(), "nothing was written before the user approved");
        let approved = client_as(mode, dir.path(), &["approve", "--answer", "approve"], &over_stdio(&[]));
        assert_eq!(approved["result"]["is_error"], false, "{approved}");
        assert_eq!(std::fs::read_to_string(&note).unwrap(), "approved over MCP");
        std::fs::remove_file(&note).unwrap();
    }
    // The SDK's Client forced to the handshake still gets its questions as
    // elicitation requests.
    let legacy = client_as("legacy", dir.path(), &["approve", "--answer", "approve"], &over_stdio(&[]));
    assert_eq!(legacy["result"]["is_error"], false, "{legacy}");
    assert_ne!(legacy["version"], MODERN, "{legacy}");
    let writes = audited(dir.path(), "write_file");
    // Per mode: basics' denial, then deny, decline, approve; and the legacy one.
    assert_eq!(writes.len(), 2 * 4 + 1, "every call audited once, where it ended: {writes:?}");
}

#[test]
fn a_2026_client_is_asked_over_http_and_listens_for_the_tools_changing() {
    let dir = workspace();
    let server = HttpServer::start(dir.path(), &[], &[]);
    let url = || vec!["--http".to_owned(), server.url.clone()];
    assert_basics(&client_as(MODERN, dir.path(), &["basics"], &url()));
    let approved = client_as(MODERN, dir.path(), &["approve", "--answer", "approve"], &url());
    assert_eq!(
        (&approved["result"]["is_error"], &approved["version"]),
        (&Value::Bool(false), &Value::from(MODERN)),
        "{approved}"
    );
    assert_eq!(std::fs::read_to_string(dir.path().join("ws/note.txt")).unwrap(), "approved over MCP");
    // A handshake-era session on the same endpoint, at the same time.
    assert_basics(&client(dir.path(), &["basics"], &url()));

    let clock = support::plugins("examples").join("clock.wasm");
    let plugins = dir.path().join("plugins");
    let seen = client_as(
        MODERN,
        dir.path(),
        &["listen", "--component", clock.to_str().unwrap(), "--into", plugins.to_str().unwrap()],
        &over_stdio(&[]),
    );
    assert_eq!(seen["notified"], true, "subscriptions/listen told of the change: {seen}");
    assert!(seen["after"].as_array().unwrap().contains(&Value::from("current_time")), "{seen}");
}

/// A directory for one of several replicas: the plugins, a workspace and
/// an audit log of its own; the host key and the approvals memory (and so
/// the ledger of used resume tokens) in `shared`, as replicas share them.
fn replica_dir(shared: &Path) -> tempfile::TempDir {
    let dir = workspace();
    let policy = format!(
        "cache_key = {key:?}\nplugin_dirs = [\"plugins\"]\n\
         [plugins.files]\nfile = \"files.wasm\"\ndirs = {{ \"/workspace\" = {{ host = \"ws\", access = \"read-write\" }} }}\n\
         [plugins.hostile]\nfile = \"hostile.wasm\"\n\
         [approval]\naudit_log = \"audit.jsonl\"\nmemory_file = {memory:?}\n",
        key = shared.join("host.key").display().to_string(),
        memory = shared.join("approvals.json").display().to_string(),
    );
    std::fs::write(dir.path().join("toolhost.toml"), policy).unwrap();
    dir
}

/// Debian's nginx balancing round robin over `upstreams`, stopped when
/// dropped.
struct Balancer {
    dir: tempfile::TempDir,
    nginx: Child,
    port: u16,
}

impl Balancer {
    fn start(upstreams: &[&str]) -> Balancer {
        let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"].into_iter().map(PathBuf::from).find(|p| p.exists());
        let nginx = nginx.expect("nginx is missing; run `cargo xtask mcp-clients` (or `cargo xtask test`)");
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let upstreams: String = upstreams.iter().map(|authority| format!("server {authority};\n")).collect();
        let conf = format!(
            "daemon off;\nmaster_process off;\npid {dir}/nginx.pid;\nerror_log {dir}/error.log;\nevents {{}}\n\
             http {{\n access_log off;\n client_body_temp_path {dir}/body;\n proxy_temp_path {dir}/proxy;\n\
             upstream mcp {{\n{upstreams}}}\n\
             server {{\n listen 127.0.0.1:{port};\n location /mcp {{\n proxy_pass http://mcp;\n proxy_http_version 1.1;\n\
             proxy_set_header Host $http_host;\n proxy_set_header Connection \"\";\n proxy_buffering off;\n }}\n }}\n}}\n",
            dir = dir.path().display()
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        let nginx = Command::new(nginx)
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(dir.path().join("nginx.conf"))
            .stderr(Stdio::piped())
            .spawn()
            .expect("nginx starts");
        let up = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        assert!(up, "nginx listens on {port}");
        Balancer { dir, nginx, port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.nginx.kill();
        let _ = self.nginx.wait();
    }
}

/// The calls of `tool` the host in `dir` audited as they ended (a call
/// that runs is also on record as decided, before it starts).
fn audited(dir: &Path, tool: &str) -> Vec<Value> {
    let audit = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap_or_default();
    let records = audit.lines().map(|l| serde_json::from_str::<Value>(l).unwrap());
    records.filter(|r| r["tool"] == tool && r["event"] != "decided").collect()
}

#[test]
fn approvals_are_asked_on_one_stateless_replica_and_finished_on_another() {
    let shared = tempfile::tempdir().unwrap();
    let replicas: Vec<(tempfile::TempDir, HttpServer)> = (0..2)
        .map(|_| {
            let dir = replica_dir(shared.path());
            let server = HttpServer::start(dir.path(), &["--stateless"], &[]);
            (dir, server)
        })
        .collect();
    let ((a_dir, a), (b_dir, b)) = (&replicas[0], &replicas[1]);
    let resume = |tool: &str, arguments: &str, answer: &str, tamper: &str| {
        let scenario = ["resume", "--first", &a.url, "--second", &b.url, "--tool", tool, "--arguments", arguments];
        client_as(MODERN, shared.path(), &[&scenario[..], &["--answer", answer, "--tamper", tamper]].concat(), &[])
    };

    // Asked by A, answered, retried at B: B runs it, in its workspace.
    let seen = resume("write_file", r#"{"path": "crossed.txt", "content": "approved on A, run on B"}"#, "approve", "replay");
    assert_eq!(seen["first"]["input_required"], serde_json::json!(["approve-0"]), "{seen}");
    assert_eq!(seen["second"]["is_error"], false, "{seen}");
    assert_eq!(std::fs::read_to_string(b_dir.path().join("ws/crossed.txt")).unwrap(), "approved on A, run on B");
    assert!(!a_dir.path().join("ws/crossed.txt").exists());
    assert_eq!((audited(a_dir.path(), "write_file").len(), audited(b_dir.path(), "write_file").len()), (0, 1));
    assert_eq!(audited(b_dir.path(), "write_file")[0]["by"], "person");
    // The same retry again, at either replica: refused.
    let replayed = seen["again"]["protocol_error"].as_str().unwrap_or_default();
    assert!(replayed.contains("already used"), "{seen}");
    assert_eq!(seen["again"]["code"], -32602, "{seen}");

    // A decline is not run; an altered state or other arguments are refused.
    let declined = resume("write_file", r#"{"path": "declined.txt", "content": "x"}"#, "decline", "none");
    assert_eq!(declined["second"]["text"], "denied: the user declined it in the MCP client", "{declined}");
    let tampered = resume("write_file", r#"{"path": "t.txt", "content": "x"}"#, "approve", "state");
    assert!(tampered["second"]["protocol_error"].as_str().unwrap().contains("does not authenticate"), "{tampered}");
    let other = resume("write_file", r#"{"path": "o.txt", "content": "x"}"#, "approve", "arguments");
    assert!(other["second"]["protocol_error"].as_str().unwrap().contains("given for another request"), "{other}");
    for file in ["declined.txt", "t.txt", "o.txt", "o.txt"] {
        assert!(!a_dir.path().join("ws").join(file).exists() && !b_dir.path().join("ws").join(file).exists(), "{file}");
    }

    // "Allow always", answered through B, holds on A.
    let always = resume("list_files", "{}", "always", "none");
    assert_eq!(always["second"]["is_error"], false, "{always}");
    std::thread::sleep(Duration::from_millis(1200));
    let again = client_as(
        MODERN,
        shared.path(),
        &["approve", "--answer", "deny", "--tool", "list_files", "--arguments", "{}"],
        &["--http".into(), a.url.clone()],
    );
    assert_eq!((&again["asked"], &again["result"]["is_error"]), (&serde_json::json!([]), &Value::Bool(false)), "{again}");

    // Through nginx, round robin: a 2026-07-28 client is asked and its
    // approved call runs on whichever replica gets the retry; a
    // handshake-era client lists and calls through the same URL.
    let balancer = Balancer::start(&[a.authority(), b.authority()]);
    let via = || vec!["--http".to_owned(), balancer.url()];
    let approved = client_as(MODERN, balancer.dir.path(), &["approve", "--answer", "approve"], &via());
    assert_eq!(approved["result"]["is_error"], false, "{approved}");
    let wrote = [a_dir, b_dir].iter().filter(|dir| dir.path().join("ws/note.txt").exists()).count();
    assert_eq!(wrote, 1, "the approved call ran once");
    let denied = client_as(
        MODERN,
        balancer.dir.path(),
        &["approve", "--answer", "deny", "--arguments", r#"{"path": "no.txt", "content": "x"}"#],
        &via(),
    );
    assert_eq!(denied["result"]["text"], "denied: the user denied it: not today", "{denied}");
    assert!(!a_dir.path().join("ws/no.txt").exists() && !b_dir.path().join("ws/no.txt").exists());
    assert_basics(&client(balancer.dir.path(), &["basics"], &via()));
}

#[test]
fn calls_past_the_in_flight_caps_are_refused_naming_the_key() {
    let dir = workspace();
    let policy = std::fs::read_to_string(dir.path().join("toolhost.toml")).unwrap();
    for (section, key) in [("max_calls_per_client = 2", "[mcp] max_calls_per_client"), ("max_calls = 2", "[mcp] max_calls)")] {
        std::fs::write(dir.path().join("toolhost.toml"), format!("{policy}[mcp]\n{section}\n")).unwrap();
        let seen = client(dir.path(), &["at_once", "--calls", "4", "--ms", "1500"], &over_stdio(&[]));
        let results = seen["results"].as_array().unwrap();
        let refused: Vec<&Value> = results.iter().filter(|r| r["text"].as_str().is_some_and(|t| t.contains(key))).collect();
        let ran = results.iter().filter(|r| r["is_error"] == false).count();
        assert_eq!((ran, refused.len()), (2, 2), "two run, two are refused naming {key}: {seen}");
        assert!(refused.iter().all(|r| r["is_error"] == true), "a tool error the model can read: {seen}");
    }
}

#[test]
fn calls_at_once_overlap_on_one_thread_and_on_several() {
    let dir = workspace();
    // A call waiting in the host does not hold up the others, on one
    // thread (`--threads 1`) or on several. Four waits of 2 s one after
    // another would take 6 s longer than one; the client's and the
    // server's start-up are in both.
    for args in [&["--threads", "1"][..], &[][..]] {
        let waits = |calls: &str| {
            let start = std::time::Instant::now();
            let seen = client(dir.path(), &["at_once", "--calls", calls, "--ms", "2000"], &over_stdio(args));
            let results = seen["results"].as_array().unwrap().clone();
            assert!(results.iter().all(|r| r["is_error"] == false), "{args:?}: {seen}");
            (results.len(), start.elapsed())
        };
        let ((one, alone), (four, together)) = (waits("1"), waits("4"));
        assert_eq!((one, four), (1, 4));
        let longer = together.saturating_sub(alone);
        assert!(longer < Duration::from_secs(3), "{args:?}: four waits took {together:?}, one {alone:?}: not at once");
    }
    let refused = support::toolhost(dir.path(), &["mcp", "--threads", "0"]);
    assert!(!refused.status.success());
    assert!(text(&refused.stderr).contains("--threads"), "{}", text(&refused.stderr));
}

#[test]
fn a_call_made_beside_a_busy_one_is_answered_while_it_runs() {
    let dir = workspace();
    // `thrash_memory` burns little fuel for much time: fuel's own yields to
    // the runtime come seconds apart, so only the epoch's keep a thread
    // that runs it looking at stdin and at the other calls' answers.
    let policy = dir.path().join("toolhost.toml");
    let mut text = std::fs::read_to_string(&policy).unwrap();
    text.push_str("[limits]\nfuel = 1_000_000_000_000_000\ntimeout_ms = 3000\n");
    std::fs::write(&policy, text).unwrap();
    for args in [&[][..], &["--threads", "1"][..]] {
        let seen = client(dir.path(), &["beside_a_busy_call", "--busy", "thrash_memory"], &over_stdio(args));
        assert_eq!(seen["quick"]["is_error"], false, "{args:?}: {seen}");
        assert!(seen["quick"]["text"].as_str().is_some_and(|text| text.contains("42")), "{args:?}: {seen}");
        assert_eq!(seen["busy_meanwhile"], true, "{args:?}: answered while the busy call ran: {seen}");
        let quick_ms = seen["quick_ms"].as_f64().unwrap();
        eprintln!("{args:?}: the call beside a busy one took {quick_ms:.1} ms");
        assert!(quick_ms < 150.0, "{args:?}: the call beside a busy one took {quick_ms} ms: {seen}");
        assert_eq!(seen["busy"]["is_error"], true, "{args:?}: the busy call ends at its time limit: {seen}");
    }
}

/// `toolhost mcp` over stdio in `cwd`, after the handshake, with the lines
/// `before` sent ahead of it: its stdin, its answers line by line, and the
/// process.
fn raw_stdio_session(
    cwd: &Path,
    before: &[&str],
) -> (std::process::ChildStdin, std::io::Lines<BufReader<std::process::ChildStdout>>, Child) {
    raw_stdio_session_with(cwd, &["--no-watch"], before)
}

/// `toolhost mcp ARGS` over stdio in `cwd`, nothing sent yet: its stdin,
/// its answers line by line, and the process.
fn raw_stdio(
    cwd: &Path,
    args: &[&str],
) -> (std::process::ChildStdin, std::io::Lines<BufReader<std::process::ChildStdout>>, Child) {
    let mut server = toolhost_mcp(cwd, args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("toolhost mcp starts");
    let stdin = server.stdin.take().unwrap();
    let answers = BufReader::new(server.stdout.take().unwrap()).lines();
    (stdin, answers, server)
}

/// As [`raw_stdio_session`], `toolhost mcp` started with `args`.
fn raw_stdio_session_with(
    cwd: &Path,
    args: &[&str],
    before: &[&str],
) -> (std::process::ChildStdin, std::io::Lines<BufReader<std::process::ChildStdout>>, Child) {
    let (mut stdin, mut answers, server) = raw_stdio(cwd, args);
    for line in before {
        writeln!(stdin, "{line}").unwrap();
    }
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"raw","version":"1"}}}}}}"#
    )
    .unwrap();
    let initialized: Value = serde_json::from_str(&answers.next().unwrap().unwrap()).unwrap();
    assert_eq!(initialized["id"], 0, "{initialized}");
    writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
    (stdin, answers, server)
}

/// The id of each answer, read until `count` have come.
fn answer_ids(answers: &mut impl Iterator<Item = std::io::Result<String>>, count: usize) -> Vec<u64> {
    (0..count)
        .map(|_| {
            let answer: Value = serde_json::from_str(&answers.next().expect("an answer").unwrap()).unwrap();
            answer["id"].as_u64().unwrap_or_else(|| panic!("an answer with a numeric id: {answer}"))
        })
        .collect()
}

#[test]
fn a_client_that_does_not_read_its_answers_is_read_no_further_and_loses_none() {
    const REQUESTS: u64 = 50_000;
    let dir = workspace();
    let (mut stdin, mut answers, mut server) = raw_stdio_session(dir.path(), &[]);
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let writer = std::thread::spawn({
        let sent = sent.clone();
        move || {
            for id in 1..=REQUESTS {
                writeln!(stdin, r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#).unwrap();
                sent.store(id, std::sync::atomic::Ordering::Relaxed);
            }
        }
    });
    // Unread, every answer had been kept: 200 000 took 6.5 GB.
    std::thread::sleep(Duration::from_secs(3));
    let held = resident(server.id());
    let written = sent.load(std::sync::atomic::Ordering::Relaxed);
    assert!(held < 150 << 20, "{} MiB held for a client that reads nothing", held >> 20);
    assert!(written < REQUESTS, "all {written} requests were read though no answer was");
    let mut ids = answer_ids(&mut answers, REQUESTS as usize);
    ids.sort_unstable();
    assert_eq!(ids, (1..=REQUESTS).collect::<Vec<_>>(), "every request answered once");
    writer.join().unwrap();
    server.kill().unwrap();
}

#[test]
fn what_a_client_sends_before_its_first_request_is_read_past() {
    let dir = workspace();
    // Each had made rmcp fail its handshake, and the server end.
    let stray = [
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/whatever"}"#,
        r#"{"jsonrpc":"2.0","id":99,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":98,"error":{"code":-1,"message":"no"}}"#,
    ];
    let (mut stdin, mut answers, mut server) = raw_stdio_session(dir.path(), &stray);
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list"}}"#).unwrap();
    let listed: Value = serde_json::from_str(&answers.next().expect("an answer").unwrap()).unwrap();
    assert_eq!(listed["id"], 1, "{listed}");
    assert!(listed["result"]["tools"].as_array().is_some_and(|tools| !tools.is_empty()), "{listed}");
    server.kill().unwrap();
}

#[test]
fn a_request_reusing_the_id_of_one_in_flight_is_refused_and_the_first_is_answered() {
    let dir = workspace();
    let (mut stdin, mut answers, mut server) = raw_stdio_session(dir.path(), &[]);
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"wait_ms","arguments":{{"ms":1000}}}}}}"#
    )
    .unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":5,"method":"tools/list"}}"#).unwrap();
    let (done, answered) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in answers.by_ref().take(2) {
            let _ = done.send(serde_json::from_str::<Value>(&line.unwrap()).unwrap());
        }
    });
    let wait = || answered.recv_timeout(Duration::from_secs(20)).expect("an answer");
    let (refused, first) = (wait(), wait());
    assert_eq!((refused["id"].clone(), refused["error"]["code"].clone()), (5.into(), (-32600).into()), "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("already in use"), "{refused}");
    assert_eq!(first["id"], 5, "{first}");
    assert!(first["result"]["content"][0]["text"].is_string(), "the first call's own answer: {first}");
    server.kill().unwrap();
}

#[test]
fn answers_a_client_cancels_are_not_owed_to_it() {
    let dir = workspace();
    let (mut stdin, mut answers, mut server) = raw_stdio_session(dir.path(), &[]);
    // rmcp drops the answer of a call its client cancels: were it still
    // counted as owed, 256 of them would stop the server reading for good.
    for id in 1..=300 {
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"wait_ms","arguments":{{"ms":5000}}}}}}"#
        )
        .unwrap();
        writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#).unwrap();
    }
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1000,"method":"ping"}}"#).unwrap();
    let (done, answered) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let ping = answers.find_map(|line| {
            let answer: Value = serde_json::from_str(&line.unwrap()).unwrap();
            (answer["id"] == 1000).then_some(answer)
        });
        let _ = done.send(ping);
    });
    let ping = answered.recv_timeout(Duration::from_secs(30)).expect("the ping after 300 cancelled calls is answered");
    assert!(ping.is_some_and(|ping| ping.get("result").is_some()), "the ping is answered");
    server.kill().unwrap();
}

/// Each line `answers` gives, as JSON, on a channel: read on a thread of
/// its own, so that a test can wait for one with a timeout.
fn answers_on_a_channel(answers: std::io::Lines<BufReader<std::process::ChildStdout>>) -> std::sync::mpsc::Receiver<Value> {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in answers {
            let Ok(line) = line else { return };
            if send.send(serde_json::from_str(&line).expect("an answer is JSON")).is_err() {
                return;
            }
        }
    });
    receive
}

/// The next answer that is not a notification, within 20 s.
fn next_answer(answers: &std::sync::mpsc::Receiver<Value>) -> Value {
    loop {
        let answer = answers.recv_timeout(Duration::from_secs(20)).expect("an answer");
        if answer.get("id").is_some() || answer.get("error").is_some() {
            return answer;
        }
    }
}

#[test]
fn a_hostile_client_cannot_initialize_again_nor_grow_what_the_server_keeps_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::copy(support::plugins("examples").join("calc.wasm"), plugins.join("calc.wasm")).unwrap();
    let (mut stdin, answers, mut server) = raw_stdio_session_with(dir.path(), &["--plugins", "plugins"], &[]);
    let answers = answers_on_a_channel(answers);
    // Each `initialized` had added the client to the list told of changes
    // once more (one notification each, at every reload, without end).
    for _ in 0..100 {
        writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
    }
    // A second `initialize` had been taken, its version (any text) then
    // deciding the session's era: a ping became "method not found".
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"zzz","capabilities":{{"elicitation":{{}}}},"clientInfo":{{"name":"raw","version":"1"}}}}}}"#
    )
    .unwrap();
    let again = next_answer(&answers);
    assert_eq!((again["id"].clone(), again["error"]["code"].clone()), (1.into(), (-32600).into()), "{again}");
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"ping"}}"#).unwrap();
    let ping = next_answer(&answers);
    assert!(ping["id"] == 2 && ping.get("result").is_some(), "the session keeps its era: {ping}");
    // Params that do not fit are answered under the request's id; an id
    // longer than an answer should echo is refused.
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":3,"method":"ping","params":"x"}}"#).unwrap();
    let wrong = next_answer(&answers);
    assert_eq!((wrong["id"].clone(), wrong["error"]["code"].clone()), (3.into(), (-32602).into()), "{wrong}");
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":"{}","method":"ping"}}"#, "i".repeat(1 << 20)).unwrap();
    let long = next_answer(&answers);
    assert!(long["error"]["code"] == -32600 && long.get("id").is_none(), "{:.300}", long.to_string());
    // One reload, one notification.
    std::fs::copy(support::plugins("examples").join("clock.wasm"), plugins.join("clock.wasm")).unwrap();
    let is_change = |answer: &Value| answer["method"] == "notifications/tools/list_changed";
    let first = answers.recv_timeout(Duration::from_secs(30)).expect("told of the change");
    assert!(is_change(&first), "{first}");
    let more = std::iter::from_fn(|| answers.recv_timeout(Duration::from_secs(3)).ok()).filter(is_change).count();
    assert_eq!(more, 0, "the client was told {} times of one change", more + 1);
    server.kill().unwrap();
}

#[test]
fn subscriptions_take_no_place_of_a_clients_calls() {
    let dir = workspace();
    let policy = std::fs::read_to_string(dir.path().join("toolhost.toml")).unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), format!("{policy}[mcp]\nmax_calls_per_client = 2\n")).unwrap();
    let (mut stdin, answers, mut server) = raw_stdio(dir.path(), &["--no-watch"]);
    let answers = answers_on_a_channel(answers);
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}"#;
    // Subscriptions last as long as their client keeps them: sixteen had
    // taken every call's place of their client, for good.
    for id in 1..=3 {
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"subscriptions/listen","params":{{"notifications":{{"toolsListChanged":true}},{meta}}}}}"#
        )
        .unwrap();
    }
    let refused = next_answer(&answers);
    assert_eq!((refused["id"].clone(), refused["error"]["code"].clone()), (3.into(), (-32000).into()), "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("subscriptions"), "{refused}");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{{"name":"calculate","arguments":{{"expression":"6*7"}},{meta}}}}}"#
    )
    .unwrap();
    let called = next_answer(&answers);
    assert_eq!(called["id"], 10, "{called}");
    assert_eq!(called["result"]["isError"], false, "the call runs beside the subscriptions: {called}");
    server.kill().unwrap();
}

/// The resident memory of process `pid`, in bytes.
fn resident(pid: u32) -> usize {
    memory_status(pid, "VmRSS:")
}

/// The most resident memory process `pid` has had, in bytes.
fn peak_resident(pid: u32) -> usize {
    memory_status(pid, "VmHWM:")
}

/// The figure `field` of process `pid`'s status, in bytes.
fn memory_status(pid: u32, field: &str) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: usize =
        status.lines().find_map(|l| l.strip_prefix(field)).unwrap().trim().trim_end_matches(" kB").trim().parse().unwrap();
    kib << 10
}

#[test]
fn a_call_with_params_of_the_wrong_shape_is_invalid_params_saying_why() {
    let dir = workspace();
    let (mut stdin, mut answers, mut server) = raw_stdio_session(dir.path(), &[]);
    let twice = r#"{"name":"nope","name":"calculate","arguments":{"expression":"1"}}"#;
    for (id, params) in [(1, r#"{"name":5}"#), (2, r#"{"name":"calculate","arguments":"1+1"}"#), (3, "null"), (4, twice)] {
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#).unwrap();
        let answer: Value = serde_json::from_str(&answers.next().unwrap().unwrap()).unwrap();
        assert_eq!((answer["id"].as_u64(), answer["error"]["code"].as_i64()), (Some(id), Some(-32602)), "{params}: {answer}");
        assert!(answer["error"]["message"].as_str().unwrap().starts_with("invalid params for tools/call: "), "{answer}");
    }
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":9,"method":"no/such","params":{{}}}}"#).unwrap();
    let answer: Value = serde_json::from_str(&answers.next().unwrap().unwrap()).unwrap();
    assert_eq!(answer["error"]["code"], -32601, "an unknown method is still not found: {answer}");
    server.kill().unwrap();
}

#[test]
fn a_lone_surrogate_a_client_escapes_reads_as_a_replacement_character_over_stdio_and_http() {
    // JavaScript's JSON.stringify writes one for a string cut inside an
    // emoji; serde_json refuses it, and the request went unanswered.
    let call = |id: u32, expression: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"calculate","arguments":{{"expression":"{expression}"}}}}}}"#
        )
    };
    let dir = workspace();
    let (mut stdin, answers, mut server) = raw_stdio_session(dir.path(), &[]);
    let answered = forwarded(answers);
    for (id, expression, read) in
        [(1, r"1+1 \ud83d", "\u{fffd}"), (2, r"\udc00", "\u{fffd}"), (3, r"1+1 \ud83d\ude00", "\u{1f600}")]
    {
        writeln!(stdin, "{}", call(id, expression)).unwrap();
        let answer = answered.recv_timeout(Duration::from_secs(20)).expect("an answer, not silence");
        let answer: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(answer["id"], id, "{expression}: {answer}");
        let said = answer["result"]["content"][0]["text"].as_str().unwrap_or_default();
        assert!(said.contains(read), "{expression}: the plugin was given {read}: {answer}");
    }
    server.kill().unwrap();

    let server = HttpServer::start(dir.path(), &["--stateless"], &[]);
    let (status, said) = post_body_with(&server, "MCP-Protocol-Version: 2025-11-25\r\n", call(4, r"1+1 \ud83d").as_bytes());
    assert_eq!(status, 200, "{said}");
    assert!(said.contains("\u{fffd}") && said.contains(r#""id":4"#), "{said}");
}

/// The lines of `answers`, as a thread reads them: a test waits for one
/// with a timeout, so that an answer never given fails it.
fn forwarded(answers: impl Iterator<Item = std::io::Result<String>> + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (forward, answered) = std::sync::mpsc::channel();
    std::thread::spawn(move || answers.map_while(Result::ok).try_for_each(|line| forward.send(line)));
    answered
}

#[test]
fn a_request_of_json_serde_cannot_hold_is_refused_under_its_id_not_left_unanswered() {
    let dir = workspace();
    let (mut stdin, answers, mut server) = raw_stdio_session(dir.path(), &[]);
    let answered = forwarded(answers);
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    for (id, arguments) in [(11, r#"{"n":1e400}"#.to_owned()), (12, format!(r#"{{"x":{deep}}}"#))] {
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"calculate","arguments":{arguments}}}}}"#
        )
        .unwrap();
        let answer = answered.recv_timeout(Duration::from_secs(20)).expect("an answer, not silence");
        let answer: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!((answer["id"].as_u64(), answer["error"]["code"].as_i64()), (Some(id), Some(-32600)), "{answer}");
    }
    server.kill().unwrap();
}

#[test]
fn a_stdio_line_of_too_many_json_values_is_dropped_before_it_is_parsed() {
    let dir = workspace();
    let (mut stdin, mut answers, mut server) = raw_stdio_session(dir.path(), &[]);
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"ping"}}"#).unwrap();
    assert_eq!(answer_ids(&mut answers, 1), [1]);
    let before = peak_resident(server.id());
    // 8 MiB of empty objects in one call's arguments: parsed, some 450 MB.
    let objects = "{},".repeat((8 << 20) / 3);
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"calculate","arguments":{{"expression":[{objects}{{}}]}}}}}}"#
    );
    writeln!(stdin, "{huge}").unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":3,"method":"ping"}}"#).unwrap();
    assert_eq!(answer_ids(&mut answers, 1), [3], "the line is dropped, the next one answered");
    let grew = peak_resident(server.id()).saturating_sub(before);
    assert!(grew < 100 << 20, "the peak grew by {} MiB", grew >> 20);
    server.kill().unwrap();
}

/// A raw POST of `body` to `server`: the status and what came back.
fn post_body(server: &HttpServer, body: &[u8]) -> (u16, String) {
    post_body_with(server, "", body)
}

/// [`post_body`] with the header lines `headers` (each ending `\r\n`).
fn post_body_with(server: &HttpServer, headers: &str, body: &[u8]) -> (u16, String) {
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         {headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
        server.authority(),
        body.len()
    );
    let mut stream = TcpStream::connect(server.authority()).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    let _ = stream.write_all(body);
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let response = text(&response);
    (response.get(9..12).and_then(|status| status.parse().ok()).unwrap_or(0), response)
}

#[test]
fn requests_are_bounded_in_bytes_and_values_and_sessions_hold_little() {
    let dir = workspace();
    let server = HttpServer::start(dir.path(), &[], &[]);
    let before = resident(server.child.id());
    let initialize = |client: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"{client}","version":"1"}}}}}}"#
        )
    };
    // The attack of the issue: 3.9 MiB initialize requests, five of them.
    for _ in 0..5 {
        let (status, said) = post_body(&server, initialize(&"x".repeat(3_900_000)).as_bytes());
        assert_eq!(status, 413, "{}", &said[..said.len().min(300)]);
        assert!(said.contains("[mcp] max_request_kib"), "{said}");
    }
    // Under the byte limit, but an initialize past its own.
    let (status, said) = post_body(&server, initialize(&"x".repeat(100_000)).as_bytes());
    assert_eq!(status, 413);
    assert!(said.contains("an initialize request may be at most 16 KiB"), "{said}");
    // The same with a key that is a lone surrogate, which hid its method.
    let hidden = initialize(&"x".repeat(100_000)).replacen('{', r#"{"\ud800":0,"#, 1);
    let (status, said) = post_body(&server, hidden.as_bytes());
    assert_eq!(status, 413, "{}", &said[..said.len().min(300)]);
    // Small in bytes, huge once parsed: 300 000 empty objects.
    let objects = vec!["{}"; 300_000].join(",");
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"calculate","arguments":{{"x":[{objects}]}}}}}}"#
    );
    let (status, said) = post_body(&server, call.as_bytes());
    assert_eq!(status, 413);
    assert!(said.contains("JSON values"), "{said}");
    // Fifty sessions at the largest initialize allowed.
    for index in 0..50 {
        let (status, _) = post_body(&server, initialize(&format!("{index}{}", "y".repeat(15_000))).as_bytes());
        assert_eq!(status, 200);
    }
    let grew = resident(server.child.id()).saturating_sub(before);
    assert!(grew < 64 << 20, "the server grew {} MiB", grew >> 20);
    // And it still serves.
    assert_basics(&client(dir.path(), &["basics"], &["--http".into(), server.url.clone()]));
}

#[test]
fn always_is_refused_where_the_question_did_not_offer_it_in_both_eras() {
    let dir = workspace();
    std::fs::write(dir.path().join("ws/secret.txt"), "s").unwrap();
    std::fs::write(dir.path().join("ws/plain.txt"), "p").unwrap();
    let policy = std::fs::read_to_string(dir.path().join("toolhost.toml")).unwrap();
    // An ask rule narrowed to some arguments of a moderate tool: remembering
    // "always" there would let every other call of it run unasked.
    let rule = "[[approval.rules]]\naction = \"ask\"\ntool = \"list_files\"\nargs = { path = \"secret*\" }\n";
    std::fs::write(dir.path().join("toolhost.toml"), format!("{policy}{rule}")).unwrap();
    for mode in ["session", MODERN] {
        let args = ["approve", "--answer", "always", "--tool", "list_files", "--arguments", r#"{"path": "secret.txt"}"#];
        let seen = client_as(mode, dir.path(), &args, &over_stdio(&[]));
        assert!(seen["asked"][0]["schema"]["properties"].get("always").is_none(), "{mode}: not offered: {seen}");
        let text = seen["result"]["text"].as_str().unwrap();
        assert!(text.contains("which the question did not offer"), "{mode}: {seen}");
        let remembered = std::fs::read_to_string(dir.path().join("approvals.json")).unwrap_or_default();
        assert!(!remembered.contains("list_files"), "{mode}: nothing remembered: {remembered}");
        // The tool's other calls still ask.
        let plain = ["approve", "--answer", "deny", "--tool", "list_files", "--arguments", r#"{"path": "plain.txt"}"#];
        let asked = client_as(mode, dir.path(), &plain, &over_stdio(&[]));
        assert_eq!(asked["asked"].as_array().unwrap().len(), 1, "{mode}: {asked}");
    }
}

#[test]
fn unattended_decides_calls_never_results_and_says_so() {
    let dir = workspace();
    std::fs::write(dir.path().join("ws/a.txt"), "the contents").unwrap();
    let policy = std::fs::read_to_string(dir.path().join("toolhost.toml")).unwrap();
    let read = ["call_once", "--tool", "read_file", "--arguments", r#"{"path": "a.txt"}"#];
    // With "deny", a rule lets the call run; with "allow", the setting
    // does: either way its result is what waits, with nobody to see it.
    let allow_the_call = "[[approval.rules]]\naction = \"allow\"\ntool = \"read_file\"\n";
    for (unattended, mode, rule) in [("deny", "session", allow_the_call), ("allow", MODERN, "")] {
        let section = format!("{policy}{rule}[mcp]\nunattended = \"{unattended}\"\n");
        std::fs::write(dir.path().join("toolhost.toml"), section).unwrap();
        let seen = client_as(mode, dir.path(), &read, &over_stdio(&[]));
        let text = seen["result"]["text"].as_str().unwrap();
        assert!(
            text.starts_with(
                "result-rejected: the result was withheld: `read_file` (plugin files) asks that a person see its result"
            ),
            "{unattended}: not said to be a person's doing: {seen}"
        );
        assert!(text.contains("[mcp] unattended decides calls, never results") && text.contains("--console"), "{seen}");
        assert!(!text.contains("the contents"), "{seen}");
    }
}

#[test]
fn a_call_whose_retry_could_not_come_back_is_denied_in_place_saying_why() {
    let dir = workspace();
    let policy = std::fs::read_to_string(dir.path().join("toolhost.toml")).unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), format!("{policy}[mcp]\nmax_request_kib = 64\n")).unwrap();
    let server = HttpServer::start(dir.path(), &[], &[]);
    let arguments = serde_json::json!({ "path": "big.txt", "content": "x".repeat(30 << 10) }).to_string();
    let seen = client_as(
        MODERN,
        dir.path(),
        &["approve", "--answer", "approve", "--arguments", &arguments],
        &["--http".into(), server.url.clone()],
    );
    assert_eq!(seen["asked"], serde_json::json!([]), "nobody is asked what could not be answered: {seen}");
    let text = seen["result"]["text"].as_str().unwrap();
    assert!(
        text.contains("cannot be put to the user over MCP 2026-07-28") && text.contains("[mcp] max_request_kib = 64"),
        "{seen}"
    );
    assert!(!dir.path().join("ws/big.txt").exists());
}

#[test]
fn a_revision_the_server_does_not_speak_is_refused_naming_those_it_does() {
    let dir = workspace();
    let server = HttpServer::start(dir.path(), &[], &[]);
    let meta = |version: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"{version}","io.modelcontextprotocol/clientInfo":{{"name":"raw","version":"1"}},"io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
        )
    };
    let (status, said) =
        post_body_with(&server, "MCP-Protocol-Version: 2099-01-01\r\nMcp-Method: tools/list\r\n", meta("2099-01-01").as_bytes());
    assert!(said.contains("2026-07-28") && said.contains("2025-11-25"), "{status}: {said}");
    assert!(!said.contains("\"tools\""), "nothing listed: {said}");
    let (status, said) =
        post_body_with(&server, "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n", meta(MODERN).as_bytes());
    assert_eq!(status, 200, "{said}");
    assert!(
        said.contains("\"calculate\"") && said.contains("\"ttlMs\":10000") && said.contains("\"cacheScope\":\"private\""),
        "{said}"
    );
}

#[test]
fn a_held_result_is_a_second_round_of_input_required_in_2026() {
    let dir = workspace();
    std::fs::write(dir.path().join("ws/secret.txt"), "the launch code").unwrap();
    let read = ["--tool", "read_file", "--arguments", r#"{"path": "secret.txt"}"#];
    let passed = client_as(MODERN, dir.path(), &[&["approve", "--answer", "approve"][..], &read].concat(), &over_stdio(&[]));
    let asked: Vec<&str> = passed["asked"].as_array().unwrap().iter().map(|q| q["message"].as_str().unwrap()).collect();
    assert_eq!(asked.len(), 2, "the call, then its result: {passed}");
    assert!(asked[0].starts_with("Run `read_file`") && asked[1].contains("the launch code"), "{asked:?}");
    assert_eq!(
        (passed["result"]["is_error"].as_bool(), passed["result"]["text"].as_str()),
        (Some(false), Some("the launch code"))
    );
    let withheld = client_as(MODERN, dir.path(), &[&["approve", "--answer", "withhold"][..], &read].concat(), &over_stdio(&[]));
    assert_eq!(withheld["result"]["text"], "result-rejected: a person withheld the result: private", "{withheld}");
}

#[test]
fn a_server_that_cannot_start_tells_the_client_why_on_its_first_request() {
    let dir = tempfile::tempdir().unwrap();
    let seen = client(dir.path(), &["start"], &over_stdio(&["--plugins", "/no/such/plugins"]));
    assert_eq!(seen["started"], false, "{seen}");
    let error = seen["error"].as_str().unwrap();
    assert!(error.contains("toolhost mcp could not start") && error.contains("/no/such/plugins"), "{seen}");
}
