//! Each capability granted and withheld: directories (and escapes from
//! them), environment variables, HTTP hosts.

use crate::built::{FILES, HOSTILE, SQUATTER};
use crate::support::TestHost;
use serde_json::json;
use toolhost::sandbox::Withheld;
use toolhost::{Registry, Status};
use toolhost_support::digest::sha256_hex;

/// A host with the hostile plugin, `/data` mapped to a fresh directory
/// holding `inside.txt`, next to `outside.txt` that must stay unreachable.
async fn with_data_dir(extra: &str) -> (TestHost, tempfile::TempDir) {
    let data = tempfile::tempdir().unwrap();
    std::fs::create_dir(data.path().join("granted")).unwrap();
    std::fs::write(data.path().join("granted/inside.txt"), "inside").unwrap();
    std::fs::write(data.path().join("outside.txt"), "secret outside the grant").unwrap();
    std::os::unix::fs::symlink(data.path().join("outside.txt"), data.path().join("granted/link")).unwrap();
    let policy = format!(
        "[plugins.hostile]\nfile = \"hostile.wasm\"\ndirs = {{ \"/data\" = {{ host = {:?} }} }}\n{extra}",
        data.path().join("granted").display().to_string()
    );
    (TestHost::new(&[HOSTILE], &policy).await, data)
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
        // The guest's errno is named as WASI's, and the person is told
        // what the plugin can see.
        assert!(!outcome.output.contains("(os error"), "{}", outcome.output);
        assert!(outcome.output.contains("(WASI errno "), "{}", outcome.output);
        assert!(outcome.output.ends_with("note: plugin `hostile` sees only /data (read); any other path is missing to it, and writing in a read-only one is refused"), "{}", outcome.output);
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
        "[plugins.files]\nfile = \"files.wasm\"\ndirs = {{ \"/workspace\" = {{ host = {:?}, access = \"read-write\" }} }}\n",
        workspace.path().display().to_string()
    );
    let host = TestHost::new(&[FILES], &policy).await;
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
    let host = TestHost::new(&[HOSTILE], "").await;
    let catalog = host.registry.catalog();
    let plugin = catalog.plugin("hostile").unwrap();
    assert!(plugin.grants.dirs.is_empty());
    assert!(plugin.grants.withheld.contains(&Withheld::Directory { guest_path: "/data".into() }));
    let outcome = host.call("read_path", json!({ "path": "/data/inside.txt" })).await;
    assert_eq!(outcome.status, Status::Error);
    assert!(outcome.output.contains("No such file or directory (WASI errno 44, ENOENT)"), "{}", outcome.output);
    assert!(
        outcome.output.ends_with(
            "note: plugin `hostile` is granted no directories, so every path is missing to it; it asks for /data, \
             which the policy does not grant ([plugins.hostile.dirs] in the policy file)"
        ),
        "{}",
        outcome.output
    );
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
    let host = TestHost::new(&[HOSTILE], "").await;
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
    let host = TestHost::new(&[HOSTILE], "[plugins.hostile]\nfile = \"hostile.wasm\"\nhttp_hosts = [\"127.0.0.1:*\"]\n").await;
    let outcome = host.call("fetch", json!({ "url": format!("http://127.0.0.1:{port}/") })).await;
    assert_eq!(outcome.status, Status::Success, "{}", outcome.output);
    assert_eq!(outcome.output, r#"{"body":"hello from loopback","status":200}"#);
}

#[tokio::test]
async fn an_http_host_off_the_allow_list_is_denied_and_named() {
    let port = serve_once("must not be reached").await;
    let host = TestHost::new(&[HOSTILE], "").await;
    let outcome = host.call("fetch", json!({ "url": format!("http://127.0.0.1:{port}/") })).await;
    assert_eq!(outcome.status, Status::Denied);
    assert_eq!(
        outcome.output,
        "plugin `hostile` called `wasi:http/types@0.2.12#[constructor]fields`, but no HTTP host is granted to it; \
         allow hosts with `http_hosts` in its [plugins.hostile] section",
        "without an HTTP grant, wasi:http refuses before anything is created"
    );
    let granted = TestHost::new(&[HOSTILE], "[plugins.hostile]\nfile = \"hostile.wasm\"\nhttp_hosts = [\"127.0.0.1:*\"]\n").await;
    let outcome = granted.call("fetch", json!({ "url": "http://evil.test/" })).await;
    assert_eq!(outcome.status, Status::Denied);
    assert_eq!(
        outcome.output,
        "HTTP host evil.test is not granted to plugin `hostile`; the plugin then failed: \
         GET http://evil.test/ failed: ErrorCode::HttpRequestDenied"
    );
    let failure = outcome.failure.expect("a denial is a failure");
    assert_eq!((failure.kind, failure.hosts), (toolhost::types::FailureKind::HttpDenied, vec!["evil.test".to_owned()]));
    assert_eq!(failure.plugin.as_deref(), Some("hostile"));
}

/// The audit's attack: a squatter declaring `files` under a file name that
/// sorts first, beside the genuine `files.wasm`, with `[plugins.files]`
/// granting a read-write workspace that holds a secret.
#[tokio::test]
async fn a_squatter_sorting_first_gets_no_grant_and_cannot_touch_the_workspace() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("secret.txt"), "the secret").unwrap();
    let policy = format!(
        "[plugins.files]\ndirs = {{ \"/workspace\" = {{ host = {:?}, access = \"read-write\" }} }}\n",
        workspace.path().display().to_string()
    );
    let host = TestHost::new(&[FILES], &policy).await;
    std::fs::copy(SQUATTER.path(), host.dir.path().join("plugins/00_files_update.wasm")).unwrap();
    host.registry.reload().await.unwrap();

    let catalog = host.registry.catalog();
    for loaded in &catalog.plugins {
        if loaded.path.ends_with("00_files_update.wasm") {
            assert_eq!(loaded.grants.dirs, [], "the squatter was granted a directory");
        }
    }
    let refused: Vec<_> = catalog.refused.iter().map(|r| r.path.file_name().unwrap().to_owned()).collect();
    assert!(refused.iter().any(|f| f == "00_files_update.wasm"), "the squatter loaded; refused: {refused:?}");
    assert!(refused.iter().any(|f| f == "files.wasm"), "one name, two components: both are refused");
    for (tool, args) in [
        ("read_file", json!({ "path": "secret.txt" })),
        ("list_files", json!({})),
        ("write_file", json!({ "path": "secret.txt", "content": "overwritten" })),
    ] {
        let outcome = host.call(tool, args).await;
        assert!(!outcome.output.starts_with("squatter:"), "the squatter answered {tool}: {}", outcome.output);
    }
    let secret = std::fs::read_to_string(workspace.path().join("secret.txt")).unwrap();
    assert!(!secret.starts_with("squatter:"), "the squatter wrote the workspace: {secret}");
}

/// A workspace holding a secret, and `[plugins.files]` granting it
/// read-write, bound by `binding`.
fn files_policy(binding: &str) -> (tempfile::TempDir, String) {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("secret.txt"), "the secret").unwrap();
    let policy = format!(
        "[plugins.files]\n{binding}\ndirs = {{ \"/workspace\" = {{ host = {:?}, access = \"read-write\" }} }}\n",
        workspace.path().display().to_string()
    );
    (workspace, policy)
}

/// The one loaded plugin's workspace grants and why the section was
/// withheld, if it was.
fn grant_of(registry: &Registry) -> (usize, Option<String>) {
    let catalog = registry.catalog();
    assert!(catalog.refused.is_empty(), "{:?}", catalog.refused);
    let [plugin] = catalog.plugins.as_slice() else { panic!("expected one plugin") };
    (plugin.grants.dirs.len(), plugin.unbound.as_ref().map(ToString::to_string))
}

#[tokio::test]
async fn a_section_bound_to_a_file_grants_nothing_to_another_file_claiming_its_name() {
    let (workspace, policy) = files_policy("file = \"files.wasm\"");
    let host = TestHost::new(&[], &policy).await;
    std::fs::copy(SQUATTER.path(), host.dir.path().join("plugins/00_files_update.wasm")).unwrap();
    host.registry.reload().await.unwrap();
    assert_eq!(
        grant_of(&host.registry),
        (
            0,
            Some(
                "the grants of [plugins.files] are withheld from 00_files_update.wasm: the section is bound to \
                 file = \"files.wasm\"; if this component should have them instead, set \
                 `file = \"00_files_update.wasm\"` in [plugins.files]"
                    .into()
            )
        )
    );
    let read = host.call("read_file", json!({ "path": "secret.txt" })).await;
    assert_eq!(read.status, Status::Error, "{}", read.output);
    assert!(!read.output.contains("the secret"), "{}", read.output);
    let write = host.call("write_file", json!({ "path": "dropped.txt", "content": "x" })).await;
    assert_eq!(write.status, Status::Error, "{}", write.output);
    assert!(!workspace.path().join("dropped.txt").exists());
}

#[tokio::test]
async fn a_section_bound_to_a_digest_follows_the_bytes_not_the_file_name() {
    let digest = sha256_hex(&std::fs::read(FILES.path()).unwrap());
    let (_workspace, policy) = files_policy(&format!("file = \"files.wasm\"\nsha256 = \"sha256:{digest}\""));
    let genuine = TestHost::new(&[FILES], &policy).await;
    assert_eq!(grant_of(&genuine.registry), (1, None));

    // The squatter's bytes under the genuine file name.
    let host = TestHost::new(&[], &policy).await;
    std::fs::copy(SQUATTER.path(), host.dir.path().join("plugins/files.wasm")).unwrap();
    host.registry.reload().await.unwrap();
    let squatter = sha256_hex(&std::fs::read(SQUATTER.path()).unwrap());
    let (dirs, unbound) = grant_of(&host.registry);
    assert_eq!(dirs, 0);
    assert!(
        unbound.as_deref().unwrap().ends_with(&format!(
            "the section is bound to sha256 = \"{digest}\"; if this component should have them instead, \
             set `sha256 = \"{squatter}\"` in [plugins.files]"
        )),
        "{unbound:?}"
    );
}

#[tokio::test]
async fn a_section_naming_no_component_grants_only_to_a_pinned_one() {
    let (_workspace, policy) = files_policy("");
    let host = TestHost::new(&[FILES], &policy).await;
    let (dirs, unbound) = grant_of(&host.registry);
    assert_eq!(dirs, 0, "no lock file: nothing is pinned");
    let digest = sha256_hex(&std::fs::read(FILES.path()).unwrap());
    assert_eq!(
        unbound.unwrap(),
        format!(
            "the grants of [plugins.files] are withheld from files.wasm: a section without `file` or `sha256` \
             applies only to a component pinned in the lock file, and files.wasm is not pinned; to grant them \
             to it, add `file = \"files.wasm\"` or `sha256 = \"{digest}\"` to [plugins.files], or pin it \
             with `toolhost lock`"
        )
    );

    host.write_lock(&[("files.wasm", &digest)]);
    host.registry.reload().await.unwrap();
    assert_eq!(grant_of(&host.registry), (1, None), "pinned, the section applies");
}

#[tokio::test]
async fn a_grant_reaches_its_own_port_only_and_a_granted_name_public_addresses_only() {
    let port = serve_once("must not be reached").await;
    let policy = "[plugins.hostile]\nfile = \"hostile.wasm\"\nhttp_hosts = [\"127.0.0.1\", \"localhost:*\"]\n";
    let host = TestHost::new(&[HOSTILE], policy).await;
    // No port in the grant: the scheme's own, not every port.
    let outcome = host.call("fetch", json!({ "url": format!("http://127.0.0.1:{port}/") })).await;
    assert_eq!(outcome.status, Status::Denied, "{}", outcome.output);
    assert!(outcome.output.starts_with(&format!("HTTP host 127.0.0.1:{port} is not granted")), "{}", outcome.output);
    // A granted name that resolves to loopback (the hosts file's
    // `localhost`, as a name an author controls could) is refused, saying
    // where it led; nothing is sent.
    let outcome = host.call("fetch", json!({ "url": format!("http://localhost:{port}/") })).await;
    assert_eq!(outcome.status, Status::Denied, "{}", outcome.output);
    assert!(
        outcome.output.contains("localhost (it resolves to")
            && outcome.output.contains("a loopback address, which its grant does not name"),
        "{}",
        outcome.output
    );
    // The address granted as such, on any port, is reached.
    let granted = TestHost::new(&[HOSTILE], "[plugins.hostile]\nfile = \"hostile.wasm\"\nhttp_hosts = [\"127.0.0.1:*\"]\n").await;
    let reached = serve_once("hello").await;
    let outcome = granted.call("fetch", json!({ "url": format!("http://127.0.0.1:{reached}/") })).await;
    assert_eq!(outcome.status, Status::Success, "{}", outcome.output);
}
