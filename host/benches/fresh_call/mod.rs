//! A fresh-instance call of `calculate` on `1+1` through the executor, in
//! a process whose global allocator the benchmark binary chose: with
//! toolhost's counting allocator (`fresh_call_counted`) or without
//! (`fresh_call_uncounted`). `cargo xtask bench` runs the two alternately
//! and reports what counting host memory costs a fresh call.

use crate::common::{median, show};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use toolhost::{Executor, Policy, Registry, Status, ToolCall, sandbox::SandboxSize};

/// Calls timed per run, after a twentieth as many to warm up.
const CALLS: usize = 20_000;

/// Time the calls and write the median, in nanoseconds, to
/// `target/bench/fresh_call_LABEL.txt` for xtask to compare.
pub fn run(label: &str) -> anyhow::Result<()> {
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    let examples = target.join("plugins/examples");
    anyhow::ensure!(examples.exists(), "{} is missing; run `cargo xtask bench`", examples.display());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let cache = tempfile::tempdir()?;
    let mut policy = Policy::default();
    policy.plugin_dirs = vec![examples];
    policy.cache_dir = Some(cache.path().to_owned());
    policy.lock_file = cache.path().join("none.lock");
    policy.sandbox = SandboxSize::pooled(4, 1);
    let registry = Arc::new(runtime.block_on(Registry::load(policy))?);
    let executor = Executor::new(registry);
    let call = ToolCall::new("bench", "calculate", serde_json::json!({ "expression": "1+1" }));
    let median = runtime.block_on(async {
        for _ in 0..CALLS / 20 {
            executor.call(&call).await;
        }
        let mut samples = Vec::with_capacity(CALLS);
        for _ in 0..CALLS {
            let start = Instant::now();
            let outcome = executor.call(&call).await;
            samples.push(start.elapsed());
            assert_eq!(outcome.status, Status::Success, "{}", outcome.output);
        }
        median(samples)
    });
    println!(
        "fresh call, host memory {label} (accounting {}): {}",
        if toolhost::sandbox::accounting_active() { "on" } else { "off" },
        show(median)
    );
    let out = target.join("bench");
    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join(format!("fresh_call_{label}.txt")), median.as_nanos().to_string())?;
    Ok(())
}
