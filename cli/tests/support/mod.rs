//! What the CLI's tests share: the built plugins, and `toolhost` run as a
//! user runs it with the caches in the build's target directory.
#![allow(dead_code, reason = "each test binary uses some of these")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Say that a test is skipped because `what` is missing, and why. Under
/// CI (`CI` set, as `.ci/run` is run), where `cargo xtask test` installs
/// every toolchain and service the tests use, a missing one fails the
/// test instead: a skip must not pass there unseen.
pub fn skip(what: &str, reason: &str) {
    let under_ci = std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false" && ci != "0");
    assert!(!under_ci, "{what} is missing under CI, where `cargo xtask test` installs it: {reason}");
    eprintln!("SKIPPED: {what} is missing: {reason}");
}

/// `target/plugins/DIR`, built by `cargo xtask build-plugins`.
pub fn plugins(dir: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/plugins").join(dir);
    assert!(path.exists(), "{} is missing; run `cargo xtask build-plugins`", path.display());
    path
}

/// `command` with the user's cache, state, data and config directories
/// (the compiled cache, its key, the per-user plugin directory, the
/// per-user policy) in the build's target directory, shared by the tests
/// and apart from the real user's.
pub fn in_test_home(command: &mut Command) -> &mut Command {
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    command
        // A console announces itself here to the user's later doors: each
        // command its own, so tests running at once do not find each
        // other's (a test that wants one desk sets it after this).
        .env("XDG_RUNTIME_DIR", own_runtime_dir(&target))
        .env("XDG_CONFIG_HOME", target.join("toolhost-test-config"))
        .env("XDG_CACHE_HOME", target.join("toolhost-test-cache"))
        .env("XDG_STATE_HOME", target.join("toolhost-test-state"))
        .env("XDG_DATA_HOME", target.join("toolhost-test-data"))
}

/// A fresh directory under `target/toolhost-test-run/`, mode 0700 as a
/// runtime directory is.
pub fn own_runtime_dir(target: &Path) -> PathBuf {
    use std::os::unix::fs::DirBuilderExt;
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = target.join("toolhost-test-run").join(format!("{}-{n}", std::process::id()));
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir).expect("a runtime directory");
    dir
}

/// Run `toolhost` in `cwd` with `args`.
pub fn toolhost(cwd: &Path, args: &[&str]) -> Output {
    in_test_home(&mut Command::new(env!("CARGO_BIN_EXE_toolhost")))
        .current_dir(cwd)
        .env_remove("RUST_LOG")
        .args(args)
        .output()
        .expect("toolhost runs")
}

/// Bytes as text, lossily.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Run `command` to its end, unless it runs longer than `limit` or its
/// resident memory passes `memory` bytes: then it is killed and the error
/// says which. Its output, and the most resident memory it was seen with
/// (sampled from `/proc/PID/status` every few milliseconds).
pub fn run_bounded(command: &mut Command, limit: std::time::Duration, memory: usize) -> Result<(Output, usize), String> {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("it starts");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let (started, mut peak) = (std::time::Instant::now(), 0usize);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        let status_file = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
        let kib = status_file
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches(" kB").parse::<usize>().ok());
        peak = peak.max(kib.unwrap_or(0) << 10);
        let why = if peak > memory {
            Some(format!("it held {} MiB, over {} MiB", peak >> 20, memory >> 20))
        } else if started.elapsed() > limit {
            Some(format!("it ran longer than {limit:?}"))
        } else {
            None
        };
        if let Some(why) = why {
            let _ = child.kill();
            let _ = child.wait();
            let said = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
            return Err(format!("{why}; killed. It said: {said}"));
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    Ok((Output { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() }, peak))
}

/// Where `cargo xtask test` installs the peers the tests drive.
pub fn toolchains() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/toolchains")
}

/// The official MCP Python client's interpreter, which the tests need.
pub fn mcp_python() -> PathBuf {
    let python = toolchains().join("mcp/python/bin/python");
    assert!(python.exists(), "{} is missing; run `cargo xtask mcp-clients` (or `cargo xtask test`)", python.display());
    python
}

/// The script that drives the official MCP Python client.
pub fn mcp_client_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp/client.py")
}

/// A directory whose `toolhost.toml` loads calc, files (writing to `ws/`)
/// and the hostile plugin, keeps an audit log, and remembers approvals in
/// the directory.
pub fn workspace_with_hostile() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    for (from, name) in [("examples", "calc"), ("examples", "files"), ("hostile", "hostile")] {
        let file = format!("{name}.wasm");
        std::fs::copy(self::plugins(from).join(&file), plugins.join(&file)).unwrap();
    }
    let policy = "plugin_dirs = [\"plugins\"]\n\
                  [plugins.files]\nfile = \"files.wasm\"\n\
                  dirs = { \"/workspace\" = { host = \"ws\", access = \"read-write\" } }\n\
                  [plugins.hostile]\nfile = \"hostile.wasm\"\n\
                  [approval]\naudit_log = \"audit.jsonl\"\nmemory_file = \"approvals.json\"\n";
    std::fs::write(dir.path().join("toolhost.toml"), policy).unwrap();
    dir
}
