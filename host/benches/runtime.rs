//! The runtime benchmark, all figures from one run (`cargo xtask bench`):
//!
//! - (a) a trivial tool (`calculate` on `1+1`) through the full path:
//!   executor, registry lookup, fresh store and instance, call, outcome;
//! - (b) the same call on one reused instance: the floor;
//! - (c) a native process spawned per call doing the same work (`expr 1 + 1`),
//!   the process-per-call model of stdio tool servers;
//! - (d) loading the plugin with a cold compiled-artifact cache (compile and
//!   store) versus a warm one (read, verify, deserialize), each including
//!   linking, reading the manifest and validating it.
//!
//! Each figure is a median; the ratios are computed from the same run.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost::{Executor, Policy, Registry, Status, ToolCall};

const FRESH_CALLS: usize = 5_000;
const REUSED_BATCHES: usize = 20;
const REUSED_BATCH: u32 = 1_000;
const PROCESS_SPAWNS: usize = 300;
const COLD_LOADS: usize = 7;
const WARM_LOADS: usize = 50;

fn main() -> anyhow::Result<()> {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/plugins/examples");
    anyhow::ensure!(examples.exists(), "{} is missing; run `cargo xtask bench`", examples.display());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let cache_dir = tempfile::tempdir()?;
    let policy = Policy {
        plugin_dirs: vec![examples.clone()],
        cache_dir: Some(cache_dir.path().to_owned()),
        lock_file: cache_dir.path().join("none.lock"),
        ..Policy::default()
    };
    let registry = Arc::new(runtime.block_on(Registry::load(policy))?);
    let executor = Executor::new(registry.clone());
    let args = serde_json::json!({ "expression": "1+1" }).as_object().cloned().unwrap_or_default();
    let call = ToolCall::new("bench", "calculate", args);

    // (a) Fresh instance per call, through the executor.
    let fresh = runtime.block_on(async {
        for _ in 0..200 {
            executor.call(&call).await; // warm-up
        }
        let mut samples = Vec::with_capacity(FRESH_CALLS);
        for _ in 0..FRESH_CALLS {
            let start = Instant::now();
            let outcome = executor.call(&call).await;
            samples.push(start.elapsed());
            assert_eq!(outcome.status, Status::Success, "{}", outcome.output);
        }
        median(samples)
    });

    // (b) One instance, reused.
    let reused = runtime.block_on(async {
        let catalog = registry.catalog();
        let (plugin, _) = catalog.tool("calculate").expect("calc is loaded");
        let mut samples = Vec::with_capacity(REUSED_BATCHES);
        for _ in 0..REUSED_BATCHES {
            let total = registry.bench_reused_instance(plugin, "calculate", r#"{"expression":"1+1"}"#, REUSED_BATCH).await?;
            samples.push(total / REUSED_BATCH);
        }
        anyhow::Ok(median(samples))
    })?;

    // (c) A native process per call.
    let mut samples = Vec::with_capacity(PROCESS_SPAWNS);
    for _ in 0..PROCESS_SPAWNS {
        let start = Instant::now();
        let output = Command::new("expr").args(["1", "+", "1"]).output()?;
        samples.push(start.elapsed());
        assert_eq!(output.stdout, b"2\n");
    }
    let process = median(samples);

    // (d) Loading one plugin (read, digest, compile or cached artifact,
    // link, manifest, validation) with a cold versus a warm compiled cache.
    let calc = examples.join("calc.wasm");
    let wasm = std::fs::read(&calc)?;
    let empty = tempfile::tempdir()?;
    let registry_with_cache = |cache: &std::path::Path| {
        let policy = Policy { cache_dir: Some(cache.to_owned()), lock_file: empty.path().join("none.lock"), ..Policy::default() };
        runtime.block_on(Registry::load(policy))
    };
    let mut cold_samples = Vec::with_capacity(COLD_LOADS);
    for _ in 0..COLD_LOADS {
        let cache = tempfile::tempdir()?;
        let registry = registry_with_cache(cache.path())?;
        let start = Instant::now();
        let plugin = runtime.block_on(registry.inspect(&calc))?;
        cold_samples.push(start.elapsed());
        assert_eq!(plugin.cache, toolhost::CacheUse::Compiled);
    }
    let warm_cache = tempfile::tempdir()?;
    let registry = registry_with_cache(warm_cache.path())?;
    runtime.block_on(registry.inspect(&calc))?;
    let mut warm_samples = Vec::with_capacity(WARM_LOADS);
    for _ in 0..WARM_LOADS {
        let start = Instant::now();
        let plugin = runtime.block_on(registry.inspect(&calc))?;
        warm_samples.push(start.elapsed());
        assert_eq!(plugin.cache, toolhost::CacheUse::Hit);
    }
    let (cold, warm) = (median(cold_samples), median(warm_samples));

    println!("toolhost runtime benchmark (medians; calc.wasm is {} KiB)", wasm.len() >> 10);
    println!("(a) fresh instance per call, full path   {:>12}", show(fresh));
    println!("(b) reused instance (floor)               {:>12}", show(reused));
    println!("(c) native process per call (expr)        {:>12}", show(process));
    println!("(d) plugin load, cold cache (compile)     {:>12}", show(cold));
    println!("    plugin load, warm cache (deserialize) {:>12}", show(warm));
    println!();
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    let check = |ok: bool| if ok { "meets target" } else { "MISSES target" };
    println!("(a)              {:>10}   target <= 15 µs: {}", show(fresh), check(fresh <= Duration::from_micros(15)));
    println!("(a)/(b)          {:>10.1}x  cost of a fresh instance over the floor", ratio(fresh, reused));
    let per_process = ratio(process, fresh);
    println!("(c)/(a)          {:>10.1}x  target >= 20: {}", per_process, check(per_process >= 20.0));
    let cache_gain = ratio(cold, warm);
    println!("cold/warm        {:>10.1}x  target >= 50: {}", cache_gain, check(cache_gain >= 50.0));
    Ok(())
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn show(d: Duration) -> String {
    let micros = d.as_secs_f64() * 1e6;
    if micros < 1_000.0 { format!("{micros:.2} µs") } else { format!("{:.2} ms", micros / 1000.0) }
}
