//! `toolhost console`, run as a user runs it: its API over real HTTP
//! (every endpoint, the token, the origin and host checks, the approval
//! desk), and the page itself in headless Chromium driven over WebDriver
//! (Debian's `chromium` and `chromium-driver`, installed by `cargo xtask
//! test`): run a tool from its form, parse a pasted reply, a chat turn
//! against the scripted stand-in model approved and then denied in the
//! page, and a call from the official MCP Python client approved there.
//!
//! Each browser test saves a screenshot under `target/console-screenshots/`
//! when it fails. `TOOLHOST_UPDATE_SCREENSHOTS=1` also writes the README's
//! screenshot of a chat with an approval pending, `docs/console-chat.png`.

mod support;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::in_test_home;
use toolhost_standin::{Response, StandIn};

/// How long a browser waits for something to appear.
const PATIENCE: Duration = Duration::from_secs(30);

const VCP_CALCULATE: &str = "Let me compute.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」calculate「末」,\nexpression:「始」6 * 7「末」\n<<<[END_TOOL_REQUEST]>>>";
const VCP_WRITE: &str = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」write_file「末」,\npath:「始」note.txt「末」,\ncontent:「始」hello「末」\n<<<[END_TOOL_REQUEST]>>>";

fn workspace() -> tempfile::TempDir {
    support::workspace_with_hostile()
}

/// A running `toolhost` that prints a console URL, killed when dropped.
struct Running {
    child: Child,
    /// Every line it printed on stderr so far.
    stderr: Arc<Mutex<String>>,
    /// The console's link, with its token.
    link: String,
}

impl Running {
    /// Start `toolhost ARGS` in `cwd` and wait for the console's link (and
    /// for `also`, a second line to wait for, when given).
    fn start(cwd: &Path, args: &[&str], also: Option<&str>) -> Running {
        Self::launch(cwd, args, also, &[], true)
    }

    /// `start`, with `envs` set, waiting for the console's link only
    /// `with_link` (a door asking at another process's console has none).
    fn launch(cwd: &Path, args: &[&str], also: Option<&str>, envs: &[(&str, &Path)], with_link: bool) -> Running {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
        in_test_home(&mut command).current_dir(cwd).env_remove("RUST_LOG").args(args);
        for (name, value) in envs {
            command.env(name, value);
        }
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = command.spawn().expect("toolhost starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut link = (!with_link).then(String::new);
        let mut waiting_for = also;
        while link.is_none() || waiting_for.is_some() {
            let Some(Ok(line)) = lines.next() else {
                panic!("toolhost {args:?} ended before its console was up:\n{}", stderr.lock().unwrap());
            };
            stderr.lock().unwrap().push_str(&format!("{line}\n"));
            if let Some(at) = line.find("console: open http://") {
                link = Some(line[at + "console: open ".len()..].trim().to_owned());
            }
            if waiting_for.is_some_and(|text| line.contains(text)) {
                waiting_for = None;
            }
        }
        let seen = stderr.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                seen.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        Running { child, stderr, link: link.unwrap() }
    }

    /// `http://127.0.0.1:PORT`
    fn base(&self) -> &str {
        self.link.split("/?token=").next().unwrap()
    }

    fn token(&self) -> &str {
        self.link.split("?token=").nth(1).unwrap()
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The MCP endpoint it printed it serves at.
    fn mcp_url(&self) -> String {
        let line = self.line_with("serving MCP at");
        line[line.find("http://").unwrap()..].split_whitespace().next().unwrap().to_owned()
    }

    /// That endpoint's host and port.
    fn mcp_authority(&self) -> String {
        self.mcp_url().trim_start_matches("http://").split('/').next().unwrap().to_owned()
    }

    /// The line of stderr that contains `text`.
    fn line_with(&self, text: &str) -> String {
        self.stderr().lines().find(|line| line.contains(text)).unwrap_or_default().to_owned()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `toolhost console` in `cwd` on a free port, talking to `model`.
fn console(cwd: &Path, model: Option<&StandIn>) -> Running {
    let mut args = vec!["console", "--listen", "127.0.0.1:0", "--no-watch"];
    let url = model.map(StandIn::base_url);
    if let Some(url) = &url {
        args.extend(["--base-url", url]);
    }
    Running::start(cwd, &args, None)
}

/// The console's API as a script holding the token uses it.
struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
}

/// An HTTP client (plain HTTP; rustls wants its provider named all the same).
fn http_client(follow_redirects: bool) -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let redirects = if follow_redirects { reqwest::redirect::Policy::default() } else { reqwest::redirect::Policy::none() };
    reqwest::Client::builder().redirect(redirects).build().unwrap()
}

impl Api {
    fn of(running: &Running) -> Api {
        Api { http: http_client(true), base: running.base().to_owned(), token: running.token().to_owned() }
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> (u16, Value) {
        let response = request.bearer_auth(&self.token).send().await.expect("the console answers");
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    async fn get(&self, path: &str) -> Value {
        let (status, body) = self.send(self.http.get(format!("{}{path}", self.base))).await;
        assert_eq!(status, 200, "GET {path}: {body}");
        body
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let request =
            self.http.post(format!("{}{path}", self.base)).header("content-type", "application/json").body(body.to_string());
        self.send(request).await
    }

    async fn delete(&self, path: &str, body: Value) -> (u16, Value) {
        let request =
            self.http.delete(format!("{}{path}", self.base)).header("content-type", "application/json").body(body.to_string());
        self.send(request).await
    }

    /// Wait until something waits at the desk; the first such request.
    async fn pending(&self) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let desk = self.get("/api/pending").await;
            if let Some(first) = desk["pending"].as_array().and_then(|items| items.first()) {
                return first.clone();
            }
            assert!(Instant::now() < deadline, "nothing came to the desk");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Wait until `waiting`, whose client vanished, leaves the desk (in
    /// `case`), and check it cannot be approved after.
    async fn withdrawn(&self, waiting: &Value, case: &str) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !self.get("/api/pending").await["pending"].as_array().unwrap().is_empty() {
            assert!(Instant::now() < deadline, "{case}: the question of a vanished client stayed at the desk");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let (status, _) = self.post(&format!("/api/pending/{}", waiting["id"]), json!({ "verdict": "allow" })).await;
        assert_ne!(status, 200, "{case}: a withdrawn question cannot be approved");
    }

    /// Wait until the chat's turn is over.
    async fn chat_done(&self) {
        let deadline = Instant::now() + PATIENCE;
        while self.get("/api/state").await["chat"]["busy"] == true {
            assert!(Instant::now() < deadline, "the chat turn did not end");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_token_nothing_is_served_and_the_printed_link_sets_a_cookie() {
    let dir = workspace();
    let running = console(dir.path(), None);
    let http = http_client(false);
    for path in ["/", "/console.js", "/api/state", "/api/tools", "/api/events", "/api/audit"] {
        let response = http.get(format!("{}{path}", running.base())).send().await.unwrap();
        assert_eq!(response.status().as_u16(), 401, "{path} without the token");
    }
    let wrong = http.get(format!("{}/api/state", running.base())).bearer_auth("0123").send().await.unwrap();
    assert_eq!(wrong.status().as_u16(), 401, "a wrong token");
    let run = http.post(format!("{}/api/run", running.base())).body(r#"{"tool":"calculate"}"#).send().await.unwrap();
    assert_eq!(run.status().as_u16(), 401, "nothing runs without it");

    // The printed link: a cookie, and the same page without the token.
    let entered = http.get(&running.link).send().await.unwrap();
    assert_eq!(entered.status().as_u16(), 303);
    assert_eq!(entered.headers()["location"], "/");
    let cookie = entered.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    let pair = cookie.split(';').next().unwrap().to_owned();
    let page = http.get(format!("{}/", running.base())).header("cookie", &pair).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let csp = page.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(page.text().await.unwrap().contains("toolhost"));
    // A page on another port of this host may plant a decoy of the same
    // name (cookies do not keep to ports): the console still lets in the
    // right one.
    let name = pair.split('=').next().unwrap();
    let decoyed = format!("{name}=decoy; {pair}");
    let state = http.get(format!("{}/api/state", running.base())).header("cookie", decoyed).send().await.unwrap();
    assert_eq!(state.status().as_u16(), 200, "a decoy cookie does not lock the console out");
    // The link's redirect stays on the console.
    let token = running.token();
    let away = http.get(format!("{}//evil.example/?token={token}", running.base())).send().await.unwrap();
    assert_eq!(away.headers()["location"], "/", "`//host` would leave the console");
}

#[test]
fn a_body_announced_larger_than_any_the_console_reads_is_refused_at_once() {
    use std::io::{Read, Write};
    let dir = workspace();
    let running = console(dir.path(), None);
    let authority = running.base().trim_start_matches("http://").to_owned();
    let mut stream = std::net::TcpStream::connect(&authority).unwrap();
    let request = format!(
        "POST /api/parse HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\n\
         Content-Length: 2147483648\r\nConnection: close\r\n\r\n{{",
        running.token()
    );
    stream.write_all(request.as_bytes()).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let started = Instant::now();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(5), "refused before the body was waited for: {:?}", started.elapsed());
}

#[test]
fn an_unspecified_address_is_refused_for_the_host_check_it_would_defeat() {
    let dir = workspace();
    let out = support::toolhost(dir.path(), &["console", "--listen", "0.0.0.0:0", "--no-watch"]);
    let stderr = support::text(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("cannot listen on 0.0.0.0:0") && stderr.contains("name that address"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_origins_and_other_host_names_are_refused() {
    let dir = workspace();
    let running = console(dir.path(), None);
    let api = Api::of(&running);
    let run = |headers: &[(&str, &str)]| {
        let mut request =
            api.http.post(format!("{}/api/run", api.base)).bearer_auth(&api.token).header("content-type", "application/json");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(json!({ "tool": "calculate", "arguments": { "expression": "1+1" } }).to_string()).send()
    };
    let evil = run(&[("origin", "http://evil.example")]).await.unwrap();
    assert_eq!(evil.status().as_u16(), 403, "a cross-origin POST");
    assert!(evil.text().await.unwrap().contains("another origin"));
    let sibling = run(&[("origin", "http://127.0.0.1:1")]).await.unwrap();
    assert_eq!(sibling.status().as_u16(), 403, "another port of localhost is another origin");
    let blind = run(&[("sec-fetch-site", "cross-site")]).await.unwrap();
    assert_eq!(blind.status().as_u16(), 403, "a browser's cross-site fetch without an Origin");
    let own = format!("http://{}", running.base().trim_start_matches("http://"));
    let same = run(&[("origin", &own), ("sec-fetch-site", "same-origin")]).await.unwrap();
    assert_eq!(same.status().as_u16(), 200, "its own page");
    // DNS rebinding: the right token, a foreign Host.
    let rebound = api
        .http
        .get(format!("{}/api/state", api.base))
        .bearer_auth(&api.token)
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status().as_u16(), 421);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_toggles_prompt_parse_and_run_over_the_api() {
    let dir = workspace();
    let running = console(dir.path(), None);
    let api = Api::of(&running);

    let state = api.get("/api/state").await;
    assert_eq!(state["agent"], "console");
    assert_eq!(state["plugins"], json!(["calc@0.1.0", "files@0.1.0", "hostile@0.1.0"]));
    let tools = api.get("/api/tools").await;
    let tool = |name: &str| tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).cloned().unwrap();
    assert_eq!(tool("calculate")["offered"], true);
    assert_eq!(tool("write_file")["level"], "sensitive");
    assert_eq!(tool("read_file")["result_approval"], true);
    let asked = &tool("write_file")["capabilities"][0];
    assert_eq!((&asked["kind"], &asked["item"], &asked["how"]), (&json!("dir"), &json!("/workspace"), &json!("read-write → ws")));
    assert_eq!(tool("calculate")["params"][0]["name"], "expression");

    // The prompt offers calculate until it is turned off, at once.
    let prompt = api.get("/api/prompt").await;
    let vcp = prompt["prompts"].as_array().unwrap().iter().find(|p| p["protocol"] == "vcp").unwrap().clone();
    assert_eq!(prompt["prompts"].as_array().unwrap().len(), 4, "every protocol but auto");
    assert!(vcp["text"].as_str().unwrap().contains("calculate") && vcp["tokens"].as_u64().unwrap() > 10, "{vcp}");
    let (status, after) = api.post("/api/toggles", json!({ "tool": "calculate", "enabled": false })).await;
    assert_eq!(status, 200, "{after}");
    assert_eq!(after["tool_toggles"]["calculate"], false);
    assert_eq!(api.get("/api/tools").await["tools"][0]["offered"], false);
    let prompt = api.get("/api/prompt").await;
    assert!(!prompt["tools"].as_array().unwrap().contains(&json!("calculate")), "{}", prompt["tools"]);
    let (status, _) = api.post("/api/toggles", json!({ "enabled": false })).await;
    assert_eq!(status, 200);
    assert_eq!(api.get("/api/prompt").await["tools"], json!([]), "default_tool_enabled = false offers nothing");
    let (status, typo) = api.post("/api/toggles", json!({ "tool": "calculat", "enabled": true })).await;
    assert_eq!(status, 404);
    assert!(typo["error"].as_str().unwrap().contains("calculate"), "the closest name: {typo}");

    // Parse: the call, typed by its declaration, where it stands.
    let (status, parsed) = api.post("/api/parse", json!({ "text": VCP_CALCULATE })).await;
    assert_eq!(status, 200);
    assert_eq!(parsed["calls"][0]["name"], "calculate");
    assert_eq!(parsed["calls"][0]["arguments"], json!({ "expression": "6 * 7" }));
    let start = parsed["calls"][0]["span"][0].as_u64().unwrap() as usize;
    assert!(VCP_CALCULATE[start..].starts_with("<<<[TOOL_REQUEST]>>>"));
    assert_eq!(parsed["content"].as_str().unwrap().trim(), "Let me compute.");
    let (_, drift) =
        api.post("/api/parse", json!({ "text": "<tool_call>{\"name\": \"calculat\", \"arguments\": {}}</tool_call>" })).await;
    assert_eq!(drift["calls"][0]["undeclared"], true);
    assert!(drift["warnings"][0]["message"].as_str().unwrap().contains("calculate"), "{drift}");

    // Run: any tool, whatever the agent's toggles; a hostile one's limit named.
    let (status, ran) = api.post("/api/run", json!({ "tool": "calculate", "arguments": { "expression": "6*7" } })).await;
    assert_eq!(status, 200);
    assert_eq!(ran["outcome"]["status"], "success", "{ran}");
    assert!(ran["outcome"]["output"].as_str().unwrap().contains("42"));
    assert!(ran["outcome"]["fuel_used"].as_u64().unwrap() > 0);
    let (_, spun) = api.post("/api/run", json!({ "tool": "spin" })).await;
    assert_eq!(spun["outcome"]["status"], "out-of-fuel", "{spun}");
    assert_eq!(spun["outcome"]["failure"]["kind"], "out-of-fuel");
    let (_, bad) = api.post("/api/run", json!({ "tool": "calculate", "arguments": {} })).await;
    assert_eq!(bad["outcome"]["status"], "invalid-args", "{bad}");

    // The audit log, newest first.
    let audit = api.get("/api/audit").await;
    let statuses: Vec<&str> = audit["records"].as_array().unwrap().iter().filter_map(|r| r["status"].as_str()).collect();
    assert_eq!(statuses.first(), Some(&"invalid-args"), "{audit}");
    assert!(statuses.contains(&"out-of-fuel") && statuses.contains(&"success"), "{statuses:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_desk_decides_calls_and_results_remembers_and_revokes() {
    let dir = workspace();
    let list = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」list_files「末」,\npath:「始」.「末」\n<<<[END_TOOL_REQUEST]>>>";
    let script = [Response::text(list), Response::text("Listed: {{last_message}}")];
    let model = StandIn::start(script).await.unwrap();
    let running = console(dir.path(), Some(&model));
    let api = Api::of(&running);

    // A moderate call from the chat waits at the desk, from the console's door.
    let (status, started) = api.post("/api/chat", json!({ "message": "What is in the workspace?" })).await;
    assert_eq!(status, 202, "{started}");
    let (status, busy) = api.post("/api/chat", json!({ "message": "again" })).await;
    assert_eq!(status, 409, "one turn at a time: {busy}");
    let waiting = api.pending().await;
    assert_eq!((waiting["door"].as_str(), waiting["caller"].as_str()), (Some("console"), Some("chat")), "{waiting}");
    assert_eq!(waiting["calls"][0]["tool"], "list_files");
    assert_eq!(waiting["calls"][0]["can_remember"], true);
    assert!(waiting["expires_at_ms"].as_u64().unwrap() > 0);
    let id = waiting["id"].as_u64().unwrap();
    let (status, wrong) = api.post(&format!("/api/pending/{id}"), json!({ "verdict": "pass" })).await;
    assert_eq!(status, 400, "a call is not passed: {wrong}");
    let (status, _) = api.post(&format!("/api/pending/{id}"), json!({ "verdict": "always" })).await;
    assert_eq!(status, 200);
    let (status, _) = api.post(&format!("/api/pending/{id}"), json!({ "verdict": "allow" })).await;
    assert_eq!(status, 410, "decided already");
    api.chat_done().await;
    let history = api.get("/api/chat").await;
    let roles: Vec<&str> = history["entries"].as_array().unwrap().iter().map(|e| e["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "assistant"], "{history}");

    // Remembered, then revoked.
    let remembered = api.get("/api/approvals").await;
    assert_eq!(remembered["remembered"][0]["tool"], "list_files", "{remembered}");
    let (status, revoked) = api.delete("/api/approvals", json!({ "tool": "list_files", "agent": "console" })).await;
    assert_eq!((status, revoked["revoked"].as_u64()), (200, Some(1)));
    assert_eq!(api.get("/api/approvals").await["remembered"], json!([]));

    // A result that needs approval waits for Pass or Reject; a rejection's
    // reason is what comes back, never the text.
    std::fs::write(dir.path().join("ws/secret.txt"), "the launch codes").unwrap();
    let api = Arc::new(api);
    let runner = {
        let api = api.clone();
        tokio::spawn(
            async move { api.post("/api/run", json!({ "tool": "read_file", "arguments": { "path": "secret.txt" } })).await },
        )
    };
    let waiting = api.pending().await;
    assert_eq!(waiting["result"]["output"], "the launch codes", "{waiting}");
    let id = waiting["id"].as_u64().unwrap();
    let (status, _) = api.post(&format!("/api/pending/{id}"), json!({ "verdict": "reject", "reason": "private" })).await;
    assert_eq!(status, 200);
    let (_, ran) = runner.await.unwrap();
    assert_eq!(ran["outcome"]["status"], "result-rejected", "{ran}");
    assert!(!ran["outcome"]["output"].as_str().unwrap().contains("launch codes"));
    assert!(ran["outcome"]["output"].as_str().unwrap().contains("private"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_withdraws_a_result_waiting_for_approval_and_none_of_it_goes_on() {
    let dir = workspace();
    std::fs::write(dir.path().join("ws/secret.txt"), "the launch codes").unwrap();
    let read = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」read_file「末」,\npath:「始」secret.txt「末」\n<<<[END_TOOL_REQUEST]>>>";
    let model = StandIn::start([Response::text(read), Response::text("never asked")]).await.unwrap();
    let running = console(dir.path(), Some(&model));
    let api = Api::of(&running);
    let (status, _) = api.post("/api/chat", json!({ "message": "Read the secret" })).await;
    assert_eq!(status, 202);
    // read_file is moderate: allow the call, then its result waits.
    let call = api.pending().await;
    let (status, _) = api.post(&format!("/api/pending/{}", call["id"]), json!({ "verdict": "allow" })).await;
    assert_eq!(status, 200);
    let deadline = Instant::now() + PATIENCE;
    let result = loop {
        let desk = api.get("/api/pending").await;
        if let Some(result) = desk["pending"].as_array().and_then(|p| p.iter().find(|item| !item["result"].is_null())) {
            break result.clone();
        }
        assert!(Instant::now() < deadline, "the result never waited: {desk}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(result["result"]["output"], "the launch codes");
    let (_, stopped) = api.post("/api/chat/stop", json!({})).await;
    assert_eq!(stopped["stopped"], true);
    api.chat_done().await;
    assert_eq!(api.get("/api/pending").await["pending"], json!([]), "the result is withdrawn");
    let history = api.get("/api/chat").await;
    let tool = history["entries"].as_array().unwrap().iter().find(|e| e["role"] == "tool").cloned().unwrap();
    assert_eq!(tool["status"], "cancelled", "{tool}");
    assert!(!history.to_string().contains("launch codes"), "none of the result went on: {history}");
    // Passing it now is too late.
    let (status, _) = api.post(&format!("/api/pending/{}", result["id"]), json!({ "verdict": "pass" })).await;
    assert_eq!(status, 410);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_desk_holds_at_most_64_requests_and_refuses_more_saying_why() {
    let dir = workspace();
    std::fs::write(dir.path().join("ws/a.txt"), "a").unwrap();
    let running = console(dir.path(), None);
    let api = Arc::new(Api::of(&running));
    // Each Run of read_file waits at the desk for its result to be passed.
    let waiting: Vec<_> = (0..64)
        .map(|_| {
            let api = api.clone();
            tokio::spawn(
                async move { api.post("/api/run", json!({ "tool": "read_file", "arguments": { "path": "a.txt" } })).await },
            )
        })
        .collect();
    let deadline = Instant::now() + PATIENCE;
    while api.get("/api/pending").await["pending"].as_array().unwrap().len() < 64 {
        assert!(Instant::now() < deadline, "64 results never waited");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, refused) = api.post("/api/run", json!({ "tool": "read_file", "arguments": { "path": "a.txt" } })).await;
    assert_eq!(refused["outcome"]["status"], "result-rejected", "{refused}");
    assert!(refused["outcome"]["output"].as_str().unwrap().contains("64 requests already wait"), "{refused}");
    for item in api.get("/api/pending").await["pending"].as_array().unwrap() {
        api.post(&format!("/api/pending/{}", item["id"]), json!({ "verdict": "pass" })).await;
    }
    for run in waiting {
        assert_eq!(run.await.unwrap().1["outcome"]["status"], "success");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_cancels_a_turn_waiting_at_the_desk_and_withdraws_its_question() {
    let dir = workspace();
    let model = StandIn::start([Response::text(VCP_WRITE), Response::text("never asked")]).await.unwrap();
    let running = console(dir.path(), Some(&model));
    let api = Api::of(&running);
    let (status, _) = api.post("/api/chat", json!({ "message": "Save a note" })).await;
    assert_eq!(status, 202);
    let waiting = api.pending().await;
    assert_eq!(waiting["calls"][0]["tool"], "write_file");
    let (_, stopped) = api.post("/api/chat/stop", json!({})).await;
    assert_eq!(stopped["stopped"], true);
    api.chat_done().await;
    assert_eq!(api.get("/api/pending").await["pending"], json!([]), "the question is withdrawn");
    assert!(!dir.path().join("ws/note.txt").exists());
    assert_eq!(model.requests().len(), 1, "the model is not asked again");
}

// ---- the page, in a real browser -----------------------------------------

/// ChromeDriver on a free port, killed when dropped; `None` (the skip
/// printed) only where `cargo xtask test` could not install it.
struct Driver {
    child: Child,
    url: String,
}

impl Driver {
    fn start() -> Option<Driver> {
        let found = Command::new("sh").args(["-c", "command -v chromedriver"]).output().is_ok_and(|o| o.status.success());
        if !found {
            let skipped = support::toolchains().join("browser.skipped");
            match std::fs::read_to_string(&skipped) {
                Ok(reason) => {
                    support::skip("Chromium, for the console's browser test", &reason);
                    return None;
                }
                Err(_) => panic!("chromedriver is missing; run `cargo xtask browser` (or `cargo xtask test`)"),
            }
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let deadline = Instant::now() + PATIENCE;
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(Driver { child, url: format!("http://127.0.0.1:{port}") })
    }

    async fn browser(&self) -> Client {
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".into(),
            json!({ "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"] }),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        ClientBuilder::new(connector).capabilities(capabilities).connect(&self.url).await.expect("a Chromium session")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

type Step = Result<(), String>;

fn failed(what: impl std::fmt::Display) -> String {
    what.to_string()
}

/// Run `test` in a fresh browser; on failure save a screenshot as
/// `target/console-screenshots/NAME.png`, then fail.
async fn in_browser<F, Fut>(name: &str, test: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = Step>,
{
    let Some(driver) = Driver::start() else { return };
    let browser = driver.browser().await;
    let outcome = test(browser.clone()).await;
    if let Err(why) = outcome {
        let shot = screenshots().join(format!("{name}.png"));
        if let Ok(png) = browser.screenshot().await {
            let _ = std::fs::write(&shot, png);
        }
        let _ = browser.close().await;
        panic!("{name}: {why} (screenshot: {})", shot.display());
    }
    let _ = browser.close().await;
}

fn screenshots() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/console-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Wait until the element `css` shows text that `ready` accepts; its text.
async fn wait_text(browser: &Client, css: &str, ready: impl Fn(&str) -> bool) -> Result<String, String> {
    let deadline = Instant::now() + PATIENCE;
    let mut last = String::new();
    loop {
        if let Ok(found) = browser.find_all(Locator::Css(css)).await {
            for element in found {
                if let Ok(text) = element.text().await {
                    if ready(&text) {
                        return Ok(text);
                    }
                    last = text;
                }
            }
        }
        if Instant::now() > deadline {
            return Err(format!("`{css}` never showed what was expected; last: {last:?}"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn click(browser: &Client, css: &str) -> Step {
    let element = browser.wait().at_most(PATIENCE).for_element(Locator::Css(css)).await.map_err(|e| format!("`{css}`: {e}"))?;
    element.click().await.map_err(|e| format!("clicking `{css}`: {e}"))
}

async fn type_into(browser: &Client, css: &str, text: &str) -> Step {
    let element = browser.wait().at_most(PATIENCE).for_element(Locator::Css(css)).await.map_err(|e| format!("`{css}`: {e}"))?;
    element.clear().await.map_err(failed)?;
    element.send_keys(text).await.map_err(|e| format!("typing into `{css}`: {e}"))
}

/// Open the printed link and wait for the page to have loaded the tools.
async fn open(browser: &Client, link: &str) -> Step {
    browser.goto(link).await.map_err(failed)?;
    browser
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css("body[data-ready]"))
        .await
        .map_err(|e| format!("the page never got ready: {e}"))?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_opens_from_the_link_runs_calculate_and_parses_a_vcp_reply() {
    let dir = workspace();
    let running = console(dir.path(), None);
    let link = running.link.clone();
    let written = dir.path().join("ws/confirmed.txt");
    in_browser("run_and_parse", |browser| async move {
        open(&browser, &link).await?;
        let url = browser.current_url().await.map_err(failed)?;
        if url.query().is_some() {
            return Err(format!("the token stays in the address bar: {url}"));
        }
        wait_text(&browser, "#tools-table tr[data-tool=calculate]", |t| t.contains("calc@0.1.0")).await?;
        wait_text(&browser, "#tools-table tr[data-tool=write_file]", |t| {
            t.contains("sensitive") && t.contains("read-write → ws")
        })
        .await?;
        browser.find(Locator::Css("link[rel=icon]")).await.map_err(|e| format!("the page has no icon: {e}"))?;

        // A sensitive tool is confirmed before the form runs it: dismissed,
        // nothing is written; accepted, it runs.
        click(&browser, "#tabs button[data-tab=run]").await?;
        let tools = browser.find(Locator::Css("#run-tool")).await.map_err(failed)?;
        tools.select_by_value("write_file").await.map_err(|e| format!("choosing write_file: {e}"))?;
        type_into(&browser, "#run-form [name=path]", "confirmed.txt").await?;
        type_into(&browser, "#run-form [name=content]", "yes").await?;
        for accept in [false, true] {
            click(&browser, "#run-go").await?;
            let asked = browser.get_alert_text().await.map_err(|e| format!("no confirmation for a sensitive tool: {e}"))?;
            if !asked.contains("write_file (sensitive)") || !asked.contains("confirmed.txt") {
                return Err(format!("the confirmation names the tool and its arguments: {asked}"));
            }
            if accept {
                browser.accept_alert().await.map_err(failed)?;
                wait_text(&browser, "#run-result .status", |t| t == "success").await?;
            } else {
                browser.dismiss_alert().await.map_err(failed)?;
                tokio::time::sleep(Duration::from_millis(300)).await;
                if written.exists() {
                    return Err("a dismissed confirmation still ran the tool".to_owned());
                }
            }
        }
        if !written.exists() {
            return Err("an accepted confirmation did not run the tool".to_owned());
        }
        tools.select_by_value("calculate").await.map_err(|e| format!("choosing calculate: {e}"))?;

        click(&browser, "#tabs button[data-tab=run]").await?;
        type_into(&browser, "#run-form [name=expression]", "6*7").await?;
        click(&browser, "#run-go").await?;
        wait_text(&browser, "#run-result .status", |t| t == "success").await?;
        wait_text(&browser, "#run-output", |t| t.contains("42")).await?;
        // A hostile tool: its limit is named as such.
        let tools = browser.find(Locator::Css("#run-tool")).await.map_err(failed)?;
        tools.select_by_value("spin").await.map_err(|e| format!("choosing spin: {e}"))?;
        click(&browser, "#run-go").await?;
        wait_text(&browser, "#run-result .status", |t| t == "out-of-fuel").await?;
        wait_text(&browser, "#run-result .failure", |t| t.contains("the limit fuel =") && t.contains("hostile@")).await?;

        click(&browser, "#tabs button[data-tab=parse]").await?;
        type_into(&browser, "#parse-text", VCP_CALCULATE).await?;
        click(&browser, "#parse-go").await?;
        wait_text(&browser, "#parse-calls .call-name", |t| t == "calculate").await?;
        wait_text(&browser, "#parse-marked mark.call", |t| t.contains("TOOL_REQUEST")).await?;
        Ok(())
    })
    .await;
}

/// The parse view's one button that shows more of a tree.
const SHOWN_MORE: &str =
    "[...document.querySelectorAll('#parse-calls .more')].find((b) => !b.hidden && b.textContent.includes('not shown'))";

/// Wait until the parse view's button for more says `what`.
async fn wait_for_more(browser: &Client, what: &str) -> Step {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let said = browser.execute(&format!("return {SHOWN_MORE}?.textContent ?? ''"), vec![]).await.map_err(failed)?;
        if said.as_str().is_some_and(|said| said.contains(what)) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("the button for more never said {what:?}; last: {said}"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Elements the page holds under `css`, counted in the page.
async fn elements_under(browser: &Client, css: &str) -> Result<u64, String> {
    let counted = browser
        .execute("return document.querySelectorAll(arguments[0] + ' *').length", vec![json!(css)])
        .await
        .map_err(|e| format!("counting under `{css}`: {e}"))?;
    counted.as_u64().ok_or_else(|| format!("counting under `{css}` gave {counted}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_of_a_hundred_thousand_items_are_shown_a_page_at_a_time() {
    // The same view shows a call's arguments on the desk's cards: a model
    // or a client sending a hundred thousand items, or a string of
    // hidden characters, made an element of each before anyone looked.
    let dir = workspace();
    let running = console(dir.path(), None);
    let link = running.link.clone();
    let many = vec!["0"; 100_000].join(",");
    // Twenty strings of hidden characters, and 8 000 items in small
    // objects nested three deep, each small enough to open by itself.
    let hidden = format!("\"{}\"", "\u{200b}".repeat(300));
    let hidden_many = vec![hidden.as_str(); 20].join(",");
    let nest = |inner: String| format!("{{{}}}", (0..20).map(|k| format!("\"k{k}\": {inner}")).collect::<Vec<_>>().join(","));
    let deep = nest(nest(nest("0".to_owned())));
    let reply = format!(
        "```json\n{{\"name\": \"calculate\", \"arguments\": {{\"a_hidden\": [{hidden_many}], \"expression\": \"1\", \"many\": [{many}], \"hidden\": \"{}\", \"deep\": {deep}}}}}\n```",
        "\u{200b}".repeat(5_000)
    );
    in_browser("many_items", |browser| async move {
        open(&browser, &link).await?;
        click(&browser, "#tabs button[data-tab=parse]").await?;
        browser
            .execute("document.querySelector('#parse-text').value = arguments[0]", vec![json!(reply)])
            .await
            .map_err(|e| format!("setting the reply: {e}"))?;
        click(&browser, "#parse-go").await?;
        wait_text(&browser, "#parse-calls .call-name", |t| t == "calculate").await?;
        let args = wait_text(&browser, "#parse-calls .json", |t| t.contains("[100000 items]")).await?;
        if !args.contains("⟦U+200B⟧") {
            return Err(format!("the hidden characters are not shown: {}", &args[..args.len().min(300)]));
        }
        let closed = elements_under(&browser, "#parse-calls").await?;
        if closed > 2_000 {
            return Err(format!("{closed} elements for arguments nobody opened"));
        }
        let open_many =
            "[...document.querySelectorAll('#parse-calls summary')].find((s) => s.textContent.includes('\"many\"')).click()";
        browser.execute(open_many, vec![]).await.map_err(|e| format!("opening `many`: {e}"))?;
        wait_for_more(&browser, "99800 not shown").await?;
        let opened = elements_under(&browser, "#parse-calls").await?;
        if opened > closed + 1_000 {
            return Err(format!("{opened} elements once `many` was opened, against {closed} before"));
        }
        browser.execute(&format!("{SHOWN_MORE}.click()"), vec![]).await.map_err(|e| format!("asking for more: {e}"))?;
        wait_for_more(&browser, "99600 not shown").await?;
        Ok(())
    })
    .await;
}

/// Whether a card on the desk says its call's arguments are shown in part.
async fn shown_in_part(browser: &Client) -> Result<bool, String> {
    let script = "return [...document.querySelectorAll('#desk .pending .partly')].some((note) => !note.hidden)";
    let said = browser.execute(script, vec![]).await.map_err(failed)?;
    said.as_bool().ok_or_else(|| format!("looking for the note gave {said}"))
}

/// Until no card on the desk says its call's arguments are shown in part.
async fn wait_shown_whole(browser: &Client) -> Step {
    let deadline = Instant::now() + PATIENCE;
    while shown_in_part(browser).await? {
        if Instant::now() > deadline {
            return Err("a card still says its arguments are shown in part once all of them are".into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_turn_is_approved_in_the_page_and_a_denial_reason_reaches_the_model() {
    let dir = workspace();
    // The second call's text is longer than a card shows at once.
    let long_write = VCP_WRITE.replace("「始」hello「末」", &format!("「始」{}「末」", "long ".repeat(1_000)));
    let script = [
        Response::text(VCP_WRITE),
        Response::text("Result: {{last_message}}"),
        Response::text(&long_write),
        Response::text("Told: {{last_message}}"),
    ];
    let model = StandIn::start(script).await.unwrap();
    let running = console(dir.path(), Some(&model));
    let written = dir.path().join("ws/note.txt");
    let link = running.link.clone();
    in_browser("chat_approval", |browser| async move {
        open(&browser, &link).await?;
        click(&browser, "#tabs button[data-tab=chat]").await?;

        // Approve: the tool message, then the answer.
        type_into(&browser, "#chat-input", "Save a note").await?;
        click(&browser, "#chat-send").await?;
        wait_text(&browser, "#desk .pending[data-door=console] .call[data-tool=write_file]", |t| t.contains("note.txt")).await?;
        wait_text(&browser, "#chat-state", |t| t.contains("waiting for your approval")).await?;
        // The reply shows the call as read, not the block as written.
        let call = wait_text(&browser, "#chat-log .msg.assistant .call", |t| t.contains("write_file")).await?;
        if !call.contains("note.txt") {
            return Err(format!("the call's arguments are shown: {call}"));
        }
        let reply = browser.find(Locator::Css("#chat-log .msg.assistant")).await.map_err(failed)?.text().await.map_err(failed)?;
        if reply.contains("<<<[TOOL_REQUEST]>>>") {
            return Err(format!("the raw call block shows: {reply}"));
        }
        if std::env::var_os("TOOLHOST_UPDATE_SCREENSHOTS").is_some() {
            let png = browser.screenshot().await.map_err(failed)?;
            std::fs::write(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/console-chat.png"), png).map_err(failed)?;
        }
        if shown_in_part(&browser).await? {
            return Err("a call shown whole is said to be shown in part".into());
        }
        click(&browser, "#desk .pending button.approve").await?;
        wait_text(&browser, "#chat-log .msg.tool", |t| t.contains("write_file") && t.contains("success")).await?;
        wait_text(&browser, "#chat-log .msg.assistant", |t| t.starts_with("Result:")).await?;
        let stale = browser.find_all(Locator::Css("#chat-log .msg.note[data-state]")).await.map_err(failed)?;
        if !stale.is_empty() {
            return Err(format!("{} lines still say a finished call waits or runs", stale.len()));
        }
        if !written.exists() {
            return Err("approved, yet the file was not written".into());
        }
        std::fs::remove_file(&written).map_err(failed)?;

        // Deny, with a reason the model is told.
        type_into(&browser, "#chat-input", "Save it again").await?;
        click(&browser, "#chat-send").await?;
        wait_text(&browser, "#desk .pending .call[data-tool=write_file]", |t| t.contains("long long")).await?;
        // Approving a text cut short, the person is told beside the
        // buttons, until they have shown it all.
        let told = wait_text(&browser, "#desk .pending .partly", |t| t.contains("Not all of these arguments are shown")).await?;
        let digits: String = told.chars().filter(char::is_ascii_digit).collect();
        if !digits.starts_with("50") {
            return Err(format!("the note does not give the arguments' size: {told}"));
        }
        click(&browser, "#desk .pending .json button.more").await?;
        wait_shown_whole(&browser).await?;
        type_into(&browser, "#desk .pending input.reason", "not in my workspace").await?;
        click(&browser, "#desk .pending button.deny").await?;
        wait_text(&browser, "#chat-log .msg.tool.failed", |t| t.contains("denied")).await?;
        wait_text(&browser, "#chat-log .msg.assistant", |t| t.starts_with("Told:")).await?;
        if written.exists() {
            return Err("denied, yet the file was written".into());
        }
        Ok(())
    })
    .await;
    let told = model.requests()[3].last_message().to_owned();
    assert!(told.contains("not in my workspace"), "the reason reaches the model: {told}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_from_the_official_mcp_client_waits_for_approval_in_the_page() {
    let dir = workspace();
    let args = ["mcp", "--http", "127.0.0.1:0", "--console", "127.0.0.1:0", "--no-watch"];
    let running = Running::start(dir.path(), &args, Some("serving MCP at"));
    let mcp_url = running.mcp_url();
    // The client would answer an elicitation by declining: the console,
    // not the client, is asked.
    let client = std::thread::spawn({
        let cwd = dir.path().to_owned();
        move || {
            Command::new(support::mcp_python())
                .current_dir(cwd)
                .arg(support::mcp_client_script())
                .args(["--http", &mcp_url, "approve", "--answer", "decline"])
                .output()
                .expect("the Python client runs")
        }
    });
    // The server outlives the page's part: the client still has to read
    // its result and close its session.
    let link = running.link.clone();
    in_browser("mcp_approval", |browser| async move {
        open(&browser, &link).await?;
        let card = wait_text(&browser, "#desk .pending[data-door=mcp]", |t| t.contains("write_file")).await?;
        if !card.contains("left") || !card.contains("approved over MCP") {
            return Err(format!("the card shows the caller, the arguments and the time left: {card}"));
        }
        click(&browser, "#desk .pending[data-door=mcp] button.approve").await?;
        browser
            .wait()
            .at_most(PATIENCE)
            .for_element(Locator::Css("#desk[hidden]"))
            .await
            .map_err(|e| format!("the desk never emptied: {e}"))?;
        Ok(())
    })
    .await;
    let output = client.join().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "client.py: {}\n{stdout}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(seen["asked"], json!([]), "the client was not asked: {seen}");
    assert_eq!(seen["result"]["is_error"], false, "{seen}");
    assert_eq!(std::fs::read_to_string(dir.path().join("ws/note.txt")).unwrap(), "approved over MCP");
}

/// Wait until the MCP server at `mcp_url`, asked as a 2026-07-28 client,
/// lists `tool` (or, with `listed` false, no longer does).
async fn wait_listed(mcp_url: &str, tool: &str, listed: bool) -> Step {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"list-test","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let named = format!("\"name\":\"{tool}\"");
    let deadline = Instant::now() + PATIENCE;
    loop {
        let asked = http_client(false)
            .post(mcp_url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/list")
            .body(body)
            .send()
            .await
            .map_err(failed)?;
        let text = asked.text().await.map_err(failed)?;
        if text.contains(&named) == listed {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("the MCP server still {} `{tool}`: {text}", if listed { "does not list" } else { "lists" }));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The page shows the agent `agent`; untick (or tick) `tool` there.
async fn toggle_in_page(browser: &Client, agent: &str, tool: &str) -> Step {
    let picked = browser.find(Locator::Css("#agent-pick")).await.map_err(failed)?;
    if picked.prop("value").await.map_err(failed)?.as_deref() != Some(agent) {
        picked.select_by_value(agent).await.map_err(|e| format!("picking agent `{agent}`: {e}"))?;
    }
    wait_text(browser, "#agent-pick option:checked", |t| t == agent).await?;
    click(browser, &format!("#tools-table tr[data-tool={tool}] input[type=checkbox]")).await
}

/// A raw POST of `body` to the MCP server at `authority` with `headers`,
/// its response left unread: the connection stays open until the stream is
/// dropped, as a client that vanishes leaves it.
fn open_post(authority: &str, headers: &[(&str, &str)], body: &str) -> std::net::TcpStream {
    use std::io::Write;
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    stream
}

/// The head of the response on `stream`, up to its blank line.
fn response_head(stream: &mut std::net::TcpStream) -> String {
    use std::io::Read;
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap() == 1 {
        head.push(byte[0]);
    }
    String::from_utf8_lossy(&head).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_http_client_vanishes_is_withdrawn_from_the_desk_in_both_eras() {
    let dir = workspace();
    let args = ["mcp", "--http", "127.0.0.1:0", "--console", "127.0.0.1:0", "--no-watch"];
    let running = Running::start(dir.path(), &args, Some("serving MCP at"));
    let authority = running.mcp_authority();
    let api = Api::of(&running);
    let write = |path: &str, meta: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"write_file","arguments":{{"path":"{path}","content":"x"}}{meta}}}}}"#
        )
    };

    // The handshake era: a session, then a call on a connection the
    // client drops while the call waits at the desk.
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"vanishing","version":"1"}}}"#;
    let mut opened = open_post(&authority, &[], initialize);
    let head = response_head(&mut opened);
    let session = head
        .lines()
        .find_map(|line| line.split_once(':').filter(|(name, _)| name.eq_ignore_ascii_case("mcp-session-id")))
        .map(|(_, id)| id.trim().to_owned())
        .unwrap_or_else(|| panic!("a session: {head}"));
    drop(opened);
    let with_session = [("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    drop(open_post(&authority, &with_session, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#));
    // And the 2026-07-28 revision: no session, everything in `_meta`.
    let modern_meta = r#","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"vanishing","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}"#;
    let modern = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "write_file")];
    for (era, headers, body) in
        [("handshake", &with_session[..], write("legacy.txt", "")), ("2026-07-28", &modern[..], write("modern.txt", modern_meta))]
    {
        let call = open_post(&authority, headers, &body);
        let waiting = api.pending().await;
        assert_eq!(waiting["calls"][0]["tool"], "write_file", "{era}: {waiting}");
        drop(call);
        api.withdrawn(&waiting, era).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!dir.path().join("ws/legacy.txt").exists() && !dir.path().join("ws/modern.txt").exists(), "nothing ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hidden_characters_show_as_marked_placeholders_on_every_card() {
    let dir = workspace();
    // A held result that would read reversed: the file's text.
    std::fs::write(dir.path().join("ws/report.txt"), "total: 100\u{202e}00.0$ refund\u{200b}").unwrap();
    let args = ["mcp", "--http", "127.0.0.1:0", "--console", "127.0.0.1:0", "--no-watch"];
    let running = Running::start(dir.path(), &args, Some("serving MCP at"));
    let authority = running.mcp_authority();
    let api = Api::of(&running);
    let call = |id: u32, tool: &str, arguments: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{{"name":"mallory\u200b\u202eevil","version":"1"}},"io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
        )
    };
    let headers = |tool: &'static str| [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", tool)];
    // Beside the name, a list of 500 items: folded on the card.
    let items = (0..500).map(|n| n.to_string()).collect::<Vec<_>>().join(",");
    let _write = open_post(
        &authority,
        &headers("write_file"),
        &call(1, "write_file", &format!(r#"{{"path":"invoice-\u202efdp.exe","content":"x","items":[{items}]}}"#)),
    );
    let _read = open_post(&authority, &headers("read_file"), &call(2, "read_file", r#"{"path":"report.txt"}"#));
    // The read is approved at the desk, so that its result is held there too.
    let deadline = Instant::now() + PATIENCE;
    let read_id = loop {
        let desk = api.get("/api/pending").await;
        let items = desk["pending"].as_array().cloned().unwrap_or_default();
        if let Some(read) = items.iter().find(|item| item["calls"][0]["tool"] == "read_file") {
            break read["id"].clone();
        }
        assert!(Instant::now() < deadline, "the read came to the desk: {desk}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let (status, said) = api.post(&format!("/api/pending/{read_id}"), json!({ "verdict": "allow" })).await;
    assert_eq!(status, 200, "{said}");
    let link = running.link.clone();
    in_browser("hidden_characters", |browser| async move {
        open(&browser, &link).await?;
        let write = wait_text(&browser, "#desk .pending", |t| t.contains("write_file")).await?;
        let result = wait_text(&browser, "#desk .pending", |t| t.contains("The result of")).await?;
        for (card, expected) in [
            (&write, "invoice-⟦U+202E⟧fdp.exe"),
            (&write, "mallory⟦U+200B⟧⟦U+202E⟧evil"),
            (&result, "100⟦U+202E⟧00.0$ refund⟦U+200B⟧"),
        ] {
            if !card.contains(expected) {
                return Err(format!("the card shows {expected:?}: {card:?}"));
            }
        }
        let raw = ['\u{202e}', '\u{200b}'];
        if write.contains(raw) || result.contains(raw) {
            return Err(format!("a hidden character is rendered raw: {write:?} {result:?}"));
        }
        // The folded list is said to be unseen beside the buttons, opened
        // a page at a time, until its last page (the note had gone as
        // soon as the list was opened).
        if !shown_in_part(&browser).await? {
            return Err("a card with a folded list does not say so".into());
        }
        let open_items =
            "[...document.querySelectorAll('#desk .pending summary')].find((s) => s.textContent.includes('\"items\"')).click()";
        browser.execute(open_items, vec![]).await.map_err(|e| format!("opening `items`: {e}"))?;
        for _ in 0..2 {
            tokio::time::sleep(Duration::from_millis(300)).await;
            if !shown_in_part(&browser).await? {
                return Err("the note went while items were still not shown".into());
            }
            click(&browser, "#desk .pending .json button.more:not([hidden])").await?;
        }
        wait_shown_whole(&browser).await
    })
    .await;
}

/// Everything `stream` carries within `wait`, as text.
fn read_for(stream: &mut std::net::TcpStream, wait: Duration) -> String {
    read_until(stream, "", wait)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_desk_the_feed_and_the_chat_are_bounded_in_bytes_naming_their_keys() {
    let dir = workspace();
    let policy = std::fs::read_to_string(dir.path().join("toolhost.toml")).unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), format!("{policy}[console]\nmax_waiting_kib = 256\nmax_chat_kib = 1\n"))
        .unwrap();
    let args = ["mcp", "--http", "127.0.0.1:0", "--console", "127.0.0.1:0", "--no-watch"];
    let running = Running::start(dir.path(), &args, Some("serving MCP at"));
    let authority = running.mcp_authority();
    let api = Api::of(&running);
    // A page's event stream, read raw.
    let mut events = std::net::TcpStream::connect(running.base().trim_start_matches("http://")).unwrap();
    {
        use std::io::Write;
        let request = format!(
            "GET /api/events HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nAccept: text/event-stream\r\n\r\n",
            running.base().trim_start_matches("http://"),
            running.token()
        );
        events.write_all(request.as_bytes()).unwrap();
    }
    let call = |id: u32, path: &str, kib: usize| {
        let content = "x".repeat(kib << 10);
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"write_file","arguments":{{"path":"{path}","content":"{content}"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{{"name":"big","version":"1"}},"io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
        )
    };
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "write_file")];
    // 200 KiB waits at the desk; it reaches the page as a resync, not inline.
    let _first = open_post(&authority, &headers, &call(1, "a.txt", 200));
    let waiting = api.pending().await;
    assert_eq!(waiting["calls"][0]["tool"], "write_file");
    let fed = read_for(&mut events, Duration::from_secs(2));
    assert!(fed.contains(r#"{"type":"resync"}"#) && fed.len() < 16 << 10, "{} bytes: {}", fed.len(), &fed[..fed.len().min(400)]);
    // 100 KiB more would pass the desk's 256 KiB: refused, naming the key.
    let mut second = open_post(&authority, &headers, &call(2, "b.txt", 100));
    let refused = read_for(&mut second, Duration::from_secs(5));
    assert!(refused.contains("[console] max_waiting_kib = 256"), "{}", &refused[..refused.len().min(600)]);
    assert_eq!(api.get("/api/pending").await["pending"].as_array().unwrap().len(), 1);
    assert!(!dir.path().join("ws/b.txt").exists());

    // The chat: a message past what the conversation may hold is refused.
    let model = StandIn::start([Response::text("never asked")]).await.unwrap();
    let chat = console(dir.path(), Some(&model));
    let (status, said) = Api::of(&chat).post("/api/chat", json!({ "message": "y".repeat(2000) })).await;
    assert_eq!(status, 413, "{said}");
    assert!(said["error"].as_str().unwrap().contains("[console] max_chat_kib = 1"), "{said}");
    assert!(model.requests().is_empty(), "the model was not asked");
}

/// What `stream` gives within `wait`, until it holds `needle` (never, if
/// empty) or ends.
fn read_until(stream: &mut std::net::TcpStream, needle: &str, wait: Duration) -> String {
    use std::io::Read;
    let deadline = Instant::now() + wait;
    let mut seen = Vec::new();
    let mut buffer = [0u8; 8192];
    stream.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    while Instant::now() < deadline && (needle.is_empty() || !String::from_utf8_lossy(&seen).contains(needle)) {
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => seen.extend_from_slice(&buffer[..n]),
            Err(_) => {}
        }
    }
    String::from_utf8_lossy(&seen).into_owned()
}

/// A `tools/call` of `write_file` writing `x` to `path`, in the 2026-07-28
/// revision (no session: everything in `_meta`), its response left
/// unread on the returned stream.
fn modern_write(authority: &str, path: &str) -> std::net::TcpStream {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"write_file","arguments":{{"path":"{path}","content":"x"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{{"name":"desk-test","version":"1"}},"io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    );
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "write_file")];
    open_post(authority, &headers, &body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_of_mcp_console_toggles_the_tools_its_mcp_clients_are_offered() {
    let dir = workspace();
    let args = ["mcp", "--http", "127.0.0.1:0", "--console", "127.0.0.1:0", "--no-watch"];
    let running = Running::start(dir.path(), &args, Some("serving MCP at"));
    let mcp_url = running.mcp_url();
    let api = Api::of(&running);
    let state = api.get("/api/state").await;
    assert_eq!(state["agent"], "mcp", "the page works as the door's agent: {state}");

    // The official client lists, the page turns `calculate` off, the
    // client is told and lists again.
    let body = json!({ "agent": "mcp", "tool": "calculate", "enabled": false }).to_string();
    let toggles = format!("{}/api/toggles", running.base());
    let output = Command::new(support::mcp_python())
        .current_dir(dir.path())
        .arg(support::mcp_client_script())
        .args(["--http", &mcp_url, "list_changed", "--post", &toggles, "--body", &body, "--bearer", running.token()])
        .output()
        .expect("the Python client runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "client.py: {}\n{stdout}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert!(seen["before"].as_array().unwrap().contains(&json!("calculate")), "{seen}");
    assert_eq!(seen["notified"], true, "notifications/tools/list_changed arrived: {seen}");
    assert!(!seen["after"].as_array().unwrap().contains(&json!("calculate")), "{seen}");
    // Nor may a client call it, listed or not.
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"calculate","arguments":{"expression":"1+1"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "calculate")];
    let authority = running.mcp_authority();
    let answer = read_until(&mut open_post(&authority, &headers, call), "\"id\":2", Duration::from_secs(10));
    assert!(answer.contains("not offered") || answer.contains("no tool named `calculate`"), "{answer}");
    let (status, refused) = api.post("/api/toggles", json!({ "agent": "nobody", "tool": "calculate", "enabled": true })).await;
    assert_eq!(status, 404, "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("no agent `nobody`"), "{refused}");

    // Ticked again in the page: offered again.
    let (link, listed_at) = (running.link.clone(), mcp_url.clone());
    in_browser("door_agent_toggles", |browser| async move {
        open(&browser, &link).await?;
        toggle_in_page(&browser, "mcp", "calculate").await?;
        wait_listed(&listed_at, "calculate", true).await
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_door_started_with_console_asks_at_the_console_already_open_and_opens_no_page() {
    let dir = workspace();
    // One user's runtime directory, shared by the console and the door.
    let runtime = tempfile::tempdir().unwrap();
    let envs = [("XDG_RUNTIME_DIR", runtime.path())];
    let console = Running::launch(dir.path(), &["console", "--listen", "127.0.0.1:0", "--no-watch"], None, &envs, true);
    let api = Api::of(&console);
    let args = ["mcp", "--http", "127.0.0.1:0", "--console", "--no-watch"];
    let door = Running::launch(dir.path(), &args, Some("serving MCP at"), &envs, false);
    let said = door.stderr();
    assert!(!said.contains("console: open"), "the door opened a page of its own:\n{said}");
    assert!(said.contains(&format!("asking at the console already open at {}", console.base())), "{said}");
    let authority = door.mcp_authority();

    // The console lists the door, with its agent and process.
    let door_pid = door.child.id();
    let deadline = Instant::now() + PATIENCE;
    let listed = loop {
        let doors = api.get("/api/doors").await;
        if let Some(found) = doors.as_array().unwrap().iter().find(|d| d["pid"] == door_pid) {
            break found.clone();
        }
        assert!(Instant::now() < deadline, "the door never showed in the console's list: {doors}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!((listed["door"].as_str(), listed["remote"].as_bool()), (Some("mcp"), Some(true)), "{listed}");
    assert!(listed["agent"].as_str().is_some_and(|agent| !agent.is_empty()), "{listed}");
    // The page's toggles for the door's agent act on what its clients
    // are offered, across the processes.
    let mcp_url = door.mcp_url();
    let (status, toggled) = api.post("/api/toggles", json!({ "agent": "mcp", "tool": "calculate", "enabled": false })).await;
    assert_eq!((status, &toggled["agent"]), (200, &json!("mcp")), "{toggled}");
    wait_listed(&mcp_url, "calculate", false).await.unwrap();
    // And its page says so, and toggles it back.
    let link = console.link.clone();
    in_browser("remote_door_listed", |browser| async move {
        open(&browser, &link).await?;
        let css = format!("#doors .door[data-pid=\"{door_pid}\"]");
        let shown = wait_text(&browser, &css, |t| t.starts_with("mcp as ")).await?;
        if !shown.contains(&format!("(process {door_pid})")) {
            return Err(format!("the page names the door's process: {shown}"));
        }
        toggle_in_page(&browser, "mcp", "calculate").await?;
        wait_listed(&mcp_url, "calculate", true).await
    })
    .await;

    // Approved at the console: the call runs in the door's process.
    let mut approved = modern_write(&authority, "approved.txt");
    let waiting = api.pending().await;
    assert_eq!((waiting["door"].as_str(), waiting["calls"][0]["tool"].as_str()), (Some("mcp"), Some("write_file")), "{waiting}");
    assert_eq!(waiting["caller"], "desk-test 1", "{waiting}");
    let (status, body) = api.post(&format!("/api/pending/{}", waiting["id"]), json!({ "verdict": "allow" })).await;
    assert_eq!(status, 200, "{body}");
    let answer = read_until(&mut approved, "isError", Duration::from_secs(10));
    assert!(answer.contains("200 OK") && answer.contains("\"isError\":false"), "{answer}");
    assert_eq!(std::fs::read_to_string(dir.path().join("ws/approved.txt")).unwrap(), "x");

    // Two calls of one client at once: one button approves both, in the
    // page, across the processes.
    let mut first = modern_write(&authority, "both-1.txt");
    let mut second = modern_write(&authority, "both-2.txt");
    let link = console.link.clone();
    in_browser("approve_all_from_a_caller", |browser| async move {
        open(&browser, &link).await?;
        wait_text(&browser, "#desk-bulk .approve-caller", |t| t == "Approve all 2 from desk-test 1 (mcp)").await?;
        click(&browser, "#desk-bulk .approve-caller").await?;
        Ok(())
    })
    .await;
    // Without a browser (the test skipped it), the API decides instead.
    for waiting in api.get("/api/pending").await["pending"].as_array().unwrap() {
        api.post(&format!("/api/pending/{}", waiting["id"]), json!({ "verdict": "allow" })).await;
    }
    for (stream, file) in [(&mut first, "both-1.txt"), (&mut second, "both-2.txt")] {
        let answer = read_until(stream, "isError", Duration::from_secs(10));
        assert!(answer.contains("\"isError\":false"), "{file}: {answer}");
        assert!(dir.path().join("ws").join(file).exists(), "{file} was not written");
    }

    // A question whose client vanishes is withdrawn from the other
    // process's desk, as from its own.
    let vanishing = modern_write(&authority, "vanished.txt");
    let waiting = api.pending().await;
    drop(vanishing);
    api.withdrawn(&waiting, "across processes").await;

    // The console gone, the door says so rather than waiting.
    drop(console);
    let mut refused = modern_write(&authority, "unasked.txt");
    let answer = read_until(&mut refused, "isError", Duration::from_secs(10));
    assert!(answer.contains("could not be asked"), "{answer}");
    assert!(!dir.path().join("ws/vanished.txt").exists() && !dir.path().join("ws/unasked.txt").exists(), "nothing else ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_started_with_console_asks_at_the_console_already_open() {
    let dir = workspace();
    let runtime = tempfile::tempdir().unwrap();
    let console = Running::launch(
        dir.path(),
        &["console", "--listen", "127.0.0.1:0", "--no-watch"],
        None,
        &[("XDG_RUNTIME_DIR", runtime.path())],
        true,
    );
    let api = Api::of(&console);
    let model = StandIn::start([Response::text(VCP_WRITE), Response::text("Result: {{last_message}}")]).await.unwrap();
    let url = model.base_url();
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    in_test_home(&mut command)
        .env("XDG_RUNTIME_DIR", runtime.path())
        .current_dir(dir.path())
        .args(["chat", "--console", "--base-url", &url, "--message", "Save a note"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let chat = command.spawn().expect("toolhost chat starts");
    let waiting = api.pending().await;
    assert_eq!((waiting["door"].as_str(), waiting["calls"][0]["tool"].as_str()), (Some("chat"), Some("write_file")), "{waiting}");
    assert!(waiting["caller"].as_str().unwrap().starts_with("terminal chat (process "), "{waiting}");
    let (status, body) = api.post(&format!("/api/pending/{}", waiting["id"]), json!({ "verdict": "allow" })).await;
    assert_eq!(status, 200, "{body}");
    let output = tokio::task::spawn_blocking(move || chat.wait_with_output()).await.unwrap().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("console: open"), "the chat opened a page of its own:\n{stderr}");
    assert!(stdout.contains("Result:"), "{stdout}");
    assert_eq!(std::fs::read_to_string(dir.path().join("ws/note.txt")).unwrap(), "hello");
}
