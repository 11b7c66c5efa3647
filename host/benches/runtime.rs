//! The runtime benchmark, all figures from one run (`cargo xtask bench`):
//!
//! - (a) a trivial tool (`calculate` on `1+1`) through the full path:
//!   executor, registry lookup, fresh store and instance, call, outcome;
//! - (b) the same call on one reused instance: the floor; (b') that
//!   instance called as (i) calls, one call after each idling;
//! - (i) latency: one call at a time on an otherwise idle host, the time
//!   its caller (a task on the runtime's workers) waits, with instances
//!   made ahead and without (every instance made on the call's path, as
//!   before they were);
//! - (j) throughput: calls per second at full load on every core, with
//!   instances made ahead and without, in alternating rounds;
//! - (c) a native process spawned per call doing the same work (`expr 1 + 1`),
//!   the process-per-call model of stdio tool servers;
//! - (e) 20 000 trivial calls through the executor, serially and in
//!   parallel under the default cap (parallel scaling);
//! - (g) 64 calls that each wait 20 ms in the host, and the 20 000
//!   CPU-bound calls, at caps 2, 4, 8 and 32: what the default cap trades;
//! - (f) a batch of 10 trivial calls through the whole turn pipeline,
//!   auto-approved, against the same batch on the bare executor;
//! - (d) loading the plugin with a cold compiled-artifact cache (compile and
//!   store) versus a warm one (read, verify, deserialize), each including
//!   linking, reading the manifest and validating it.
//!
//! - (h) the same tool, the `toolhost new` sample, in Rust, C, Go,
//!   JavaScript (componentize-qjs, and componentize-js as `js-sm`) and
//!   Python: load time with a cold and a warm cache, and a fresh-instance
//!   call, each against Rust's; and the time a caller waits for a call
//!   with instances made ahead, as (i), against that language's fresh call.
//!
//! Each figure is a median; the ratios are computed from the same run.

mod common;
mod summary;

use common::{median, show};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use summary::summarize;
use toolhost::{
    AllowAll, Approvals, Executor, Pipeline, Policy, ProtocolId, Registry, Sandbox, Status, ToolCall, Turn, executor::RunOptions,
    sandbox::SandboxSize,
};

// Host memory is counted, as in the toolhost command.
toolhost::count_host_memory!();

const FRESH_CALLS: usize = 5_000;
const REUSED_BATCHES: usize = 20;
const REUSED_BATCH: u32 = 1_000;
const PROCESS_SPAWNS: usize = 300;
const COLD_LOADS: usize = 7;
const WARM_LOADS: usize = 50;
const SCALING_CALLS: usize = 20_000;
const SCALING_ROUNDS: usize = 5;
const LATENCY_CALLS: usize = 2_000;
/// Instances made ahead in (i) and (j).
const INSTANCES_AHEAD: u32 = 8;
/// How long the host idles between the calls whose latency is measured.
const IDLE_MICROS: u64 = 200;
/// `calculate`'s arguments in every call here.
const ARGS_JSON: &str = r#"{"expression":"1+1"}"#;
const THROUGHPUT_CALLS: usize = 10_000;
const THROUGHPUT_ROUNDS: usize = 3;
const PIPELINE_ROUNDS: usize = 2_000;
const WAITING_CALLS: usize = 64;
const WAIT_MS: u64 = 20;
const CAPS: [usize; 4] = [2, 4, 8, 32];
const SWEEP_ROUNDS: usize = 3;
/// The `toolhost new` samples, Rust's first: the directory under
/// `target/plugins/samples/`, and how many cold loads, warm loads and
/// fresh calls to time (fewer for the large interpreters).
const SAMPLES: [(&str, (usize, usize, usize)); 6] = [
    ("rust", (7, 50, 5_000)),
    ("c", (7, 50, 5_000)),
    ("go", (3, 20, 1_000)),
    ("js", (3, 20, 1_000)),
    ("js-sm", (3, 10, 300)),
    ("python", (3, 10, 300)),
];

fn main() -> anyhow::Result<()> {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/plugins/examples");
    anyhow::ensure!(examples.exists(), "{} is missing; run `cargo xtask bench`", examples.display());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let cache_dir = tempfile::tempdir()?;
    let mut policy = policy_with_cache(cache_dir.path());
    policy.plugin_dirs = vec![examples.clone()];
    let registry = Arc::new(runtime.block_on(Registry::load(policy.clone()))?);
    let executor = Executor::new(registry.clone());
    let args = serde_json::json!({ "expression": "1+1" }).as_object().cloned().unwrap_or_default();
    let call = ToolCall::new("bench", "calculate", args);

    // (a) Fresh instance per call, through the executor.
    let fresh = runtime.block_on(fresh_call(&executor, &call, FRESH_CALLS)).0;

    // (b) One instance, reused.
    let reused = runtime.block_on(async {
        let catalog = registry.catalog();
        let (plugin, _) = catalog.tool("calculate").expect("calc is loaded");
        let mut samples = Vec::with_capacity(REUSED_BATCHES);
        for _ in 0..REUSED_BATCHES {
            let total = registry.bench_reused_instance(plugin, "calculate", ARGS_JSON, REUSED_BATCH, None).await?;
            samples.push(total[0] / REUSED_BATCH);
        }
        anyhow::Ok(median(samples))
    })?;

    // (i) Latency, and (j) throughput, with instances made ahead and
    // without: two registries of the same plugins, one over a sandbox that
    // makes none.
    let cores = toolhost::executor::default_concurrency();
    let workers = tokio::runtime::Builder::new_multi_thread().worker_threads(cores).enable_all().build()?;
    let sandbox_with = |ahead: u32| -> anyhow::Result<Arc<Registry>> {
        let sandbox = Arc::new(Sandbox::with_size(SandboxSize::for_machine().with_instances_ahead(ahead))?);
        Ok(Arc::new(workers.block_on(Registry::load_in(sandbox, policy.clone()))?))
    };
    let (ahead, today) = (sandbox_with(INSTANCES_AHEAD)?, sandbox_with(0)?);
    // In a task, as every door runs its calls: from `block_on`, outside the
    // workers, each task a call spawns would wake a worker.
    let latency = |registry: &Arc<Registry>, call: &ToolCall, n: usize| {
        let (registry, call) = (registry.clone(), call.clone());
        workers.block_on(workers.spawn(async move { idle_latency(&registry, &call, n).await }))
    };
    let (latency_ahead, latency_today) = (latency(&ahead, &call, LATENCY_CALLS)?, latency(&today, &call, LATENCY_CALLS)?);
    // (b') The floor's instance called as (i) calls: one call at a time,
    // after the same idling, from a task on the workers.
    let reused_paced = {
        let registry = ahead.clone();
        workers.block_on(workers.spawn(async move {
            let catalog = registry.catalog();
            let (plugin, _) = catalog.tool("calculate").expect("calc is loaded");
            let idle = Some(Duration::from_micros(IDLE_MICROS));
            let took = registry.bench_reused_instance(plugin, "calculate", ARGS_JSON, LATENCY_CALLS as u32, idle).await?;
            anyhow::Ok(median(took))
        }))??
    };
    let many: Vec<ToolCall> =
        (0..THROUGHPUT_CALLS).map(|i| ToolCall::new(format!("t{i}"), "calculate", call.args.clone())).collect();
    let (mut per_second_ahead, mut per_second_today) = (Vec::new(), Vec::new());
    for _ in 0..THROUGHPUT_ROUNDS {
        per_second_ahead.push(workers.block_on(throughput(&ahead, &many)));
        per_second_today.push(workers.block_on(throughput(&today, &many)));
    }
    per_second_ahead.sort_by(f64::total_cmp);
    per_second_today.sort_by(f64::total_cmp);
    let (per_second_ahead, per_second_today) = (per_second_ahead[THROUGHPUT_ROUNDS / 2], per_second_today[THROUGHPUT_ROUNDS / 2]);
    let kept = ahead.sandbox().instances_ahead();

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
    let (cold, warm) = load_times(&runtime, &calc, COLD_LOADS, WARM_LOADS)?;

    // (e) N trivial calls through the executor: serially, then in parallel
    // under the default cap (the machine's cores), on a runtime with as
    // many worker threads.
    let batch: Vec<ToolCall> =
        (0..SCALING_CALLS).map(|i| ToolCall::new(format!("c{i}"), "calculate", call.args.clone())).collect();
    let (serial, parallel) = workers.block_on(async {
        let executor = Executor::new(registry.clone());
        let time = |parallel: bool| {
            let (executor, batch) = (executor.clone(), batch.clone());
            async move {
                let mut options = RunOptions::default();
                options.parallel = parallel;
                let start = Instant::now();
                let outcomes = executor.run_all(&batch, &options).await;
                assert!(outcomes.iter().all(|o| o.status == Status::Success));
                start.elapsed()
            }
        };
        let (mut serial, mut parallel) = (Vec::new(), Vec::new());
        for _ in 0..SCALING_ROUNDS {
            serial.push(time(false).await);
            parallel.push(time(true).await);
        }
        (median(serial), median(parallel))
    });

    // (g) Calls that wait (64 calls each waiting 20 ms in the host, as an
    // HTTP tool does) at several caps, against CPU-bound calls at the
    // same caps: what the default cap trades.
    let hostile = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/plugins/hostile");
    let mut waiting_policy = policy_with_cache(cache_dir.path());
    waiting_policy.plugin_dirs = vec![examples.clone(), hostile];
    let waiting_registry = Arc::new(workers.block_on(Registry::load(waiting_policy))?);
    let wait_args = serde_json::json!({ "ms": WAIT_MS }).as_object().cloned().unwrap_or_default();
    let waiting: Vec<ToolCall> =
        (0..WAITING_CALLS).map(|i| ToolCall::new(format!("w{i}"), "wait_ms", wait_args.clone())).collect();
    let mut sweep = Vec::new();
    for cap in CAPS {
        let executor = Executor::with_concurrency(waiting_registry.clone(), cap);
        let mut options = RunOptions::default();
        options.parallel = true;
        let (wait, cpu) = workers.block_on(async {
            let (mut wait, mut cpu) = (Vec::new(), Vec::new());
            for _ in 0..SWEEP_ROUNDS {
                let start = Instant::now();
                let outcomes = executor.run_all(&waiting, &options).await;
                assert!(outcomes.iter().all(|o| o.status == Status::Success), "{:?}", outcomes[0]);
                wait.push(start.elapsed());
                let start = Instant::now();
                executor.run_all(&batch, &options).await;
                cpu.push(start.elapsed());
            }
            (median(wait), median(cpu))
        });
        sweep.push((cap, wait, cpu));
    }

    // (f) A batch of 10 trivial calls through the whole turn pipeline
    // (checked, auto-approved, run, formatted) against the same 10 on the
    // bare executor.
    let ten: Vec<ToolCall> = batch[..10].to_vec();
    let (bare, piped) = runtime.block_on(async {
        let mut approval = toolhost::approval::ApprovalConfig::default();
        approval.memory_file = cache_dir.path().join("approvals.json");
        let approvals = Approvals::new(&approval);
        let pipeline = Pipeline::new(executor.clone(), Arc::new(approvals), Arc::new(AllowAll));
        let turn = Turn::direct(ProtocolId::JsonBlock);
        let options = RunOptions::default();
        let (mut bare, mut piped) = (Vec::new(), Vec::new());
        for _ in 0..PIPELINE_ROUNDS {
            let start = Instant::now();
            std::hint::black_box(executor.run_all(&ten, &options).await);
            bare.push(start.elapsed());
            let start = Instant::now();
            std::hint::black_box(pipeline.run(&turn, ten.clone()).await);
            piped.push(start.elapsed());
        }
        (median(bare), median(piped))
    });

    // (h) Every language's unedited `toolhost new` sample, the same
    // word-count tool in each: load, cold and warm, and a fresh-instance call.
    let samples_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/plugins/samples");
    let mut languages = Vec::new();
    for (label, loads) in SAMPLES {
        let file = samples_dir.join(label).join(format!("words_{}.wasm", label.replace('-', "_")));
        if !file.exists() {
            println!("(h) {label}: no sample; `cargo xtask bench` builds it (or said why it could not)");
            continue;
        }
        let size = std::fs::metadata(&file)?.len();
        let (cold, warm) = load_times(&runtime, &file, loads.0, loads.1)?;
        let mut policy = policy_with_cache(cache_dir.path());
        policy.plugin_dirs = vec![samples_dir.join(label)];
        let executor = Executor::new(Arc::new(runtime.block_on(Registry::load(policy.clone()))?));
        let args = serde_json::json!({ "text": "one two three" }).as_object().cloned().unwrap_or_default();
        let call = ToolCall::new("bench", format!("words_{}", label.replace('-', "_")), args);
        let (fresh, fuel) = runtime.block_on(fresh_call(&executor, &call, loads.2));
        // The latency (i) measures, in the sandbox with instances made ahead.
        let made_ahead = Arc::new(workers.block_on(Registry::load_in(ahead.sandbox().clone(), policy))?);
        let waited = latency(&made_ahead, &call, loads.2)?;
        languages.push((label, size, cold, warm, fresh, waited, fuel));
    }

    println!("toolhost runtime benchmark (medians; calc.wasm is {} KiB)", wasm.len() >> 10);
    println!("(a) fresh instance per call, full path   {:>12}", show(fresh));
    println!("(b) reused instance (floor)               {:>12}", show(reused));
    println!("(b') reused instance, one call after idle  {:>12}", show(reused_paced));
    println!("(i) latency, instances made ahead         {:>12}", show(latency_ahead));
    println!("    latency, each made on the call's path {:>12}", show(latency_today));
    println!("(j) throughput on {cores} cores, made ahead    {:>9.0} calls/s", per_second_ahead);
    println!("    throughput, made on the call's path   {:>9.0} calls/s", per_second_today);
    println!(
        "    instances made ahead: {} made, {} taken, {} discarded, {} failed; at most {} kept",
        kept.made, kept.taken, kept.discarded, kept.failed, kept.limit
    );
    println!("(c) native process per call (expr)        {:>12}", show(process));
    println!("(d) plugin load, cold cache (compile)     {:>12}", show(cold));
    println!("    plugin load, warm cache (deserialize) {:>12}", show(warm));
    println!("(e) {SCALING_CALLS} calls, serial                    {:>12}", show(serial));
    println!("    {SCALING_CALLS} calls, parallel (cap {cores})           {:>12}", show(parallel));
    for (cap, wait, cpu) in &sweep {
        println!(
            "(g) cap {cap:>2}: {WAITING_CALLS} calls waiting {WAIT_MS} ms {:>10}; {SCALING_CALLS} CPU-bound calls {:>10}",
            show(*wait),
            show(*cpu)
        );
    }
    println!("(f) 10 calls on the bare executor          {:>12}", show(bare));
    println!("    10 calls through the turn pipeline     {:>12}", show(piped));
    println!("(h) the `toolhost new` sample in each language (one tool counting the words of `text`), ratios to Rust's:");
    println!("    (fresh call: made on its path, as (a); made ahead: waited for, as (i), and its ratio to the fresh call)");
    println!("    language   size        load cold          load warm          fresh call          made ahead          fuel");
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    if let Some(&(_, _, rust_cold, rust_warm, rust_call, _, _)) = languages.first().filter(|l| l.0 == "rust") {
        for (label, size, cold, warm, call, waited, fuel) in &languages {
            println!(
                "    {label:<9} {:>6} KiB {:>9} {:>6.1}x {:>9} {:>6.1}x {:>9} {:>6.1}x {:>9} {:>6.2}x {fuel:>9}",
                size >> 10,
                show(*cold),
                ratio(*cold, rust_cold),
                show(*warm),
                ratio(*warm, rust_warm),
                show(*call),
                ratio(*call, rust_call),
                show(*waited),
                ratio(*waited, *call),
            );
        }
    }
    println!();
    let check = |ok: bool| if ok { "meets target" } else { "MISSES target" };
    println!("(a)              {:>10}   target <= 15 µs: {}", show(fresh), check(fresh <= Duration::from_micros(15)));
    let fresh_over_floor = ratio(fresh, reused);
    println!("(a)/(b)          {:>10.1}x  target <= 2.5: {}", fresh_over_floor, check(fresh_over_floor <= 2.5));
    let per_process = ratio(process, fresh);
    println!("(c)/(a)          {:>10.1}x  target >= 20: {}", per_process, check(per_process >= 20.0));
    let cache_gain = ratio(cold, warm);
    let latency_over_floor = ratio(latency_ahead, reused);
    println!("(i)/(b)          {:>10.1}x  target <= 1.5: {}", latency_over_floor, check(latency_over_floor <= 1.5));
    // What the fresh instance and the host's path around it cost a caller
    // beyond the floor's instance called alike; no target of its own.
    let latency_over_paced_floor = ratio(latency_ahead, reused_paced);
    println!("(i)/(b')         {:>10.1}x  (both after the same idling)", latency_over_paced_floor);
    let throughput_gain = per_second_ahead / per_second_today;
    println!("(j) ahead/today  {:>10.2}x  target >= 1.0: {}", throughput_gain, check(throughput_gain >= 1.0));
    summarize("fresh_latency_over_floor", latency_over_floor);
    summarize("fresh_throughput_over_today", throughput_gain);
    summarize("fresh_latency_over_paced_floor", latency_over_paced_floor);
    summarize("fresh_over_floor", fresh_over_floor);
    summarize("cold_over_warm", cache_gain);
    println!("cold/warm        {:>10.1}x  target >= 150: {}", cache_gain, check(cache_gain >= 150.0));
    let scaling = ratio(serial, parallel);
    println!("(e) serial/parallel {:>7.2}x  target >= 1.8 on 2 cores: {}", scaling, check(scaling >= 1.8));
    let overhead = ratio(piped, bare);
    println!("(f) pipeline/bare   {:>7.2}x  target <= 1.2: {}", overhead, check(overhead <= 1.2));
    Ok(())
}

/// The median time of `n` calls of `call`, each on a fresh instance,
/// after a warm-up, and the fuel the last one used.
async fn fresh_call(executor: &Executor, call: &ToolCall, n: usize) -> (Duration, u64) {
    for _ in 0..n / 20 + 1 {
        executor.call(call).await; // warm-up
    }
    let mut samples = Vec::with_capacity(n);
    let mut fuel = 0;
    for _ in 0..n {
        let start = Instant::now();
        let outcome = executor.call(call).await;
        samples.push(start.elapsed());
        assert_eq!(outcome.status, Status::Success, "{}", outcome.output);
        fuel = outcome.fuel_used;
    }
    (median(samples), fuel)
}

/// The median time a caller waits for one call of `call` on an idle host:
/// before each, whatever the last one left to do (dropping its instance,
/// making the next ahead) is given the time to finish, as between a
/// model's calls (the thread stays busy meanwhile, so that waking it is
/// not what is measured).
async fn idle_latency(registry: &Arc<Registry>, call: &ToolCall, n: usize) -> Duration {
    let executor = Executor::new(registry.clone());
    let mut samples = Vec::with_capacity(n);
    for i in 0..n + n / 20 {
        let idle = Instant::now() + Duration::from_micros(IDLE_MICROS);
        while Instant::now() < idle {
            tokio::task::yield_now().await;
        }
        let start = Instant::now();
        let outcome = executor.call(call).await;
        let took = start.elapsed();
        assert_eq!(outcome.status, Status::Success, "{}", outcome.output);
        if i >= n / 20 {
            samples.push(took); // after a warm-up
        }
    }
    median(samples)
}

/// Calls of `calls` per second, all at once on every core.
async fn throughput(registry: &Arc<Registry>, calls: &[ToolCall]) -> f64 {
    let executor = Executor::new(registry.clone());
    let mut options = RunOptions::default();
    options.parallel = true;
    let start = Instant::now();
    let outcomes = executor.run_all(calls, &options).await;
    let took = start.elapsed();
    assert!(outcomes.iter().all(|o| o.status == Status::Success), "{:?}", outcomes[0]);
    calls.len() as f64 / took.as_secs_f64()
}

/// A policy with no plugins, the compiled cache in `cache`, making no
/// instance ahead.
fn policy_with_cache(cache: &Path) -> Policy {
    let mut policy = Policy::default();
    // Every instance made on its call's path, as (a) has always measured;
    // (i) and (j) set the sandbox they compare.
    policy.sandbox = SandboxSize::for_machine().with_instances_ahead(0);
    policy.cache_dir = Some(cache.to_owned());
    policy.lock_file = cache.join("none.lock");
    policy
}

/// The median time to load `file` (read, digest, compile or cached
/// artifact, link, manifest, validation) with a cold cache over `cold`
/// loads, and with a warm one over `warm`.
fn load_times(runtime: &tokio::runtime::Runtime, file: &Path, cold: usize, warm: usize) -> anyhow::Result<(Duration, Duration)> {
    let mut cold_samples = Vec::with_capacity(cold);
    for _ in 0..cold {
        let cache = tempfile::tempdir()?;
        let loader = runtime.block_on(Registry::load(policy_with_cache(cache.path())))?;
        let start = Instant::now();
        let plugin = runtime.block_on(loader.inspect(file))?;
        cold_samples.push(start.elapsed());
        assert_eq!(plugin.cache, toolhost::registry::CacheUse::Compiled);
    }
    let cache = tempfile::tempdir()?;
    let loader = runtime.block_on(Registry::load(policy_with_cache(cache.path())))?;
    runtime.block_on(loader.inspect(file))?;
    let mut warm_samples = Vec::with_capacity(warm);
    for _ in 0..warm {
        let start = Instant::now();
        let plugin = runtime.block_on(loader.inspect(file))?;
        warm_samples.push(start.elapsed());
        assert_eq!(plugin.cache, toolhost::registry::CacheUse::Hit);
    }
    Ok((median(cold_samples), median(warm_samples)))
}
