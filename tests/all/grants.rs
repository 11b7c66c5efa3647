//! Each capability granted and withheld: directories (and escapes from
//! them), environment variables, HTTP hosts.

use crate::support::TestHost;
use serde_json::json;
use toolhost::Status;
use toolhost::sandbox::Withheld;

/// A host with the hostile plugin, `/data` mapped to a fresh directory
/// holding `inside.txt`, next to `outside.txt` that must stay unreachable.
async fn with_data_dir(extra: &str) -> (TestHost, tempfile::TempDir) {
    let data = tempfile::tempdir().unwrap();
    std::fs::create_dir(data.path().join("granted")).unwrap();
    std::fs::write(data.path().join("granted/inside.txt"), "inside").unwrap();
    std::fs::write(data.path().join("outside.txt"), "secret outside the grant").unwrap();
    std::os::unix::fs::symlink(data.path().join("outside.txt"), data.path().join("granted/link")).unwrap();
    let policy = format!(
        "[plugins.hostile]\ndirs = {{ \"/data\" = {{ host = {:?} }} }}\n{extra}",
        data.path().join("granted").display().to_string()
    );
    (TestHost::new(&["hostile"], &policy).await, data)
}

#[tokio::test]
async fn a_granted_directory_is_readable() {
    let (host, _data) = with_data_dir("").await;
    let outcome = host.call("read_path", json!({ "path": "/data/inside.txt" })).await;
    assert_eq!(outcome.status, Status::Success, "{}", outcome.output);
    assert_eq!(outcome.output, "inside");
}

#[tokio::test]
async fn escapes_from_a_granted_directory_fail() {
    let (host, _data) = with_data_dir("").await;
    for path in ["/data/../outside.txt", "/data/link", "/etc/passwd", "../outside.txt"] {
        let outcome = host.call("read_path", json!({ "path": path })).await;
        assert_eq!(outcome.status, Status::Error, "{path} was read: {}", outcome.output);
        assert!(outcome.output.starts_with(&format!("cannot read {path}: ")), "{}", outcome.output);
        assert!(!outcome.output.contains("secret"), "{}", outcome.output);
    }
}

#[tokio::test]
async fn a_read_only_grant_refuses_writes() {
    let (host, data) = with_data_dir("").await;
    let outcome = host.call("write_path", json!({ "path": "/data/new.txt" })).await;
    assert_eq!(outcome.status, Status::Error, "{}", outcome.output);
    assert!(!data.path().join("granted/new.txt").exists());
}

#[tokio::test]
async fn a_read_write_grant_allows_writes_through_the_files_plugin() {
    let workspace = tempfile::tempdir().unwrap();
    let policy = format!(
        "[plugins.files]\ndirs = {{ \"/workspace\" = {{ host = {:?}, access = \"read-write\" }} }}\n",
        workspace.path().display().to_string()
    );
    let host = TestHost::new(&["files"], &policy).await;
    let written = host.call("write_file", json!({ "path": "a.txt", "content": "hello" })).await;
    assert_eq!(written.status, Status::Success, "{}", written.output);
    assert_eq!(std::fs::read_to_string(workspace.path().join("a.txt")).unwrap(), "hello");
    let read = host.call("read_file", json!({ "path": "a.txt" })).await;
    assert_eq!(read.output, "hello");
    let listed = host.call("list_files", json!({})).await;
    assert!(listed.output.contains(r#""name":"a.txt""#), "{}", listed.output);
}

#[tokio::test]
async fn an_unmapped_directory_is_withheld_and_invisible() {
    let host = TestHost::new(&["hostile"], "").await;
    let catalog = host.registry.catalog();
    let plugin = catalog.plugin("hostile").unwrap();
    assert!(plugin.grants.dirs.is_empty());
    assert!(plugin.grants.withheld.contains(&Withheld::Directory { guest_path: "/data".into() }));
    let outcome = host.call("read_path", json!({ "path": "/data/inside.txt" })).await;
    assert_eq!(outcome.status, Status::Error);
}

#[tokio::test]
async fn a_granted_env_var_is_visible_and_others_are_not() {
    let (host, _data) = with_data_dir("env = [\"PATH\"]\n").await;
    let path = host.call("read_env", json!({ "name": "PATH" })).await;
    assert_eq!(path.status, Status::Success);
    assert_eq!(path.output, std::env::var("PATH").unwrap());
    let home = host.call("read_env", json!({ "name": "HOME" })).await;
    assert_eq!(home.status, Status::Error);
    assert_eq!(home.output, "environment variable `HOME` is not granted to this plugin");
}

#[tokio::test]
async fn an_env_var_the_policy_does_not_allow_is_withheld() {
    let host = TestHost::new(&["hostile"], "").await;
    let outcome = host.call("read_env", json!({ "name": "PATH" })).await;
    assert_eq!(outcome.status, Status::Error);
    let catalog = host.registry.catalog();
    let withheld = &catalog.plugin("hostile").unwrap().grants.withheld;
    assert!(withheld.iter().any(|w| w.to_string() == "env PATH: not allowed by the policy"), "{withheld:?}");
}

/// A one-shot HTTP server on loopback; returns its port.
async fn serve_once(body: &'static str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = Vec::new();
        let mut buf = [0u8; 1024];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            request.extend_from_slice(&buf[..n]);
        }
        let response = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
        socket.write_all(response.as_bytes()).await.unwrap();
    });
    port
}

#[tokio::test]
async fn a_granted_http_host_is_reachable() {
    let port = serve_once("hello from loopback").await;
    let host = TestHost::new(&["hostile"], "[plugins.hostile]\nhttp_hosts = [\"127.0.0.1\"]\n").await;
    let outcome = host.call("fetch", json!({ "url": format!("http://127.0.0.1:{port}/") })).await;
    assert_eq!(outcome.status, Status::Success, "{}", outcome.output);
    assert_eq!(outcome.output, r#"{"body":"hello from loopback","status":200}"#);
}

#[tokio::test]
async fn an_http_host_off_the_allow_list_is_denied_and_named() {
    let port = serve_once("must not be reached").await;
    let host = TestHost::new(&["hostile"], "").await;
    let outcome = host.call("fetch", json!({ "url": format!("http://127.0.0.1:{port}/") })).await;
    assert_eq!(outcome.status, Status::Denied);
    assert_eq!(
        outcome.output,
        "plugin `hostile` called `wasi:http/types@0.2.12#[constructor]fields`, but no HTTP host is granted to it; \
         allow hosts with `http_hosts` in its [plugins.hostile] section",
        "without an HTTP grant, wasi:http refuses before anything is created"
    );
    let granted = TestHost::new(&["hostile"], "[plugins.hostile]\nhttp_hosts = [\"127.0.0.1\"]\n").await;
    let outcome = granted.call("fetch", json!({ "url": "http://evil.test/" })).await;
    assert_eq!(outcome.status, Status::Denied);
    assert_eq!(outcome.output, "HTTP host evil.test is not granted to plugin `hostile`");
}
