//! The sandbox: one wasmtime [`Engine`] configured for untrusted code
//! (pooling allocator, fuel, epoch interruption), linkers that offer WASI
//! and, where granted, `wasi:http` ([`Grants`]), and the runner that
//! executes every call in a fresh store and instance under [`Limits`],
//! counting the host memory and host work it causes.

mod bindings;

use bindings::PluginPre;
mod call;
mod capture;
mod descriptors;
mod filesystem;
mod grants;
mod host_memory;
mod host_work;
mod limits;
mod linking;
mod plugin_log;
mod wasi_errno;

pub use call::{CallFailure, GrantKind, Invocation, ToolFailure, ToolFailureKind, ToolOutput};
pub use plugin_log::{LOG_BYTES_PER_CALL, LOG_RECORD_COST, LOG_RECORDS_PER_CALL};
pub(crate) use call::{CallState, Export, Returned};
pub use grants::{Allowance, DirGrant, EnvGrant, Grants, Withheld};
pub(crate) use wasi_errno::explain as explain_guest_error;
pub use host_memory::{HostMemoryAllocator, accounting_active};
pub use host_work::{FUEL_PER_HOST_BYTE, HOST_CALL_FUEL};
pub use limits::{
    DEFAULT_FUEL, DEFAULT_HOST_MEMORY_BYTES, DEFAULT_HTTP_REQUESTS, DEFAULT_INSTANCES, DEFAULT_MEMORIES, DEFAULT_MEMORY_BYTES,
    DEFAULT_OPEN_FILES, DEFAULT_OUTPUT_BYTES, DEFAULT_RESOURCES, DEFAULT_TABLE_ELEMENTS, DEFAULT_TABLES,
    DEFAULT_TIMEOUT, Limits, MAX_MEMORY_BYTES, MAX_TABLE_ELEMENTS,
};

use crate::error_chain::error_chain;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
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
/// Calls that may run at once across the whole host; the pooling allocator
/// reserves slots for this many instances.
pub const MAX_CONCURRENT_CALLS: u32 = 1_000;

/// An error setting up the engine.
#[derive(Debug, thiserror::Error)]
#[error("could not set up the WebAssembly engine: {0}")]
pub struct SandboxError(String);

/// The most engines the sandbox runs side by side (see [`Sandbox`]).
pub const MAX_SHARDS: usize = 4;

/// The engines, their linkers and the epoch ticker shared by every call.
///
/// Calls run in one of several identical engines ("shards"), as many as
/// the machine has cores up to [`MAX_SHARDS`]: instantiating takes locks
/// and reference counts inside an engine (its instance pool, its type
/// registry), so two cores instantiating in one engine slow each other
/// down. Measured on 2 cores, 20 000 trivial calls ran 1.3× faster than
/// serially on two workers sharing one engine and 1.8× faster on two
/// engines. A plugin is compiled once and its code loaded into each.
pub struct Sandbox {
    shards: Vec<Shard>,
    ticker: EpochTicker,
}

/// One engine and what links plugins for it.
struct Shard {
    engine: Engine,
    linkers: linking::Linkers,
}

/// A plugin linked once in every shard, so that each call only
/// instantiates, in the shard it is given.
pub(crate) struct Prepared {
    pres: Vec<PluginPre<CallState>>,
}

impl Prepared {
    /// The plugin as linked in shard `shard` (wrapping around).
    pub(crate) fn in_shard(&self, shard: usize) -> (usize, &PluginPre<CallState>) {
        let index = shard % self.pres.len();
        (index, &self.pres[index])
    }
}

impl Sandbox {
    /// An engine with fuel, epoch interruption and the pooling allocator,
    /// and linkers that offer WASI p2 without sockets, `wasi:http` where
    /// granted, and the `host` interface. Nothing is granted until a
    /// plugin's [`Grants`] say so.
    pub fn new() -> Result<Self, SandboxError> {
        let error = |e: wasmtime::Error| SandboxError(error_chain(&*e));
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(MAX_CONCURRENT_CALLS)
            .total_core_instances(MAX_CONCURRENT_CALLS * 4)
            .total_memories(MAX_CONCURRENT_CALLS * 2)
            .total_tables(MAX_CONCURRENT_CALLS * 4)
            .total_stacks(MAX_CONCURRENT_CALLS)
            .max_memory_size(MAX_MEMORY_BYTES)
            .table_elements(MAX_TABLE_ELEMENTS)
            .max_core_instances_per_component(64)
            .max_memories_per_component(16)
            .max_tables_per_component(64)
            .pagemap_scan(wasmtime::Enabled::Auto)
            .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
            .table_keep_resident(KEEP_RESIDENT_BYTES);
        let mut config = Config::new();
        config
            .consume_fuel(true)
            .epoch_interruption(true)
            .max_wasm_stack(STACK_LIMIT_BYTES)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let count = std::thread::available_parallelism().map_or(1, usize::from).clamp(1, MAX_SHARDS);
        let shards = (0..count)
            .map(|_| {
                let engine = Engine::new(&config)?;
                let linkers = linking::Linkers::new(&engine)?;
                Ok(Shard { engine, linkers })
            })
            .collect::<wasmtime::Result<Vec<_>>>()
            .map_err(error)?;
        descriptors::init();
        if !accounting_active() {
            tracing::warn!(
                "host memory is not counted: the global allocator is not toolhost::HostMemoryAllocator \
                 (enable the `host-memory-accounting` feature or wrap your allocator); \
                 the host-memory limit and per-byte fuel for host work do not apply"
            );
        }
        let ticker = EpochTicker::start(shards.iter().map(|s| s.engine.clone()).collect());
        Ok(Sandbox { shards, ticker })
    }

    /// The engine plugins are compiled for (the first shard's; the others
    /// load the same code).
    pub fn engine(&self) -> &Engine {
        &self.shards[0].engine
    }

    fn engine_of(&self, shard: usize) -> &Engine {
        &self.shards[shard].engine
    }

    /// `component`, compiled for [`Sandbox::engine`], loaded into every
    /// shard: one component per shard, the given one first.
    #[allow(unsafe_code, reason = "loading compiled code into an engine is unsafe in wasmtime")]
    ///
    /// `code` is the component's serialized code when the caller has it (the
    /// compiled cache's authenticated artifact, or what it just serialized
    /// to store): serializing a large component again costs about as much as
    /// loading it (48 ms for the 30 MiB of a Python component).
    pub(crate) fn replicate(&self, component: &Component, code: Option<&[u8]>) -> wasmtime::Result<Vec<Component>> {
        let mut all = vec![component.clone()];
        if self.shards.len() > 1 {
            let serialized;
            let code = match code {
                Some(code) => code,
                None => {
                    serialized = component.serialize()?;
                    &serialized
                }
            };
            for shard in &self.shards[1..] {
                // SAFETY: `code` was serialized by an engine of the same
                // configuration, from `component`: just now, or read back
                // from a cache file whose HMAC, under this user's key,
                // proves that the cache wrote it so (see `registry::cache`).
                all.push(unsafe { Component::deserialize(&shard.engine, code) }?);
            }
        }
        Ok(all)
    }

    /// Link `components` (one per shard, from [`Sandbox::replicate`]) for
    /// `grants`, so that each call only instantiates.
    pub(crate) fn prepare(&self, components: &[Component], grants: &Grants) -> wasmtime::Result<Prepared> {
        let pres = self
            .shards
            .iter()
            .zip(components)
            .map(|(shard, component)| PluginPre::new(shard.linkers.for_plugin(component, grants)?.instantiate_pre(component)?))
            .collect::<wasmtime::Result<Vec<_>>>()?;
        Ok(Prepared { pres })
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.ticker.stop.store(true, Ordering::Relaxed);
    }
}

/// Advances the engines' epoch every [`EPOCH_TICK`] on its own thread, so
/// that deadlines fire even while every executor thread runs guest code.
struct EpochTicker {
    stop: Arc<AtomicBool>,
}

impl EpochTicker {
    fn start(engines: Vec<Engine>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::Builder::new()
            .name("toolhost-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    for engine in &engines {
                        engine.increment_epoch();
                    }
                }
            })
            .expect("spawning the epoch thread");
        EpochTicker { stop }
    }
}
