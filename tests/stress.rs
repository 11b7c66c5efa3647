//! The sandbox under sustained attack, in one process: every hostile
//! plugin, 50 times each, interleaved with ordinary calls across 8 tasks.
//!
//! Checked: the host's peak RSS stays under [`RSS_BOUND`]; its open
//! descriptors return to their baseline; every ordinary call returns its
//! own correct result; and the process exits promptly after the last call
//! (the test runs the attack in a child process and times its exit).
//!
//! Run alone with `cargo test --release -p toolhost-tests --test stress`.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost::{Executor, Policy, Registry, Status, ToolCall};

// Host memory is counted, as in the toolhost command.
toolhost::count_host_memory!();

/// Runs of each hostile tool, and of each plugin that misbehaves at load.
const ROUNDS: usize = 50;
/// Tasks calling at once.
const TASKS: usize = 8;
/// The peak resident memory the host may reach. Each of the 8 concurrent
/// calls may hold 16 MiB of linear memory and 8 MiB of host memory under
/// the stress policy; on top, every pool slot a call has used keeps up to
/// 8 MiB resident for the next (a slot per concurrent call per plugin
/// module, so 8 tasks x 5 plugins here), plus the process itself.
/// Measured: 338 to 620 MiB peak on a 2-core machine. Without the
/// host-memory limit, one task hoarding `wasi:http` fields passes this
/// within a second.
const RSS_BOUND: u64 = 1 << 30;
/// How long the process may take to exit after its last call.
const EXIT_BOUND: Duration = Duration::from_secs(5);
/// How long the whole run may take before the parent gives up.
const RUN_BOUND: Duration = Duration::from_secs(600);

/// The plugins the hostile calls go to, and those refused or misbehaving
/// at load, which are inspected instead.
const CALLED: &[&str] = &["calc", "files", "hostile", "hoarder", "escapes"];
const LOADED_ONLY: &[&str] = &["manifest_hog", "api_mismatch", "impostor", "squatter", "injector", "bloated"];

fn main() -> ExitCode {
    if std::env::args().any(|a| a == "--attack") {
        return attack();
    }
    supervise()
}

/// Run the attack in a child process; it must finish, pass, and exit
/// within [`EXIT_BOUND`] of saying it is done.
fn supervise() -> ExitCode {
    use std::io::BufRead;
    let started = Instant::now();
    let mut child = Command::new(std::env::current_exe().expect("own path"))
        .arg("--attack")
        .stdout(Stdio::piped())
        .spawn()
        .expect("the attack process starts");
    let stdout = child.stdout.take().expect("piped");
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            println!("{line}");
            if line.starts_with("stress: done") {
                let _ = done_tx.send(Instant::now());
            }
        }
    });
    let done = done_rx.recv_timeout(RUN_BOUND.saturating_sub(started.elapsed()));
    let deadline = done.map_or_else(|_| Instant::now(), |at| at + EXIT_BOUND);
    loop {
        match child.try_wait().expect("waiting on the attack process") {
            Some(status) if status.success() && done.is_ok() => {
                println!("stress: the process exited {:?} after its last call", done.unwrap().elapsed());
                return ExitCode::SUCCESS;
            }
            Some(status) => {
                eprintln!("stress: the attack process failed: {status}");
                return ExitCode::FAILURE;
            }
            None if Instant::now() > deadline => {
                let _ = child.kill();
                eprintln!("stress: the process did not exit within {EXIT_BOUND:?} of its last call");
                return ExitCode::FAILURE;
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn attack() -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(TASKS).enable_all().build().expect("runtime");
    let result = runtime.block_on(run());
    // Like the CLI: blocking threads stuck in a system call do not hold
    // the process.
    runtime.shutdown_timeout(Duration::from_millis(200));
    match result {
        Ok(()) => {
            println!("stress: done");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("stress: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let host = Host::new(dir.path()).await?;
    host.warm_up().await?;
    let fds_before = open_fds();
    let rss_before = rss("VmRSS");
    println!(
        "stress: {} hostile tools x {ROUNDS}, {TASKS} tasks; rss {} MiB, {fds_before} descriptors",
        host.hostile.len(),
        rss_before >> 20
    );

    let started = Instant::now();
    let host = Arc::new(host);
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let host = host.clone();
            tokio::spawn(async move { host.attack(task).await })
        })
        .collect();
    let mut counts = (0, 0);
    for task in tasks {
        let (hostile, good) = task.await??;
        counts.0 += hostile;
        counts.1 += good;
    }
    let peak = rss("VmHWM");
    let fds_after = open_fds();
    println!(
        "stress: {} hostile and {} good calls in {:.1?}; peak rss {} MiB (bound {} MiB); {fds_after} descriptors",
        counts.0,
        counts.1,
        started.elapsed(),
        peak >> 20,
        RSS_BOUND >> 20
    );
    anyhow::ensure!(counts.0 == host.hostile.len() * ROUNDS, "every hostile call ran: {}", counts.0);
    anyhow::ensure!(peak < RSS_BOUND, "peak rss {} MiB over the bound of {} MiB", peak >> 20, RSS_BOUND >> 20);
    anyhow::ensure!(fds_after == fds_before, "descriptors: {fds_before} before, {fds_after} after");
    Ok(())
}

/// The host under attack, the hostile calls, and the resources they use.
struct Host {
    registry: Arc<Registry>,
    executor: Executor,
    hostile: Vec<ToolCall>,
    loaded_only: Vec<PathBuf>,
}

impl Host {
    async fn new(dir: &Path) -> anyhow::Result<Self> {
        let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/plugins");
        let plugins = dir.join("plugins");
        std::fs::create_dir(&plugins)?;
        for name in CALLED {
            let from = ["examples", "hostile"].iter().map(|d| built.join(d).join(format!("{name}.wasm"))).find(|p| p.exists());
            let from = from.ok_or_else(|| anyhow::anyhow!("{name}.wasm is not built; run `cargo xtask build-plugins`"))?;
            std::fs::copy(from, plugins.join(format!("{name}.wasm")))?;
        }
        let loaded_only = LOADED_ONLY.iter().map(|name| built.join("hostile").join(format!("{name}.wasm"))).collect();
        for sub in ["workspace", "data", "hoarder"] {
            std::fs::create_dir(dir.join(sub))?;
        }
        std::fs::write(dir.join("data/inside.txt"), "inside")?;
        std::fs::write(dir.join("hoarder/inside.txt"), "inside")?;
        Command::new("mkfifo").arg(dir.join("hoarder/pipe")).status()?;
        let port = serve_forever().await?;
        let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
        let (cache, key) = (target.join("toolhost-test-cache"), target.join("toolhost-test-state/toolhost/cache.key"));
        let limits = "limits = { fuel = 50_000_000, timeout_ms = 300, memory_mib = 16, host_memory_mib = 8, \
                      output_kib = 256, open_files = 16, resources = 200, http_requests = 4 }";
        let policy_text = format!(
            "plugin_dirs = [\"plugins\"]\ncache_dir = {cache:?}\ncache_key = {key:?}\nlock_file = \"none.lock\"\n\
             [plugins.files]\nfile = \"files.wasm\"\ndirs = {{ \"/workspace\" = {{ host = \"workspace\", access = \"read-write\" }} }}\n\
             [plugins.hostile]\nfile = \"hostile.wasm\"\n{limits}\nenv = [\"PATH\"]\nhttp_hosts = [\"127.0.0.1:*\"]\n\
             dirs = {{ \"/data\" = {{ host = \"data\" }} }}\n\
             [plugins.hoarder]\nfile = \"hoarder.wasm\"\n{limits}\nhttp_hosts = [\"127.0.0.1:*\"]\n\
             dirs = {{ \"/data\" = {{ host = \"hoarder\", access = \"read-write\" }} }}\n\
             [plugins.escapes]\nfile = \"escapes.wasm\"\n{limits}\n",
            cache = cache.display().to_string(),
            key = key.display().to_string()
        );
        std::fs::write(dir.join("toolhost.toml"), policy_text)?;
        let registry = Arc::new(Registry::load(Policy::load(&dir.join("toolhost.toml"))?).await?);
        let refused: Vec<String> = registry.catalog().refused.iter().map(|r| r.error.to_string()).collect();
        anyhow::ensure!(refused.is_empty(), "refused: {refused:?}");
        let url = format!("http://127.0.0.1:{port}/");
        let hostile = hostile_calls(&registry, &url);
        Ok(Host { executor: Executor::new(registry.clone()), registry, hostile, loaded_only })
    }

    /// Every plugin in every engine with its memory images made (lone
    /// calls keep to one engine; the attack's calls at once use them
    /// all), and a harmless call to each, so that what the host makes on
    /// first use exists before the descriptors are counted.
    async fn warm_up(&self) -> anyhow::Result<()> {
        self.registry.ready_every_engine().await;
        let harmless = [
            ("calculate", json!({ "expression": "1" })),
            ("list_files", json!({})),
            ("count_calls", json!({})),
            ("log_forged", json!({})),
            ("shout", json!({})),
        ];
        for _ in 0..toolhost::limits::MAX_SHARDS {
            for (tool, args) in &harmless {
                self.call(tool, args.clone()).await?;
            }
        }
        Ok(())
    }

    /// Task `task`'s share: every hostile call `ROUNDS` times in all (the
    /// tasks split the rounds), each followed by ordinary calls whose
    /// results must be their own; and its share of the load-time plugins.
    async fn attack(&self, task: usize) -> anyhow::Result<(usize, usize)> {
        let (mut hostile, mut good) = (0, 0);
        for round in (task..ROUNDS).step_by(TASKS) {
            for (i, call) in self.hostile.iter().enumerate() {
                let outcome = self.executor.call(call).await;
                anyhow::ensure!(outcome.tool == call.tool, "an outcome for another call: {outcome:?}");
                hostile += 1;
                good += self.good_calls(task, round, i).await?;
            }
            for path in &self.loaded_only {
                // Refused or loaded: what matters is that the host holds.
                let _ = self.registry.inspect(path).await;
            }
        }
        Ok((hostile, good))
    }

    async fn good_calls(&self, task: usize, round: usize, i: usize) -> anyhow::Result<usize> {
        let n = (task * 1_000_000 + round * 1_000 + i) as i64;
        let expression = format!("{n} * 7 + 1");
        let sum = self.call("calculate", json!({ "expression": expression })).await?;
        let expected = json!({ "expression": expression, "value": (n * 7 + 1) as f64 }).to_string();
        anyhow::ensure!(sum == expected, "calculate {n}: {sum}, expected {expected}");
        let path = format!("t{task}-r{round}-c{i}.txt");
        let content = format!("written by task {task}, round {round}, call {i}");
        self.call("write_file", json!({ "path": path, "content": content })).await?;
        let read = self.call("read_file", json!({ "path": path })).await?;
        anyhow::ensure!(read == content, "read back {path}: {read}");
        Ok(3)
    }

    async fn call(&self, tool: &str, args: Value) -> anyhow::Result<String> {
        let Value::Object(args) = args else { unreachable!("an object") };
        let outcome = self.executor.call(&ToolCall::new(format!("good-{tool}"), tool, args)).await;
        anyhow::ensure!(outcome.status == Status::Success, "{tool}: {} {}", outcome.status, outcome.output);
        Ok(outcome.output)
    }
}

/// One call to every tool of the called hostile plugins, with arguments
/// that make each misbehave.
fn hostile_calls(registry: &Registry, url: &str) -> Vec<ToolCall> {
    let args = |tool: &str| -> Value {
        match tool {
            "read_path" => json!({ "path": "/data/../../etc/passwd" }),
            "write_path" => json!({ "path": "/data/pwned" }),
            "read_env" => json!({ "name": "HOME" }),
            "fetch" => json!({ "url": "http://evil.test/" }),
            "flood_output" => json!({ "mib": 8 }),
            "chatter" => json!({ "kib": 256 }),
            "sleep" => json!({ "seconds": 30 }),
            "huge_error" => json!({ "mib": 4 }),
            "read_data" => json!({ "name": "pipe" }),
            "symlink" => json!({ "target": "../../outside", "name": "escape" }),
            "hoard_listings" => json!({ "files": 500 }),
            "fetch_many" => json!({ "url": url, "count": 100 }),
            "shout" => json!({ "text": "\u{1b}[2J all plugins verified" }),
            "log_huge" => json!({ "mib": 8 }),
            "poll_many" => json!({ "count": 2_000_000 }),
            "touch" => json!({ "name": "pipe" }),
            _ => json!({}),
        }
    };
    let catalog = registry.catalog();
    let hostile = ["hostile", "hoarder", "escapes"];
    catalog
        .tools()
        .filter(|(plugin, _)| hostile.contains(&plugin.name()))
        .map(|(_, tool)| {
            let Value::Object(map) = args(&tool.name) else { unreachable!("an object") };
            ToolCall::new(format!("hostile-{}", tool.name), tool.name.clone(), map)
        })
        .collect()
}

/// An HTTP server on loopback answering every request; returns its port.
async fn serve_forever() -> anyhow::Result<u16> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                let _ = socket.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok").await;
            });
        }
    });
    Ok(port)
}

/// A field of `/proc/self/status` in bytes (`VmRSS`, `VmHWM`).
fn rss(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.trim_start_matches(':').trim().strip_suffix(" kB")?.parse::<u64>().ok())
        .map_or(0, |kib| kib << 10)
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}
