//! `toolhost add` and `toolhost remove` over the per-user plugin directory:
//! from a file, and from a real OCI registry (Debian's `docker-registry`)
//! started on loopback, the component pushed with the same OCI crate.

mod support;

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use oci_wasm::{WasmClient, WasmConfig};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};
use support::{in_test_home, plugins, text};
use toolhost_support::digest::sha256_hex;

/// A user with a data directory of their own, in a working directory with
/// no policy file.
struct User {
    data: tempfile::TempDir,
    cwd: tempfile::TempDir,
}

impl User {
    fn new() -> User {
        User { data: tempfile::tempdir().unwrap(), cwd: tempfile::tempdir().unwrap() }
    }

    fn toolhost(&self, args: &[&str]) -> Output {
        in_test_home(&mut Command::new(env!("CARGO_BIN_EXE_toolhost")))
            .env("XDG_DATA_HOME", self.data.path())
            .current_dir(self.cwd.path())
            .env_remove("RUST_LOG")
            .args(args)
            .output()
            .expect("toolhost runs")
    }

    fn plugin_dir(&self) -> PathBuf {
        self.data.path().join("toolhost/plugins")
    }

    /// The lock file's text, empty when there is none.
    fn lock(&self) -> String {
        std::fs::read_to_string(self.plugin_dir().join("toolhost.lock")).unwrap_or_default()
    }
}

fn calc() -> PathBuf {
    plugins("examples").join("calc.wasm")
}

#[test]
fn a_file_is_installed_pinned_listed_from_anywhere_called_and_removed() {
    let user = User::new();
    let out = user.toolhost(&["add", calc().to_str().unwrap(), "--yes"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.contains("calculate (public"), "the tool and its permission level: {shown}");
    assert!(shown.contains("capabilities requested:\n  none"), "{shown}");
    let installed = user.plugin_dir().join("calc.wasm");
    let digest = sha256_hex(&std::fs::read(calc()).unwrap());
    assert_eq!(sha256_hex(&std::fs::read(&installed).unwrap()), digest);
    assert!(user.lock().contains(&format!("\"calc.wasm\" = \"sha256:{digest}\"")), "{}", user.lock());

    let listed = user.toolhost(&["list"]);
    assert!(text(&listed.stdout).contains("calculate"), "{}{}", text(&listed.stdout), text(&listed.stderr));
    let called = user.toolhost(&["call", "calculate", "--arg", "expression=6*7"]);
    assert!(text(&called.stdout).contains("42"), "{}", text(&called.stderr));

    let again = user.toolhost(&["add", calc().to_str().unwrap(), "--yes"]);
    assert!(text(&again.stderr).contains("already installed"), "{}", text(&again.stderr));
    let impostor = plugins("hostile").join("impostor.wasm");
    let clash = user.toolhost(&["add", impostor.to_str().unwrap(), "--yes"]);
    assert!(text(&clash.stderr).contains("its tool `calculate` is offered already by plugin `calc`"), "{}", text(&clash.stderr));
    assert!(!user.plugin_dir().join("impostor.wasm").exists());

    let removed = user.toolhost(&["remove", "calc"]);
    assert!(removed.status.success(), "{}", text(&removed.stderr));
    assert!(text(&removed.stderr).contains("and its pin in"), "{}", text(&removed.stderr));
    assert!(!installed.exists());
    assert!(!user.lock().contains("calc.wasm"), "{}", user.lock());
    let listed = user.toolhost(&["list"]);
    assert!(!text(&listed.stdout).contains("calculate"), "{}", text(&listed.stdout));
    let missing = user.toolhost(&["remove", "calc"]);
    assert!(text(&missing.stderr).contains("no plugin `calc` is installed"), "{}", text(&missing.stderr));
    // Copied in by hand, never pinned: no pin is said to be dropped.
    std::fs::copy(calc(), &installed).unwrap();
    let unpinned = user.toolhost(&["remove", "calc"]);
    assert!(text(&unpinned.stderr).contains("(it had no pin in"), "{}", text(&unpinned.stderr));
}

#[test]
fn what_does_not_load_or_match_or_was_not_confirmed_is_not_installed() {
    let user = User::new();
    let junk = user.cwd.path().join("junk.wasm");
    std::fs::write(&junk, b"not a component").unwrap();
    let calc = calc();
    let calc = calc.to_str().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["add", junk.to_str().unwrap(), "--yes"], "was not installed"),
        (&["add", calc, "--yes", "--sha256", &"0".repeat(64)], "was not installed"),
        (&["add", calc], "pass --yes to install it"),
        (&["add", "https://127.0.0.1:9/calc.wasm", "--yes"], "needs --sha256"),
        (&["add", "http://example.com/calc.wasm", "--yes"], "only over https://"),
    ];
    for (args, says) in cases {
        let out = user.toolhost(args);
        assert!(!out.status.success(), "{args:?}");
        assert!(text(&out.stderr).contains(says), "{args:?}: {}", text(&out.stderr));
        assert!(!text(&out.stderr).contains(".wasm.part"), "the staged file is not named: {}", text(&out.stderr));
    }
    let left: Vec<_> = std::fs::read_dir(user.plugin_dir()).unwrap().collect();
    assert!(left.is_empty(), "nothing installed or left staged: {left:?}");
    assert_eq!(user.lock(), "");
}

/// Debian's OCI registry, serving from a directory of its own on a free
/// loopback port; stopped when dropped.
struct LocalRegistry {
    child: Child,
    storage: tempfile::TempDir,
    host: String,
}

impl LocalRegistry {
    /// Start it, or say why it cannot run here.
    fn start() -> Result<LocalRegistry, String> {
        let storage = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let host = format!("127.0.0.1:{port}");
        let config = storage.path().join("config.yml");
        let root = storage.path().join("data");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {host}\n",
                root.display()
            ),
        )
        .unwrap();
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("docker-registry did not start ({e}); `apt-get install docker-registry`"))?;
        let registry = LocalRegistry { child, storage, host };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(&registry.host).is_err() {
            if Instant::now() > deadline {
                return Err("docker-registry did not listen within 20 s".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(registry)
    }

    /// Push `component` to `repo:tag` as a Wasm OCI artifact; its manifest digest.
    fn push(&self, component: &Path, repo: &str, tag: &str) -> String {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let reference: Reference = format!("{}/{repo}:{tag}", self.host).parse().unwrap();
        let config = ClientConfig { protocol: ClientProtocol::Http, ..ClientConfig::default() };
        let client = WasmClient::new(Client::new(config));
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let (config, layer) = WasmConfig::from_component(component, None).await.unwrap();
            let pushed = client.push(&reference, &RegistryAuth::Anonymous, layer, config, None).await.unwrap();
            pushed.manifest_url.rsplit('/').next().unwrap().to_owned()
        })
    }

    /// The stored blob file of `digest` (`sha256:…`).
    fn blob(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap();
        self.storage.path().join(format!("data/docker/registry/v2/blobs/sha256/{}/{hex}/data", &hex[..2]))
    }
}

impl Drop for LocalRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn an_oci_artifact_is_installed_and_pinned_by_tag_and_digest_and_a_tampered_one_refused() {
    let registry = match LocalRegistry::start() {
        Ok(registry) => registry,
        Err(reason) => return support::skip("a local OCI registry", &reason),
    };
    let manifest = registry.push(&calc(), "tools/calc", "0.1.0");
    let digest = sha256_hex(&std::fs::read(calc()).unwrap());

    let user = User::new();
    let by_tag = format!("oci://{}/tools/calc:0.1.0", registry.host);
    let out = user.toolhost(&["add", &by_tag, "--yes"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(sha256_hex(&std::fs::read(user.plugin_dir().join("calc.wasm")).unwrap()), digest);
    assert!(user.lock().contains(&format!("\"calc.wasm\" = \"sha256:{digest}\"")), "{}", user.lock());
    let called = user.toolhost(&["call", "calculate", "--arg", "expression=6*7"]);
    assert!(text(&called.stdout).contains("42"), "{}", text(&called.stderr));

    let user = User::new();
    let by_digest = format!("oci://{}/tools/calc@{manifest}", registry.host);
    let out = user.toolhost(&["add", &by_digest, "--yes", "--sha256", &digest]);
    assert!(out.status.success(), "{by_digest}: {}", text(&out.stderr));

    let user = User::new();
    let wrong = format!("oci://{}/tools/calc@sha256:{}", registry.host, "1".repeat(64));
    let out = user.toolhost(&["add", &wrong, "--yes"]);
    assert!(!out.status.success() && text(&out.stderr).contains("pulling"), "{}", text(&out.stderr));

    // The layer's bytes changed under the registry: its digest no longer matches.
    let blob = registry.blob(&format!("sha256:{digest}"));
    let mut bytes = std::fs::read(&blob).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&blob, bytes).unwrap();
    let out = user.toolhost(&["add", &by_tag, "--yes"]);
    assert!(!out.status.success(), "a tampered layer was installed");
    assert!(text(&out.stderr).to_lowercase().contains("digest"), "{}", text(&out.stderr));
    assert!(!user.plugin_dir().join("calc.wasm").exists());
    assert_eq!(user.lock(), "");
}

/// A registry that serves one artifact whose manifest declares a layer
/// larger than `toolhost add` takes: the manifest and config as they are,
/// and the layer's bytes if asked, counting how often it is asked.
/// (The registry above refuses to store a manifest that lies about a
/// layer's size, and pushing a real 300 MiB layer costs far more.)
struct OversizedArtifact {
    host: String,
    layer_requests: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

/// How a [`OversizedArtifact`] registry misbehaves besides the size it
/// declares.
#[derive(Clone, Copy, PartialEq)]
enum Fault {
    None,
    /// The manifest never ends.
    EndlessManifest,
    /// The layer goes on past its bytes, without end.
    EndlessLayer,
    /// The manifest is a redirect to plain HTTP elsewhere.
    RedirectToHttp,
}

impl OversizedArtifact {
    fn serve(component: &Path, declared_size: u64) -> OversizedArtifact {
        Self::serve_with(component, declared_size, Fault::None)
    }

    fn serve_with(component: &Path, declared_size: u64, fault: Fault) -> OversizedArtifact {
        use oci_wasm::ToConfig;
        use std::io::{BufRead, BufReader, Write};
        let raw = std::fs::read(component).unwrap();
        let (config, _) = WasmConfig::from_raw_component(raw.clone(), None).unwrap();
        let config = config.to_config().unwrap().data.to_vec();
        let digest = |bytes: &[u8]| format!("sha256:{}", sha256_hex(bytes));
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": { "mediaType": "application/vnd.wasm.config.v0+json", "digest": digest(&config), "size": config.len() },
            "layers": [{ "mediaType": "application/wasm", "digest": digest(&raw), "size": declared_size }],
        })
        .to_string();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let host = listener.local_addr().unwrap().to_string();
        let layer_requests = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = layer_requests.clone();
        let (config_path, layer_path) = (format!("/blobs/{}", digest(&config)), format!("/blobs/{}", digest(&raw)));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut request_line = String::new();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                // The headers are not needed; read them off.
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let path = request_line.split_whitespace().nth(1).unwrap_or_default().to_owned();
                let endless = |stream: &mut std::net::TcpStream, media_type: &str, start: &[u8]| {
                    let head = format!("HTTP/1.1 200 OK\r\nContent-Type: {media_type}\r\nConnection: close\r\n\r\n");
                    let block = vec![b' '; 64 << 10];
                    let mut written = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(start));
                    while written.is_ok() {
                        written = stream.write_all(&block);
                    }
                };
                match fault {
                    Fault::EndlessManifest if path.contains("/manifests/") => {
                        endless(&mut stream, "application/vnd.oci.image.manifest.v1+json", b"{\"schemaVersion\": 2");
                        continue;
                    }
                    Fault::EndlessLayer if path.ends_with(&layer_path) => {
                        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        endless(&mut stream, "application/wasm", &raw);
                        continue;
                    }
                    Fault::RedirectToHttp if path.contains("/manifests/") => {
                        let head = "HTTP/1.1 302 Found\r\nLocation: http://192.0.2.1/manifest\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
                        let _ = stream.write_all(head.as_bytes());
                        continue;
                    }
                    _ => {}
                }
                let (media_type, body): (&str, &[u8]) = if path.contains("/manifests/") {
                    ("application/vnd.oci.image.manifest.v1+json", manifest.as_bytes())
                } else if path.ends_with(&config_path) {
                    ("application/vnd.wasm.config.v0+json", &config)
                } else if path.ends_with(&layer_path) {
                    counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    ("application/wasm", &raw)
                } else {
                    ("application/json", b"{}")
                };
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: {media_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body));
            }
        });
        OversizedArtifact { host, layer_requests }
    }
}

/// The most a `toolhost add` process may hold against a hostile source.
const ADD_MEMORY_BOUND: usize = 256 << 20;

impl User {
    /// `toolhost add SOURCE --yes`, bounded: it must end within 30 s and
    /// under [`ADD_MEMORY_BOUND`]; what it said, and the most it held.
    fn add_bounded(&self, source: &str) -> (Output, usize) {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
        in_test_home(&mut command).env("XDG_DATA_HOME", self.data.path()).current_dir(self.cwd.path()).env_remove("RUST_LOG");
        command.args(["add", source, "--yes"]);
        support::run_bounded(&mut command, Duration::from_secs(30), ADD_MEMORY_BOUND)
            .unwrap_or_else(|why| panic!("{source}: {why}"))
    }
}

#[test]
fn an_endless_oci_manifest_is_cut_at_its_cap_as_it_arrives() {
    let registry = OversizedArtifact::serve_with(&calc(), 0, Fault::EndlessManifest);
    let user = User::new();
    let (out, held) = user.add_bounded(&format!("oci://{}/tools/calc:endless", registry.host));
    let said = text(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("larger than 4 MiB, the most toolhost reads (MAX_MANIFEST_BYTES)"), "{said}");
    eprintln!("held at most {} MiB", held >> 20);
}

#[test]
fn an_oci_layer_longer_than_its_manifest_declares_is_cut_at_the_declared_size() {
    let size = std::fs::metadata(calc()).unwrap().len();
    let registry = OversizedArtifact::serve_with(&calc(), size, Fault::EndlessLayer);
    let user = User::new();
    let (out, held) = user.add_bounded(&format!("oci://{}/tools/calc:long", registry.host));
    let said = text(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains(&format!("sent more than the {size} bytes its manifest declares")), "{said}");
    assert!(held < 128 << 20, "held {} MiB", held >> 20);
    assert!(!user.plugin_dir().join("calc.wasm").exists());
}

#[test]
fn a_redirect_to_plain_http_is_refused() {
    let registry = OversizedArtifact::serve_with(&calc(), 0, Fault::RedirectToHttp);
    let user = User::new();
    let (out, _) = user.add_bounded(&format!("oci://{}/tools/calc:moved", registry.host));
    let said = text(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("redirected to http://192.0.2.1/manifest, which is not https://"), "{said}");
}

#[test]
fn a_file_source_that_is_not_a_regular_file_is_refused_without_reading() {
    let user = User::new();
    let fifo = user.cwd.path().join("calc.wasm");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
    assert!(made.success());
    for (source, says) in [("/dev/zero", "is a device"), (fifo.to_str().unwrap(), "is a FIFO")] {
        let (out, _) = user.add_bounded(source);
        let said = text(&out.stderr);
        assert!(!out.status.success(), "{said}");
        assert!(said.contains(says) && said.contains("it was not installed"), "{source}: {said}");
    }
}

#[test]
fn an_oci_layer_declared_larger_than_the_cap_is_refused_before_it_is_fetched() {
    let registry = OversizedArtifact::serve(&calc(), 300 << 20);
    let user = User::new();
    let out = user.toolhost(&["add", &format!("oci://{}/tools/calc:huge", registry.host), "--yes"]);
    let said = text(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains(&format!("declares a component of {} bytes, larger than 256 MiB", 300 << 20)), "{said}");
    assert_eq!(registry.layer_requests.load(std::sync::atomic::Ordering::SeqCst), 0, "the layer was fetched: {said}");
    assert!(!user.plugin_dir().join("calc.wasm").exists());
}

/// `toolhost` as a user with a fresh home directory and no XDG variables
/// runs it, in `cwd`.
fn in_fresh_home(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    for var in ["XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "RUST_LOG"] {
        command.env_remove(var);
    }
    command.env("HOME", home).current_dir(cwd).args(args).output().expect("toolhost runs")
}

/// README, "Installing components": grant a directory to an installed
/// plugin in the per-user policy, as written there.
#[test]
fn a_grant_in_the_user_policy_reaches_what_add_installed_and_leaves_other_plugin_dirs_alone() {
    let (home, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let toolhost = |args: &[&str]| in_fresh_home(home.path(), cwd.path(), args);
    let dirtree = plugins("examples").join("dirtree.wasm");
    let out = toolhost(&["add", dirtree.to_str().unwrap(), "--yes"]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    std::fs::create_dir_all(home.path().join("notes")).unwrap();
    std::fs::write(home.path().join("notes/todo.txt"), "call mum").unwrap();
    std::fs::create_dir_all(home.path().join(".config/toolhost")).unwrap();
    std::fs::write(
        home.path().join(".config/toolhost/toolhost.toml"),
        "[plugins.dirtree]\ndirs = { \"/tree\" = { host = \"~/notes\" } }\n",
    )
    .unwrap();
    let out = toolhost(&["call", "dir_tree"]);
    assert!(text(&out.stdout).contains("todo.txt"), "{}{}", text(&out.stdout), text(&out.stderr));

    // The next `add` installs beside it, pinned in the same lock …
    let out = toolhost(&["add", calc().to_str().unwrap(), "--yes"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lock_file = home.path().join(".local/share/toolhost/plugins/toolhost.lock");
    let lock = std::fs::read_to_string(&lock_file).unwrap();
    assert!(lock.contains("\"calc.wasm\"") && lock.contains("\"dirtree.wasm\""), "{lock}");
    let out = toolhost(&["call", "dir_tree"]);
    assert!(text(&out.stdout).contains("todo.txt"), "{}", text(&out.stderr));
    // … and a directory given with --plugins is not held to that lock.
    let examples = plugins("examples");
    let out = toolhost(&["--plugins", examples.to_str().unwrap(), "call", "calculate", "--arg", "expression=6*7"]);
    assert!(text(&out.stdout).contains("42"), "{}", text(&out.stderr));
    // Unless asked.
    let out = toolhost(&["--plugins", examples.to_str().unwrap(), "--lock-file", lock_file.to_str().unwrap(), "list"]);
    assert!(text(&out.stderr).contains("is not pinned"), "{}", text(&out.stderr));
}
