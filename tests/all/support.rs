//! Shared helpers: where the built plugins are, and a host over a temporary
//! plugin directory with a policy of the test's choosing.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tempfile::TempDir;
use toolhost::{Executor, Policy, Registry, ToolCall, ToolOutcome, registry::LockFile};

/// A plugin of `plugins/`, as the constants of [`crate::built`] name it:
/// built by `cargo xtask build-plugins` into `target/plugins/DIR/NAME.wasm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plugin {
    /// Its file name, without `.wasm`.
    pub name: &'static str,
    /// Where it is built: `examples`, `hostile`, `testing` or `polyglot`.
    pub dir: &'static str,
    /// Its sources, under `plugins/`: `calc`, `hostile/hoarder`, `python/textstats`.
    pub source: &'static str,
}

impl Plugin {
    /// The built component.
    pub fn path(self) -> PathBuf {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/plugins").join(self.dir).join(format!("{}.wasm", self.name));
        assert!(path.exists(), "{} is not built; run `cargo xtask build-plugins` (or `cargo xtask test`)", path.display());
        path
    }
}

/// Whether the other language's `example` was built. When its
/// toolchain did not install, `cargo xtask build-plugins` wrote why into
/// `LANG.skipped`; this prints that reason and answers false, so the test
/// returns early, skipped in so many words, outside CI; under CI, and when
/// neither built nor skipped, it fails.
pub fn polyglot_built(example: Plugin) -> bool {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/plugins/polyglot");
    let (lang, example) = (example.source.split('/').next().unwrap_or_default(), example.name);
    if dir.join(format!("{example}.wasm")).exists() {
        return true;
    }
    match std::fs::read_to_string(dir.join(format!("{lang}.skipped"))) {
        Ok(reason) => {
            // Under CI (`CI` set, as `.ci/run` is run) every toolchain is
            // installed by `cargo xtask test`: a skip there is a failure.
            let under_ci = std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false" && ci != "0");
            assert!(!under_ci, "the {lang} example {example} was not built under CI: {reason}");
            eprintln!("SKIPPED: the {lang} example {example} was not built: {reason}");
            false
        }
        Err(_) => panic!("{example}.wasm is not built and no reason is recorded; run `cargo xtask build-plugins`"),
    }
}

/// A compiled-artifact cache shared by the tests, so each component is
/// compiled once per run rather than once per test.
pub fn shared_cache() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/toolhost-test-cache")
}

/// The key of the shared cache: in the build's target directory, apart from
/// the real user's.
pub fn shared_cache_key() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/toolhost-test-state/toolhost/cache.key")
}

/// A host over a temporary directory holding `plugins`, with `policy`
/// appended to a `toolhost.toml` that names the directory, the shared cache
/// and its key, and a lock file in the temporary directory.
pub struct TestHost {
    /// The temporary directory; `plugins/` holds the components.
    pub dir: TempDir,
    /// The policy it was loaded with: the doors' sections are here, the
    /// registry holds only its runtime part.
    pub config: Policy,
    /// The loaded registry.
    pub registry: Arc<Registry>,
    /// An executor over it.
    pub executor: Executor,
}

impl TestHost {
    pub async fn new(plugins: &[Plugin], policy: &str) -> TestHost {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("plugins")).unwrap();
        for plugin in plugins {
            std::fs::copy(plugin.path(), dir.path().join("plugins").join(format!("{}.wasm", plugin.name))).unwrap();
        }
        let config = policy_in(dir.path(), policy);
        let registry = Arc::new(Registry::load(config.runtime()).await.unwrap());
        TestHost { executor: Executor::new(registry.clone()), registry, config, dir }
    }

    /// The policy file's contents for this host.
    pub fn policy(&self, policy: &str) -> Policy {
        policy_in(self.dir.path(), policy)
    }

    /// The policy this host was loaded with, read again from its file (as
    /// a restarted host would).
    pub fn policy_text_reloaded(&self) -> Policy {
        Policy::load(&self.dir.path().join("toolhost.toml")).unwrap()
    }

    /// Write the lock file pinning each component of `plugins/` named in
    /// `pins` (file name, hex digest), keyed as `toolhost lock` keys it.
    pub fn write_lock(&self, pins: &[(&str, &str)]) {
        let lock_file = self.dir.path().join("toolhost.lock");
        let keyed = pins
            .iter()
            .map(|(file, digest)| (LockFile::key(&lock_file, &self.dir.path().join("plugins").join(file)), digest.to_string()));
        LockFile::new(keyed).write(&lock_file).unwrap();
    }

    /// Call `tool` with `args` (a JSON object).
    pub async fn call(&self, tool: &str, args: Value) -> ToolOutcome {
        let Value::Object(args) = args else { panic!("args must be an object") };
        self.executor.call(&ToolCall::new("test", tool, args)).await
    }
}

/// Write `toolhost.toml` in `dir` and load it.
pub fn policy_in(dir: &Path, policy: &str) -> Policy {
    let text = format!(
        "plugin_dirs = [\"plugins\"]\ncache_dir = {:?}\ncache_key = {:?}\nlock_file = \"toolhost.lock\"\n{policy}",
        shared_cache().display().to_string(),
        shared_cache_key().display().to_string()
    );
    let path = dir.join("toolhost.toml");
    std::fs::write(&path, text).unwrap();
    Policy::load(&path).unwrap()
}

/// Plugin log records seen: (plugin, message).
pub type LogRecords = Arc<std::sync::Mutex<Vec<(String, String)>>>;

/// The plugin log records seen on this thread while the guard lives.
/// Calls under `#[tokio::test]` run on the test's thread.
pub fn capture_logs() -> (tracing::subscriber::DefaultGuard, LogRecords) {
    use tracing_subscriber::layer::SubscriberExt;
    let records = Arc::new(std::sync::Mutex::new(Vec::new()));
    let subscriber = tracing_subscriber::registry().with(LogCapture(records.clone()));
    (tracing::subscriber::set_default(subscriber), records)
}

struct LogCapture(LogRecords);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for LogCapture {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        #[derive(Default)]
        struct Fields {
            plugin: String,
            message: String,
        }
        impl tracing::field::Visit for Fields {
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                if field.name() == "plugin" {
                    self.plugin = value.to_owned();
                }
            }
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.message = format!("{value:?}");
                }
            }
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        if !fields.plugin.is_empty() {
            self.0.lock().unwrap().push((fields.plugin, fields.message));
        }
    }
}

/// The descriptors this process holds open on `dir` or below it. (Tests
/// run in parallel, so a count of all descriptors would race.)
/// Wait until no descriptor of this process points under `dir` (a call's
/// store, and with it its descriptors, is dropped just after its caller
/// has the result); how many are left after 5 s.
pub async fn fds_left_under(dir: &Path) -> usize {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let open = open_fds_under(dir);
        if open == 0 || std::time::Instant::now() > deadline {
            return open;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

fn open_fds_under(dir: &Path) -> usize {
    let Ok(fds) = std::fs::read_dir("/proc/self/fd") else { return 0 };
    fds.filter_map(Result::ok)
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter(|target| target.starts_with(dir))
        .count()
}

/// Read an HTTP request's head from `socket`; false if it closed first.
pub async fn read_request_head(socket: &mut tokio::net::TcpStream) -> bool {
    use tokio::io::AsyncReadExt;
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    true
}

/// An HTTP server on loopback that answers every connection with `body`
/// until the test ends; returns its port.
pub async fn serve_forever(body: &'static str) -> u16 {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                if !read_request_head(&mut socket).await {
                    return;
                }
                let response = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
                let _ = socket.write_all(response.as_bytes()).await;
            });
        }
    });
    port
}

/// This process's resident memory now, in bytes, from `/proc/self/statm`.
pub fn resident_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: usize = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).expect("resident pages");
    pages * 4096
}

/// The processor time this process used so far, user and system, from
/// `/proc/self/stat` (in clock ticks, 100 a second on Linux).
pub fn cpu_time() -> std::time::Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The fields after the command name, which may hold spaces, in parentheses.
    let fields: Vec<&str> = stat.rsplit_once(')').expect("a command name").1.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    std::time::Duration::from_millis(ticks * 10)
}

/// Whether this process is the one to run test `name` (of module
/// `module`, as `module_path!()` says) in. A test that bounds this
/// process's memory growth runs alone, in a child process of the test
/// binary, since the other tests running beside it would grow it too: in
/// the parent this runs the child, asserts that it ran that one test and
/// passed, and returns false; in the child it returns true.
pub fn alone(module: &str, name: &str) -> bool {
    const CHILD: &str = "TOOLHOST_TEST_ALONE";
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let test = format!("{}::{name}", module.split_once("::").map_or(module, |(_, path)| path));
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([test.as_str(), "--exact", "--test-threads", "1", "--nocapture"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success() && said.contains("1 passed"), "{test}, run alone:\n{said}");
    false
}

/// Run `work`, sampling this process's resident memory every few
/// milliseconds on another thread: its output and the most the memory grew
/// above where it started, in bytes; or, as soon as it grew past `bound`,
/// how far, with `work` dropped (so a test of a bound fails fast rather
/// than eat the machine's memory). Measurements take turns, as they
/// measure the one process.
pub async fn within_memory<T>(bound: usize, work: impl std::future::Future<Output = T>) -> Result<(T, usize), usize> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _turn = TURN.lock().await;
    let start = resident_bytes();
    let (done, peak) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(start)));
    let over = Arc::new(tokio::sync::Notify::new());
    let sampler = {
        let (done, peak, over) = (done.clone(), peak.clone(), over.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let now = resident_bytes();
                peak.fetch_max(now, Ordering::Relaxed);
                if now.saturating_sub(start) > bound {
                    over.notify_one();
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        })
    };
    let output = tokio::select! {
        output = work => Some(output),
        () = over.notified() => None,
    };
    peak.fetch_max(resident_bytes(), Ordering::Relaxed);
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    let grew = peak.load(Ordering::Relaxed).saturating_sub(start);
    match output {
        Some(output) if grew <= bound => Ok((output, grew)),
        _ => Err(grew),
    }
}
