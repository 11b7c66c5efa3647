//! The executor runs calls: each in a fresh instance, at most
//! [`Executor::concurrency`] at once across everything that uses it, with
//! a timeout that can only shorten the plugin's own, serially or in
//! parallel, and cancellable. It runs [`CheckedCall`]s: each in the plugin
//! it was checked against, whatever the registry loaded since. A failure
//! of one call — a trap, a limit, a panic in the host while it runs —
//! becomes that call's outcome and never affects another, serially as in
//! parallel; a call cancelled before it starts is `cancelled` either way.
//!
//! The concurrency cap defaults to the machine's cores
//! ([`default_concurrency`]), measured on the 2-core development machine
//! (`cargo xtask bench`, (e) and (g)): 20 000 trivial, CPU-bound calls ran
//! 1.7–1.8× faster than one after another at a cap of 2, and slower at
//! caps of 4, 8 and 32 (instances interleaved beyond the cores only add
//! cache and scheduling cost). Calls that wait (HTTP, sleeps) hold their
//! slot while they wait: 64 calls waiting 20 ms each took 680 ms at a cap
//! of 2 and 46 ms at 32. A host whose tools mostly wait raises the cap
//! (`Executor::with_concurrency`), up to the calls its sandbox runs at
//! once ([`SandboxSize`](crate::sandbox::SandboxSize)).

use crate::call::ToolCall;
pub use crate::checked_call::CheckedCall;
use crate::outcome::{Status, ToolOutcome};
#[cfg(feature = "unchecked")]
use crate::registry::Catalog;
use crate::registry::{LoadedPlugin, Registry};
use crate::sandbox::{CallFailure, explain_guest_error, permit_unless_cancelled};
use futures::FutureExt;
use std::borrow::Cow;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{Semaphore, SemaphorePermit, mpsc};
use tokio_util::sync::CancellationToken;
#[cfg(feature = "unchecked")]
use toolhost_protocol::suggest::unknown_tool;

/// Calls a parallel worker takes at a time from the batch.
const CALLS_PER_TAKE: usize = 8;

/// How a batch of calls runs.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RunOptions {
    /// Run the calls at once (up to the executor's cap) rather than one
    /// after another.
    pub parallel: bool,
    /// A deadline per call, applied where it is shorter than the plugin's
    /// own (an agent's `timeout_ms`).
    pub timeout: Option<Duration>,
    /// Cancels the batch: running calls stop within one epoch tick, calls
    /// not yet started do not start, finished results are kept.
    pub cancel: CancellationToken,
    /// Where each call's outcome is sent as it finishes, with the call's
    /// index in the batch (for progress shown while the rest run).
    pub report: Option<mpsc::UnboundedSender<(usize, ToolOutcome)>>,
}

/// The default concurrency cap: the machine's cores (see the module docs
/// for why).
pub fn default_concurrency() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Runs tool calls.
#[derive(Clone)]
pub struct Executor {
    registry: Arc<Registry>,
    slots: Arc<Semaphore>,
    concurrency: usize,
    running: Arc<Running>,
    /// The engine shard a single call runs in while no other call runs
    /// (see `single_shard`).
    lone_shard: Arc<AtomicUsize>,
    /// The engine shard the next batch's first worker keeps to.
    next_shard: Arc<AtomicUsize>,
}

/// Where a call runs: its engine shard, and whether more calls of a
/// parallel batch follow it in its task, at once (the sandbox then does
/// the call's cleanup on its path rather than hand it to another task).
#[derive(Clone, Copy)]
struct Placement {
    shard: usize,
    in_batch: bool,
}

/// Calls running now, and the most that ever ran at once.
#[derive(Default)]
struct Running {
    now: AtomicUsize,
    peak: AtomicUsize,
}

impl Executor {
    /// An executor over `registry` with the [`default_concurrency`].
    pub fn new(registry: Arc<Registry>) -> Self {
        Self::with_concurrency(registry, default_concurrency())
    }

    /// An executor that runs at most `concurrency` calls at once, between 1
    /// and the calls its registry's sandbox runs at once
    /// ([`SandboxSize::calls`](crate::sandbox::SandboxSize::calls)): more would only wait.
    pub fn with_concurrency(registry: Arc<Registry>, concurrency: usize) -> Self {
        let concurrency = concurrency.clamp(1, registry.sandbox().size().calls as usize);
        Executor {
            registry,
            slots: Arc::new(Semaphore::new(concurrency)),
            concurrency,
            running: Arc::default(),
            lone_shard: Arc::default(),
            next_shard: Arc::default(),
        }
    }

    /// The registry calls run against.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The most calls it runs at once.
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// The most calls that have run at once so far.
    pub fn peak_concurrency(&self) -> usize {
        self.running.peak.load(Ordering::Relaxed)
    }

    /// Run one call with default options, by its tool's name, with no
    /// argument check and no approval: for tests and benchmarks only
    /// (feature `unchecked`). Programs run calls through the pipeline.
    #[cfg(feature = "unchecked")]
    pub async fn call(&self, call: &ToolCall) -> ToolOutcome {
        self.run(call, &RunOptions::default()).await
    }

    /// Run one call by its tool's name: looked up once in the current
    /// catalog, then run as [`run_checked`](Self::run_checked) runs it,
    /// with its arguments as they are. An unknown tool gives a not-found
    /// outcome that names the closest loaded tools. For tests and
    /// benchmarks only (feature `unchecked`).
    #[cfg(feature = "unchecked")]
    pub async fn run(&self, call: &ToolCall, options: &RunOptions) -> ToolOutcome {
        // The plugin is borrowed from the snapshot rather than bound into a
        // `CheckedCall`, whose copy of the call cost ~8 of a fresh call's
        // ~59 allocations and ~0.3 µs of its 13 µs (issue 17).
        let catalog = self.registry.catalog();
        match plugin_for(&catalog, call) {
            Ok(plugin) => self.run_bound(plugin, call, options).await,
            Err(answered) => answered,
        }
    }

    /// Run one checked call in the plugin it was checked against (taken
    /// from this executor's registry), whatever the registry has loaded
    /// since.
    pub async fn run_checked(&self, call: &CheckedCall, options: &RunOptions) -> ToolOutcome {
        self.run_bound(call.plugin(), call.call(), options).await
    }

    /// Run `call` in `plugin`, taking a slot first.
    async fn run_bound(&self, plugin: &LoadedPlugin, call: &ToolCall, options: &RunOptions) -> ToolOutcome {
        let Some(_slot) = self.take_slot(&options.cancel).await else { return cancelled(call) };
        let shard = self.single_shard();
        self.run_isolated(plugin, call, options, Placement { shard, in_batch: false }).await
    }

    /// Run `calls` by their tools' names, looked up in one catalog snapshot,
    /// as `options` say; outcomes keep the calls' order. For tests and
    /// benchmarks only (feature `unchecked`).
    #[cfg(feature = "unchecked")]
    #[expect(clippy::result_large_err, reason = "its closure returns `bind`'s result")]
    pub async fn run_all(&self, calls: &[ToolCall], options: &RunOptions) -> Vec<ToolOutcome> {
        let catalog = self.registry.catalog();
        let bound: Vec<Result<CheckedCall, ToolOutcome>> = calls.iter().map(|call| bind(&catalog, call)).collect();
        self.run_batch(Cow::Owned(bound), options).await
    }

    /// Run checked `calls` as `options` say; outcomes keep the calls' order.
    pub async fn run_all_checked(&self, calls: &[CheckedCall], options: &RunOptions) -> Vec<ToolOutcome> {
        self.run_batch(Cow::Borrowed(calls), options).await
    }

    /// The engine shard a single call holding its slot runs in. Alone (no
    /// other call running, in this executor or the sandbox), the last lone
    /// call's: an idle host's calls find that engine's code, pool slots and
    /// instance made ahead where the last call left them (taking turns,
    /// each call found the other engine's gone cold). Otherwise the next in
    /// turn, so that calls at once spread over the engines: a call counts
    /// itself from its slot on, so of calls started together at most one
    /// sees none other.
    fn single_shard(&self) -> usize {
        let others = self.running.now.load(Ordering::Acquire) > 1 || self.registry.sandbox().calls_running();
        if others {
            self.lone_shard.fetch_add(1, Ordering::Relaxed).wrapping_add(1)
        } else {
            self.lone_shard.load(Ordering::Relaxed)
        }
    }

    /// Wait for a slot (counted as running while held), or `None` when
    /// `cancel` fires first.
    async fn take_slot(&self, cancel: &CancellationToken) -> Option<(SemaphorePermit<'_>, RunningGuard)> {
        let slot = permit_unless_cancelled(&self.slots, cancel).await?;
        Some((slot, self.running.enter()))
    }

    /// [`run_in`](Self::run_in), where a panic in the host while the call
    /// runs becomes the call's error outcome rather than the caller's.
    async fn run_isolated(&self, plugin: &LoadedPlugin, call: &ToolCall, options: &RunOptions, placed: Placement) -> ToolOutcome {
        let running = AssertUnwindSafe(self.run_in(plugin, call, options, placed)).catch_unwind().await;
        running.unwrap_or_else(|panic| host_panicked(plugin, call, panic.as_ref()))
    }

    /// Run `call` in `plugin` where `placed` says, holding a slot.
    async fn run_in(&self, plugin: &LoadedPlugin, call: &ToolCall, options: &RunOptions, placed: Placement) -> ToolOutcome {
        if options.cancel.is_cancelled() {
            return cancelled(call);
        }
        let mut limits = plugin.limits;
        if let Some(timeout) = options.timeout {
            limits.timeout = limits.timeout.min(timeout);
        }
        // No `plugin` field: that field marks what a plugin itself logged.
        tracing::debug!("calling `{}` of plugin `{}` with {limits}", call.tool, plugin.name());
        let args_json = serde_json::to_string(&call.args).expect("a JSON map serializes");
        let (shard, in_batch) = (placed.shard, placed.in_batch);
        let mut invocation =
            self.registry.invoke(plugin, shard, &call.tool, &args_json, in_batch, &limits, &options.cancel).await;
        if let Err(CallFailure::Tool(failure)) = &mut invocation.result
            && let Some(explained) = explain_guest_error(&failure.message, plugin.name(), &plugin.grants)
        {
            failure.message = explained;
        }
        ToolOutcome::from_invocation(&call.id, &call.tool, invocation).of_plugin(plugin.name(), &plugin.manifest.version)
    }

    /// Run a batch as `options` say; outcomes keep the calls' order.
    async fn run_batch<Q: Queued>(&self, calls: Cow<'_, [Q]>, options: &RunOptions) -> Vec<ToolOutcome> {
        if !options.parallel {
            let mut outcomes = Vec::with_capacity(calls.len());
            for (index, queued) in calls.iter().enumerate() {
                let outcome = match queued.ready() {
                    Ok(call) => self.run_checked(call, options).await,
                    Err(answered) => answered.clone(),
                };
                report(options, index, &outcome);
                outcomes.push(outcome);
            }
            return outcomes;
        }
        // As many workers as may run at once, each holding one slot and
        // taking the next few calls until none are left: a task or a slot
        // per call would cost more than a trivial call, and shared counters
        // touched per call slow two cores down. Each worker keeps to one
        // engine shard, so workers on two cores do not contend inside one
        // engine. A panic while running one call becomes that call's
        // outcome; the worker goes on with the next.
        let calls: Arc<[Q]> = match calls {
            Cow::Borrowed(calls) => calls.into(),
            Cow::Owned(calls) => calls.into(),
        };
        let next = Arc::new(AtomicUsize::new(0));
        // Dropped before its workers finish (an embedder's timeout around
        // the turn, a dropped request), the batch stops them: no call of
        // it runs on, or starts, detached from whoever asked for it.
        let batch = options.cancel.child_token();
        let first_shard = self.next_shard.fetch_add(self.concurrency, Ordering::Relaxed);
        let worker_count = self.concurrency.min(calls.len());
        // Few calls for many workers are taken one at a time, so that every
        // worker gets some.
        let per_take = (calls.len() / (worker_count.max(1) * 8)).clamp(1, CALLS_PER_TAKE);
        let workers: Vec<_> = (0..worker_count)
            .map(|worker| {
                let (executor, calls, next) = (self.clone(), calls.clone(), next.clone());
                // A token of its own (cancelled with the batch's), so that
                // workers do not wait on one token's lock per call.
                let options = RunOptions { cancel: batch.child_token(), ..options.clone() };
                let shard = first_shard + worker;
                tokio::spawn(async move {
                    let mut done = Vec::new();
                    let Some(_slot) = executor.take_slot(&options.cancel).await else { return done };
                    loop {
                        let start = next.fetch_add(per_take, Ordering::Relaxed);
                        let Some(taken) = calls.get(start..(start + per_take).min(calls.len())) else { break done };
                        for (offset, queued) in taken.iter().enumerate() {
                            let outcome = match queued.ready() {
                                Ok(call) => {
                                    executor
                                        .run_isolated(call.plugin(), call.call(), &options, Placement { shard, in_batch: true })
                                        .await
                                }
                                Err(answered) => answered.clone(),
                            };
                            report(&options, start + offset, &outcome);
                            done.push((start + offset, outcome));
                        }
                        // Short calls never wait; yielding now and then lets
                        // the runtime move a worker that shares a thread
                        // with another to an idle one.
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        let mut workers = StopOnDrop { workers, _cancel: batch.drop_guard() };
        let mut outcomes: Vec<Option<ToolOutcome>> = vec![None; calls.len()];
        for worker in &mut workers.workers {
            if let Ok(done) = worker.await {
                for (index, outcome) in done {
                    outcomes[index] = Some(outcome);
                }
            }
        }
        // Calls no worker took never started: every worker was cancelled
        // before it had a slot. A call taken without an outcome was lost
        // with its worker's task.
        let taken = next.load(Ordering::Relaxed).min(calls.len());
        let outcomes = outcomes.into_iter().zip(calls.iter()).enumerate().map(|(index, (outcome, queued))| {
            outcome.unwrap_or_else(|| {
                let outcome = match queued.ready() {
                    Err(answered) => answered.clone(),
                    Ok(call) if index >= taken => cancelled(call.call()),
                    Ok(call) => task_failed(call.call()),
                };
                report(options, index, &outcome);
                outcome
            })
        });
        outcomes.collect()
    }
}

/// A batch's workers, cancelled and aborted if the batch is dropped before
/// they finish.
struct StopOnDrop<T> {
    workers: Vec<tokio::task::JoinHandle<T>>,
    _cancel: tokio_util::sync::DropGuard,
}

impl<T> Drop for StopOnDrop<T> {
    fn drop(&mut self) {
        for worker in &self.workers {
            worker.abort();
        }
    }
}

/// A call of a batch: checked and ready to run, or already answered (an
/// unknown tool, unusable arguments).
trait Queued: Clone + Send + Sync + 'static {
    fn ready(&self) -> Result<&CheckedCall, &ToolOutcome>;
}

impl Queued for CheckedCall {
    fn ready(&self) -> Result<&CheckedCall, &ToolOutcome> {
        Ok(self)
    }
}

#[cfg(feature = "unchecked")]
impl Queued for Result<CheckedCall, ToolOutcome> {
    fn ready(&self) -> Result<&CheckedCall, &ToolOutcome> {
        self.as_ref()
    }
}

/// `call` bound to its tool's plugin in `catalog`, or the outcome of a call
/// that cannot run: an unknown tool (naming the closest), arguments that
/// are not an object.
#[cfg(feature = "unchecked")]
#[expect(
    clippy::result_large_err,
    reason = "the outcome is what a call that cannot run ends as, made once, never propagated far"
)]
fn bind(catalog: &Catalog, call: &ToolCall) -> Result<CheckedCall, ToolOutcome> {
    plugin_for(catalog, call)?;
    Ok(CheckedCall::bind(call.clone(), catalog).expect("its tool is in the catalog"))
}

/// The plugin of `call`'s tool in `catalog`, or the outcome of a call that
/// cannot run, as [`bind`] says.
#[cfg(feature = "unchecked")]
#[expect(clippy::result_large_err, reason = "as in `bind`")]
fn plugin_for<'c>(catalog: &'c Catalog, call: &ToolCall) -> Result<&'c Arc<LoadedPlugin>, ToolOutcome> {
    let Some((plugin, _)) = catalog.tool(&call.tool) else {
        let names: Vec<&str> = catalog.tools().map(|(_, t)| t.name.as_str()).collect();
        return Err(ToolOutcome::without_running(&call.id, &call.tool, Status::NotFound, unknown_tool(&call.tool, &names)));
    };
    if let Some(why) = call.unusable_args() {
        return Err(ToolOutcome::without_running(&call.id, &call.tool, Status::InvalidArgs, format!("`{}`: {why}", call.tool)));
    }
    Ok(plugin)
}

/// Send `outcome` of call `index` where `options` say, if anywhere.
fn report(options: &RunOptions, index: usize, outcome: &ToolOutcome) {
    if let Some(report) = &options.report {
        // Nobody listening any more is not the call's concern.
        let _ = report.send((index, outcome.clone()));
    }
}

/// The outcome of a call during which the host panicked: the panic's text
/// goes to the log, not to the model.
fn host_panicked(plugin: &LoadedPlugin, call: &ToolCall, panic: &(dyn std::any::Any + Send)) -> ToolOutcome {
    let text = crate::error_chain::panic_message(panic);
    tracing::error!(
        "the host panicked while running `{}` of plugin `{}`: {}",
        call.tool,
        plugin.name(),
        text.unwrap_or("(no message)")
    );
    let message = "the host panicked while running this call (its log says why)".into();
    ToolOutcome::without_running(&call.id, &call.tool, Status::Error, message)
}

fn task_failed(call: &ToolCall) -> ToolOutcome {
    ToolOutcome::without_running(&call.id, &call.tool, Status::Error, "the host task running this call failed".into())
}

fn cancelled(call: &ToolCall) -> ToolOutcome {
    ToolOutcome::without_running(&call.id, &call.tool, Status::Cancelled, "cancelled before it started".into())
}

impl Running {
    /// Count a call as running until the guard drops.
    fn enter(self: &Arc<Self>) -> RunningGuard {
        let now = self.now.fetch_add(1, Ordering::AcqRel) + 1;
        self.peak.fetch_max(now, Ordering::AcqRel);
        RunningGuard(self.clone())
    }
}

struct RunningGuard(Arc<Running>);

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::AcqRel);
    }
}
