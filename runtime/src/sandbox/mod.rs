//! The sandbox: one wasmtime [`Engine`] configured for untrusted code
//! (pooling allocator, fuel, epoch interruption), linkers that offer WASI
//! and, where granted, `wasi:http` ([`Grants`]), and the runner that
//! executes every call in a fresh store and instance under [`Limits`],
//! counting the host memory and host work it causes.

mod ahead;
mod bindings;

use bindings::ReadyPlugin;
mod call;
mod call_state;
mod capability;
mod capture;
mod descriptors;
mod filesystem;
mod host_account;
mod host_memory;
mod host_work;
mod limits;
mod linking;
mod open_files;
mod plugin_log;
mod pool_share;
mod section;
mod size;
mod wasi_errno;
mod wasi_versions;
mod wasmtime_words;

pub use crate::failure::{CallFailure, GrantKind, Invocation, ToolFailure, ToolFailureKind, ToolOutput};
pub use ahead::InstancesAhead;
pub(crate) use bindings::GuestManifest;
pub(crate) use call::{Export, Returned};
pub(crate) use capability::DirSection;
pub use capability::{Allowance, AllowedDirs, AskedFor, DirGrant, EnvGrant, Grants, Unasked, Withheld};
pub use descriptors::{open_file_limit, raise_open_file_limit};
pub use host_memory::{HostMemoryAllocator, accounting_active};
pub use host_work::{FUEL_PER_HOST_BYTE, HOST_CALL_FUEL};
pub use limits::{
    DEFAULT_FUEL, DEFAULT_HOST_MEMORY_BYTES, DEFAULT_HTTP_REQUESTS, DEFAULT_INSTANCES, DEFAULT_MEMORIES, DEFAULT_MEMORY_BYTES,
    DEFAULT_OPEN_FILES, DEFAULT_OUTPUT_BYTES, DEFAULT_RESOURCES, DEFAULT_TABLE_ELEMENTS, DEFAULT_TABLES, DEFAULT_TIMEOUT, Limits,
    MAX_INSTANCES, MAX_MEMORY_BYTES, MAX_TABLE_ELEMENTS, MAX_TABLES,
};
pub use plugin_log::{LOG_BYTES_PER_CALL, LOG_RECORD_COST, LOG_RECORDS_PER_CALL};
#[doc(hidden)]
pub use section::{LimitOverrides, MAX_TIMEOUT_MS, SandboxSection};
pub use size::{
    ADDRESS_BUDGET_PERCENT, CALLS_PER_CORE, DEFAULT_ADDRESS_BUDGET, MAX_AHEAD, MAX_CONCURRENT_CALLS, MAX_MEMORIES_PER_CALL,
    MAX_SHARDS, MEMORIES_PER_CALL, MEMORY_GUARD, MEMORY_RESERVATION, SandboxSize, TABLES_PER_CALL, address_space_limit,
};
pub(crate) use wasi_errno::explain as explain_guest_error;

use crate::contract::Contract;
use crate::error_chain::{caught, error_chain};
use ahead::{AheadCounts, AheadSlots};
use pool_share::{Needs, PoolShares, Share};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, SemaphorePermit};
use tokio_util::sync::CancellationToken;
use wasmtime::component::Component;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// How often the epoch advances; a deadline is enforced to within one tick.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);
/// The WebAssembly stack a call may use; deeper recursion traps.
pub const STACK_LIMIT_BYTES: usize = 512 << 10;
/// Fuel burned between yields to the async runtime, so that busy guests
/// share the executor's threads.
pub(crate) const FUEL_YIELD_INTERVAL: u64 = 10_000_000;
/// Memory and table bytes per pool slot that stay resident between calls
/// and are reset in place (only the dirty pages, where the kernel has
/// PAGEMAP_SCAN, Linux 6.7+) instead of with `madvise`. `madvise` on every
/// call costs page faults and cross-core TLB shootdowns; measured on a
/// 2-core machine, a fresh-instance call took 31 µs without this and
/// 9.7 µs with it (2 MiB: 10.5 µs). Untouched pages are never resident.
const KEEP_RESIDENT_BYTES: usize = 8 << 20;

/// An error setting up the engine; wasmtime's error is its source.
#[derive(Debug, thiserror::Error)]
#[error("could not set up the WebAssembly engine")]
pub struct SandboxError(#[source] Box<dyn std::error::Error + Send + Sync>);

/// The engines, their linkers and the epoch ticker shared by every call.
///
/// Calls run in one of several identical engines ("shards"), as many as
/// the machine has cores up to [`MAX_SHARDS`]: instantiating takes locks
/// and reference counts inside an engine (its instance pool, its type
/// registry), so two cores instantiating in one engine slow each other
/// down. Measured on 2 cores, 20 000 trivial calls ran 1.3× faster than
/// serially on two workers sharing one engine and 1.8× faster on two
/// engines. A plugin is compiled once and its code loaded into each.
///
/// What it reserves is its [`SandboxSize`]; one sandbox can back many
/// registries (`Registry::with_sandbox`), which then share its pool and
/// its limit on calls at once.
pub struct Sandbox {
    shards: Vec<Arc<Shard>>,
    ticker: EpochTicker,
    size: SandboxSize,
    /// One permit per call that may run at once: a call past the pool's
    /// size waits for one instead of failing to instantiate.
    slots: Arc<Semaphore>,
    /// One permit per instance that may be kept ready (see `ahead`).
    ahead_kept: Arc<Semaphore>,
    ahead_counts: AheadCounts,
    /// Calls running now (see [`Sandbox::running`]).
    running: AtomicUsize,
    /// Calls started since the sandbox began.
    started: AtomicU64,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox").field("size", &self.size).finish_non_exhaustive()
    }
}

/// One engine, what links plugins for it, and its pool's memories and
/// tables as calls take them (`None` without a pool).
struct Shard {
    engine: Engine,
    linkers: linking::Linkers,
    pool: Option<PoolShares>,
}

/// A plugin linked for its grants, so that each call only instantiates:
/// in the first shard when it is loaded, and in each other shard when the
/// first call lands there (see [`Sandbox::ready_in`]).
pub(crate) struct Prepared {
    first: ReadyPlugin,
    replicas: Replicas,
    /// What each instance creates, where that is known before it is made.
    needs: Option<Needs>,
    /// Its instances kept ready for calls, one per engine at most.
    ahead: Arc<AheadSlots>,
}

/// A plugin's links in the shards after the first, each made when the
/// first call lands in its shard: `None` if that failed, and then the
/// shard's calls of this plugin run in the first.
struct Replicas {
    linked: Vec<tokio::sync::OnceCell<Option<ReadyPlugin>>>,
    source: Arc<ReplicaSource>,
}

/// What a plugin's replicas are made from.
struct ReplicaSource {
    /// The plugin as compiled for the first shard.
    component: Component,
    contract: Contract,
    grants: Grants,
    /// Its code, serialized for the first replica and kept for the others
    /// until the last is made.
    code: std::sync::Mutex<Option<Arc<Vec<u8>>>>,
}

impl Replicas {
    fn all_linked(&self) -> bool {
        self.linked.iter().all(tokio::sync::OnceCell::initialized)
    }
}

impl Sandbox {
    /// A sandbox sized for this machine ([`SandboxSize::for_machine`]).
    ///
    /// # Errors
    ///
    /// As [`Sandbox::with_size`].
    pub fn new() -> Result<Self, SandboxError> {
        Self::with_size(SandboxSize::for_machine())
    }

    /// An engine per [`SandboxSize::engines`] with fuel, epoch
    /// interruption and the instance allocation `size` asks for, and
    /// linkers that offer WASI p2 without sockets, `wasi:http` where
    /// granted, and the `host` interface. Nothing is granted until a
    /// plugin's [`Grants`] say so.
    ///
    /// When the pool's address space cannot be reserved (an address-space
    /// limit, `vm.overcommit_memory = 2`), the pool is halved until it
    /// can, and at one call instances are reserved one by one; a warning
    /// says so once. The size in use is logged at info level and is
    /// [`Sandbox::size`].
    ///
    /// # Errors
    ///
    /// A [`SandboxError`] when the engines cannot be set up even without a
    /// pool (tried after the pool is halved down to one call, or at once
    /// for a size that asks for none).
    pub fn with_size(size: SandboxSize) -> Result<Self, SandboxError> {
        // Its fields are public: a count set past its bound is brought back.
        let size = size.with_instances_ahead(size.ahead);
        let mut tried = size;
        let shards = loop {
            match Self::shards(&tried) {
                Ok(shards) => break shards,
                Err(error) if tried.pooled => {
                    let smaller = tried.halved().unwrap_or(SandboxSize { pooled: false, ..tried });
                    tracing::debug!("could not reserve the pool for {tried}: {}; trying {smaller}", error_chain(&*error));
                    tried = smaller;
                }
                Err(error) => return Err(SandboxError(error.into())),
            }
        };
        if tried != size {
            tracing::warn!("the sandbox could not reserve the address space for {size}; it runs {tried} instead");
        }
        tracing::info!("sandbox: {tried}");
        descriptors::share_for_plugins();
        warn_once_if_uncounted();
        let ticker = EpochTicker::start(shards.iter().map(|s| s.engine.clone()).collect());
        Ok(Sandbox {
            shards,
            ticker,
            slots: Arc::new(Semaphore::new(tried.calls as usize)),
            ahead_kept: Arc::new(Semaphore::new(tried.ahead as usize)),
            ahead_counts: AheadCounts::default(),
            running: AtomicUsize::new(0),
            started: AtomicU64::new(0),
            size: tried,
        })
    }

    /// The engines and linkers for `size`.
    fn shards(size: &SandboxSize) -> wasmtime::Result<Vec<Arc<Shard>>> {
        let mut config = Config::new();
        config
            .consume_fuel(true)
            .epoch_interruption(true)
            .max_wasm_stack(STACK_LIMIT_BYTES)
            // `.eh_frame` serves only outside unwinders (a debugger, perf)
            // through guest frames: wasmtime's traps, backtraces and host
            // panics do without. Without it a warm load registers no
            // unwind tables and reads a smaller artifact (4-5% faster).
            .native_unwind_info(false)
            // The address map serves only wasm offsets in backtraces, which
            // no failure reports (a trap is reported by its kind). Without
            // it the artifact is a tenth smaller and a warm load 3-6%
            // quicker.
            .generate_address_map(false)
            .memory_reservation(MEMORY_RESERVATION)
            .memory_guard_size(MEMORY_GUARD);
        if size.pooled {
            let mut pool = PoolingAllocationConfig::new();
            // Core instances are only counted, so there are enough for
            // every call and instance kept ready at the instances limit;
            // memories and tables are reserved, and each instance takes
            // them as a share (`pool_share`). A store keeps the last fiber
            // stack it ran on until it is dropped, so an instance kept
            // ready holds one too.
            let instances = size.instances_per_engine();
            pool.total_component_instances(instances)
                .total_core_instances(instances.saturating_mul(MAX_INSTANCES as u32))
                .total_memories(size.memories_per_engine())
                .total_tables(size.tables_per_engine())
                .total_stacks(instances)
                .max_memory_size(MAX_MEMORY_BYTES)
                .table_elements(MAX_TABLE_ELEMENTS)
                .max_core_instances_per_component(MAX_INSTANCES as u32)
                .max_memories_per_component(MAX_MEMORIES_PER_CALL)
                .max_memories_per_module(MAX_MEMORIES_PER_CALL)
                .max_tables_per_component(MAX_TABLES as u32)
                .max_tables_per_module(MAX_TABLES as u32)
                .pagemap_scan(wasmtime::Enabled::Auto)
                .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
                .table_keep_resident(KEEP_RESIDENT_BYTES);
            config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        } else {
            config.allocation_strategy(InstanceAllocationStrategy::OnDemand);
        }
        (0..size.engines)
            .map(|_| {
                let engine = Engine::new(&config)?;
                let linkers = linking::Linkers::new(&engine)?;
                let pool =
                    size.pooled.then(|| PoolShares::new(size.memories_per_engine() as usize, size.tables_per_engine() as usize));
                Ok(Arc::new(Shard { engine, linkers, pool }))
            })
            .collect()
    }

    /// What the sandbox reserved: calls at once, engines, pool or not.
    pub fn size(&self) -> SandboxSize {
        self.size
    }

    /// Wait for a call slot, or `None` when `cancel` fires first; the
    /// epoch ticks while any slot is held.
    pub(crate) async fn call_slot(&self, cancel: &CancellationToken) -> Option<CallSlot> {
        let permit = owned_permits_unless_cancelled(&self.slots, 1, cancel).await?;
        Some(CallSlot { _permit: permit, _ticking: self.ticker.enter() })
    }

    /// A call running, counted until dropped (a finished call whose
    /// instance is still being returned to the pool does not count).
    pub(crate) fn running(&self) -> Running<'_> {
        self.running.fetch_add(1, Ordering::AcqRel);
        let started = self.started.fetch_add(1, Ordering::AcqRel) + 1;
        Running { sandbox: self, started }
    }

    /// Whether any call is running now.
    pub(crate) fn calls_running(&self) -> bool {
        self.running.load(Ordering::Acquire) > 0
    }

    /// A call slot if one is free now.
    pub(crate) fn call_slot_now(&self) -> Option<CallSlot> {
        let permit = self.slots.clone().try_acquire_owned().ok()?;
        Some(CallSlot { _permit: permit, _ticking: self.ticker.enter() })
    }

    /// What a call of `prepared` under `limits` takes from shard `shard`'s
    /// pool, once it is free (see `pool_share`); `None` without a pool.
    ///
    /// # Errors
    ///
    /// The count limit the component breaks, before anything is made or
    /// waited for; [`CallFailure::Cancelled`] when `cancel` fires first.
    pub(crate) async fn pool_share(
        &self,
        prepared: &Prepared,
        shard: usize,
        limits: &Limits,
        cancel: &CancellationToken,
    ) -> Result<Option<Share>, CallFailure> {
        if let Some(refused) = prepared.needs.and_then(|needs| needs.refused_by(limits)) {
            return Err(refused);
        }
        let Some(pool) = &self.shards[shard].pool else { return Ok(None) };
        pool.take(Needs::weighed(prepared.needs, limits), cancel).await.map(Some).ok_or(CallFailure::Cancelled)
    }

    /// The engine plugins are compiled for (the first shard's; the others
    /// load the same code).
    pub fn engine(&self) -> &Engine {
        &self.shards[0].engine
    }

    fn engine_of(&self, shard: usize) -> &Engine {
        &self.shards[shard].engine
    }

    /// Link `component` for `grants` in the first shard. The other shards
    /// load its code and link it only when a call lands there: a warm load
    /// used to spend a fifth of its time deserializing into a second
    /// engine a plugin that a one-shot command, or an idle registry, never
    /// runs there (issue 17).
    pub(crate) fn prepare(&self, component: &Component, contract: Contract, grants: &Grants) -> wasmtime::Result<Prepared> {
        let first = self.shards[0].link(component, contract, grants)?;
        let source = ReplicaSource { component: component.clone(), contract, grants: grants.clone(), code: Default::default() };
        let linked = (1..self.shards.len()).map(|_| tokio::sync::OnceCell::new()).collect();
        let ahead = Arc::new(AheadSlots::new(self.shards.len()));
        Ok(Prepared { first, replicas: Replicas { linked, source: Arc::new(source) }, needs: Needs::of(component), ahead })
    }

    /// `prepared` as linked in shard `shard` (wrapping around), and that
    /// shard's index. The first call to land in a shard the plugin is not
    /// linked in yet loads and links it there, on a blocking thread, and
    /// calls landing there meanwhile wait for it: about a millisecond for
    /// a small plugin, once per plugin and shard, after which every shard
    /// holds the plugin ready, as when plugins were loaded into every
    /// engine at once. A shard where that failed (logged once) runs its
    /// calls of the plugin in the first.
    pub(crate) async fn ready_in<'p>(&self, prepared: &'p Prepared, shard: usize) -> (usize, &'p ReadyPlugin) {
        let index = shard % self.shards.len();
        let Some(replica) = index.checked_sub(1) else { return (0, &prepared.first) };
        let replicas = &prepared.replicas;
        let linked = replicas.linked[replica]
            .get_or_init(|| async {
                let (shard, source) = (self.shards[index].clone(), replicas.source.clone());
                let loaded = tokio::task::spawn_blocking(move || caught(|| shard.load(&source))).await;
                let why = match loaded {
                    Ok(Ok(Ok(linked))) => return Some(linked),
                    Ok(Ok(Err(error))) => format!("{error:#}"),
                    Ok(Err(panic)) => format!("panicked: {panic}"),
                    Err(error) => format!("did not finish: {error}"),
                };
                tracing::warn!("could not load a plugin into engine {index}; its calls there run in the first: {why}");
                None
            })
            .await;
        if replicas.all_linked() {
            replicas.source.code.lock().expect("replica code lock").take();
        }
        match linked {
            Some(linked) => (index, linked),
            None => (0, &prepared.first),
        }
    }

    /// `prepared` loaded into every engine now, its memory images made,
    /// rather than when a call first lands in an engine; an engine where
    /// that fails runs its calls as before (see [`Sandbox::ready_in`]).
    pub(crate) async fn ready_everywhere(&self, prepared: &Prepared, plugin: &str) {
        for shard in 0..self.shards.len() {
            let (_, ready) = self.ready_in(prepared, shard).await;
            if let Err(error) = ready.make_memory_images() {
                tracing::debug!("the memory images of {plugin} could not be made ahead: {error:#}");
            }
        }
    }
}

impl Shard {
    /// `component` linked for `grants` in this shard's engine.
    fn link(&self, component: &Component, contract: Contract, grants: &Grants) -> wasmtime::Result<ReadyPlugin> {
        ReadyPlugin::new(self.linkers.for_plugin(component, grants)?.instantiate_pre(component)?, contract)
    }

    /// `source`'s code loaded into this shard's engine and linked. The
    /// code is serialized again when first needed rather than kept from the
    /// load, which would hold a copy of every plugin's code (30 MiB for a
    /// Python one) that no call may ever need.
    #[allow(unsafe_code, reason = "loading compiled code into an engine is unsafe in wasmtime")]
    fn load(&self, source: &ReplicaSource) -> wasmtime::Result<ReadyPlugin> {
        let kept = source.code.lock().expect("replica code lock").clone();
        let code = match kept {
            Some(code) => code,
            None => {
                let code = Arc::new(source.component.serialize()?);
                *source.code.lock().expect("replica code lock") = Some(code.clone());
                code
            }
        };
        // SAFETY: `code` was serialized by this process, from a component
        // compiled or loaded by an engine of the same configuration.
        let component = unsafe { Component::deserialize(&self.engine, &*code) }?;
        self.link(&component, source.contract, &source.grants)
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.ticker.shared.stop.store(true, Ordering::Release);
        self.ticker.thread.unpark();
    }
}

/// A call counted as running while this lives.
pub(crate) struct Running<'s> {
    sandbox: &'s Sandbox,
    /// The sandbox's count of calls started, this one included.
    started: u64,
}

impl Running<'_> {
    /// The call ends alone: no other call started since it did, and none
    /// runs now. On a loaded host another call nearly always has.
    pub(crate) fn ends_alone(self) -> bool {
        let sandbox = self.sandbox;
        let started = self.started;
        drop(self);
        sandbox.started.load(Ordering::Acquire) == started && !sandbox.calls_running()
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.sandbox.running.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A call's place in the sandbox: a slot of the pool, and the epoch
/// ticking while it is held.
pub(crate) struct CallSlot {
    _permit: OwnedSemaphorePermit,
    _ticking: Ticking,
}

/// A permit of `slots`, or `None` when `cancel` fires first. A free permit
/// is taken without building the two futures of the wait: with the
/// executor's slot and the sandbox's, ~0.2 µs of a 13.7 µs fresh call
/// (issue 17).
pub(crate) async fn permit_unless_cancelled<'s>(slots: &'s Semaphore, cancel: &CancellationToken) -> Option<SemaphorePermit<'s>> {
    if cancel.is_cancelled() {
        return None;
    }
    match slots.try_acquire() {
        Ok(permit) => Some(permit),
        Err(_) => tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            permit = slots.acquire() => Some(permit.expect("a call-slot semaphore is never closed")),
        },
    }
}

/// `count` permits of `pool`, held by value (a permit that outlives the
/// call: a kept instance's, a store dropped after its call answered), or
/// `None` when `cancel` fires first; free permits are taken at once.
pub(crate) async fn owned_permits_unless_cancelled(
    pool: &Arc<Semaphore>,
    count: u32,
    cancel: &CancellationToken,
) -> Option<OwnedSemaphorePermit> {
    if cancel.is_cancelled() {
        return None;
    }
    match pool.clone().try_acquire_many_owned(count) {
        Ok(permit) => Some(permit),
        Err(_) => tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            permit = pool.clone().acquire_many_owned(count) => Some(permit.expect("the sandbox's semaphores are never closed")),
        },
    }
}

/// Says once per process that host memory is not counted.
fn warn_once_if_uncounted() {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !accounting_active() && !SAID.swap(true, Ordering::Relaxed) {
        tracing::info!(
            "host memory is not counted: the program did not install toolhost's allocator \
             (`toolhost::count_host_memory!()`); the host-memory limit and per-byte fuel for host work do not apply"
        );
    }
}

/// Ticks the ticker goes on making after the last call in flight ends,
/// before it sleeps: waking a sleeping thread is a system call on the
/// path of the call that wakes it (on a 2-core VM, about a quarter of a
/// context switch per MCP call when it slept between calls), and calls
/// tend to come in runs. 40 ticks are 200 ms, 200 wake-ups a second at
/// most, once calls stop.
const IDLE_TICKS_BEFORE_SLEEPING: u32 = 40;

/// Advances the engines' epoch every [`EPOCH_TICK`] on its own thread
/// while any call runs, so that deadlines fire even while every executor
/// thread runs guest code; once no call has been in flight for
/// [`IDLE_TICKS_BEFORE_SLEEPING`] ticks it sleeps until one starts.
struct EpochTicker {
    shared: Arc<TickerShared>,
    thread: std::thread::Thread,
}

struct TickerShared {
    stop: AtomicBool,
    in_flight: AtomicUsize,
}

/// A call in flight, for the ticker; counted out when dropped.
struct Ticking(Arc<TickerShared>);

impl Drop for Ticking {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

impl EpochTicker {
    fn start(engines: Vec<Engine>) -> Self {
        let shared = Arc::new(TickerShared { stop: AtomicBool::new(false), in_flight: AtomicUsize::new(0) });
        let state = shared.clone();
        let thread = std::thread::Builder::new()
            .name("toolhost-epoch".into())
            .spawn(move || {
                let mut idle_ticks = 0;
                while !state.stop.load(Ordering::Acquire) {
                    if state.in_flight.load(Ordering::Acquire) != 0 {
                        idle_ticks = 0;
                    } else if idle_ticks < IDLE_TICKS_BEFORE_SLEEPING {
                        idle_ticks += 1;
                    } else {
                        // `enter` unparks after counting a call, so a call
                        // that starts between the check and here is not
                        // missed: the token makes this park return.
                        std::thread::park();
                        idle_ticks = 0;
                        continue;
                    }
                    std::thread::sleep(EPOCH_TICK);
                    for engine in &engines {
                        engine.increment_epoch();
                    }
                }
            })
            .expect("spawning the epoch thread")
            .thread()
            .clone();
        EpochTicker { shared, thread }
    }

    /// Count a call in flight, waking the ticker for the first.
    fn enter(&self) -> Ticking {
        if self.shared.in_flight.fetch_add(1, Ordering::AcqRel) == 0 {
            self.thread.unpark();
        }
        Ticking(self.shared.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The ids of this process's threads named `toolhost-epoch`.
    fn epoch_threads() -> BTreeSet<String> {
        std::fs::read_dir("/proc/self/task")
            .expect("Linux /proc")
            .filter_map(|task| {
                let task = task.ok()?.file_name().into_string().ok()?;
                let name = std::fs::read_to_string(format!("/proc/self/task/{task}/comm")).ok()?;
                (name.trim() == "toolhost-epoch").then_some(task)
            })
            .collect()
    }

    /// How many times thread `tid` has gone to sleep and woken.
    fn wakeups(tid: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).expect("the thread's status");
        let field = status.lines().find_map(|l| l.strip_prefix("voluntary_ctxt_switches:")).expect("a switch count");
        field.trim().parse().expect("a number")
    }

    #[tokio::test]
    async fn the_epoch_thread_sleeps_while_no_call_runs() {
        let before = epoch_threads();
        let sandbox = Sandbox::with_size(SandboxSize::one_call()).unwrap();
        // A new thread names itself once it runs.
        let mut mine = Vec::new();
        for _ in 0..100 {
            mine = epoch_threads().difference(&before).cloned().collect();
            if !mine.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let [tid] = mine.as_slice() else { panic!("expected one new epoch thread, found {mine:?}") };
        // No call has run yet: past its idle ticks, it sleeps.
        std::thread::sleep(EPOCH_TICK * (IDLE_TICKS_BEFORE_SLEEPING + 4));
        let idle_start = wakeups(tid);
        std::thread::sleep(Duration::from_millis(200));
        let idle = wakeups(tid) - idle_start;
        assert!(idle <= 2, "woke {idle} times in 200 ms with no call in flight");

        let slot = sandbox.call_slot(&CancellationToken::new()).await.expect("a free slot");
        let busy_start = wakeups(tid);
        std::thread::sleep(Duration::from_millis(200));
        let busy = wakeups(tid) - busy_start;
        assert!(busy >= 10, "ticked only {busy} times in 200 ms with a call in flight (one tick is {EPOCH_TICK:?})");
        drop(slot);
        // Ticking on a while, so that a call soon after finds it awake,
        // then asleep again.
        let lingering_start = wakeups(tid);
        std::thread::sleep(EPOCH_TICK * (IDLE_TICKS_BEFORE_SLEEPING / 2));
        let lingering = wakeups(tid) - lingering_start;
        assert!(lingering >= 5, "ticked only {lingering} times just after the last call");
        std::thread::sleep(EPOCH_TICK * (IDLE_TICKS_BEFORE_SLEEPING / 2 + 4));
        let asleep_start = wakeups(tid);
        std::thread::sleep(Duration::from_millis(200));
        let asleep = wakeups(tid) - asleep_start;
        assert!(asleep <= 2, "woke {asleep} times in 200 ms after its idle ticks");
        drop(sandbox);
    }

    #[tokio::test]
    async fn a_call_past_the_sandboxs_size_waits_for_a_slot() {
        let sandbox = Sandbox::with_size(SandboxSize::on_demand(1)).unwrap();
        let held = sandbox.call_slot(&CancellationToken::new()).await.expect("a free slot");
        let cancel = CancellationToken::new();
        let waiting = sandbox.call_slot(&cancel);
        tokio::pin!(waiting);
        assert!(tokio::time::timeout(Duration::from_millis(50), &mut waiting).await.is_err(), "a second slot while one is held");
        cancel.cancel();
        assert!(waiting.await.is_none(), "a cancelled wait gives no slot");
        drop(held);
        assert!(sandbox.call_slot(&CancellationToken::new()).await.is_some());
    }

    #[tokio::test]
    async fn a_plugin_is_loaded_into_another_engine_when_a_call_first_lands_there() {
        let wasm = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/plugins/examples/calc.wasm");
        let sandbox = Arc::new(Sandbox::with_size(SandboxSize::pooled(2, 2)).unwrap());
        let component = Component::from_file(sandbox.engine(), wasm).expect("the example plugins are built (`cargo xtask test`)");
        let prepared = sandbox.prepare(&component, Contract::V0_1, &Grants::none()).unwrap();
        assert!(!prepared.replicas.linked[0].initialized(), "linked into the second engine at load");

        assert_eq!(sandbox.ready_in(&prepared, 1).await.0, 1, "the first call meant for the second shard runs there");
        assert!(prepared.replicas.all_linked());
        assert!(prepared.replicas.source.code.lock().unwrap().is_none(), "the code is kept after the last replica was made");
        assert_eq!(sandbox.ready_in(&prepared, 2).await.0, 0, "shards wrap around");

        let (returned, _, _) = sandbox
            .run(&prepared, 1, "calc", &Grants::none(), &Limits::for_manifest(), Export::Manifest, &CancellationToken::new())
            .await;
        match returned {
            Ok(Returned::Manifest(_)) => {}
            Ok(Returned::Invoke(_)) => panic!("the manifest export returned an invoke result"),
            Err(failure) => panic!("the call in the second engine failed: {failure}"),
        }
    }

    /// Set in the child process that runs under an address-space limit.
    const UNDER_LIMIT: &str = "TOOLHOST_TEST_UNDER_ADDRESS_LIMIT";

    #[test]
    fn a_pool_that_cannot_be_reserved_is_sized_down() {
        // The limit applies to the whole process, so the check runs in a
        // child: this test binary, running only the test below.
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "sandbox::tests::sized_down_under_an_address_space_limit", "--ignored", "--nocapture"])
            .env(UNDER_LIMIT, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{text}");
        assert!(text.contains("1 passed"), "the child ran the test: {text}");
    }

    #[test]
    #[ignore = "run by a_pool_that_cannot_be_reserved_is_sized_down, in a child process"]
    fn sized_down_under_an_address_space_limit() {
        if std::env::var_os(UNDER_LIMIT).is_none() {
            return;
        }
        let limit: u64 = 256 << 30;
        rustix::process::setrlimit(
            rustix::process::Resource::As,
            rustix::process::Rlimit { current: Some(limit), maximum: Some(limit) },
        )
        .unwrap();
        // Two pools of 128 slots of 4 GiB: 1 TiB, four times the limit.
        let asked = SandboxSize::pooled(64, 2);
        let sandbox = Sandbox::with_size(asked).expect("sized down rather than failing");
        let got = sandbox.size();
        assert!(got.calls < asked.calls, "{got}");
        assert!(got.reserved_bytes() < limit, "{got}");
        drop(sandbox);
        // What fits by default is within half the limit.
        let default = SandboxSize::for_machine();
        assert!(default.reserved_bytes() <= limit / 2, "{default}");
        drop(Sandbox::with_size(default).expect("the default fits"));
    }
}
