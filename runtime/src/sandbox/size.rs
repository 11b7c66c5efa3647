//! How much the sandbox reserves, and how that is decided.
//!
//! Every linear memory a call may create needs a slot of address space
//! reserved up front: [`MEMORY_RESERVATION`] plus a guard region, so that
//! compiled code can skip bounds checks (an out-of-bounds access lands in
//! unmapped pages and traps). A pool of such slots makes a fresh instance
//! per call cheap, but its reservation is large: 2 000 slots in each of two
//! engines was 17 TiB, more than a process under an address-space limit
//! (`ulimit -v`) may have, and an eighth of the whole user address space.
//!
//! So the pool is sized, not fixed: [`SandboxSize::for_machine`] takes the
//! cores and the address-space limit (`RLIMIT_AS`) and keeps the
//! reservation within half of that limit (or [`DEFAULT_ADDRESS_BUDGET`]
//! with no limit); `[sandbox]` in `toolhost.toml` sets it explicitly; a
//! command that runs one call ([`SandboxSize::one_call`]) reserves memory
//! per instance as it is created instead of a pool. When the kernel still
//! refuses the reservation, [`Sandbox::with_size`](super::Sandbox::with_size)
//! halves the pool until it fits, saying so once.

use super::MAX_TABLES;
use rustix::process::{Resource, getrlimit};
use serde::Serialize;

/// The address space reserved for each linear memory, guard excluded
/// (wasmtime's default on 64-bit hosts): 4 GiB covers every 32-bit
/// address, so compiled code needs no bounds checks.
pub const MEMORY_RESERVATION: u64 = 4 << 30;
/// The guard region after each linear memory (wasmtime's default).
pub const MEMORY_GUARD: u64 = 32 << 20;
/// Linear memories reserved per call in the pool, on average (a Rust or C
/// component has one; a component may have up to [`MAX_MEMORIES_PER_CALL`]
/// while others have fewer).
pub const MEMORIES_PER_CALL: u32 = 2;
/// Tables reserved per call in the pool, on average (a Rust component has
/// two; one may have up to [`MAX_TABLES`]).
pub const TABLES_PER_CALL: u32 = 4;
/// The most linear memories one component instance may have in the pool.
pub const MAX_MEMORIES_PER_CALL: u32 = 16;
/// Calls at once per core in the default pool: calls that wait (HTTP,
/// sleeps) hold a slot while they wait, so a pool a little deeper than
/// the cores keeps waiting calls from queueing.
pub const CALLS_PER_CORE: u32 = 32;
/// The most calls at once any sandbox allows.
pub const MAX_CONCURRENT_CALLS: u32 = 1_000;
/// The most engines the sandbox runs side by side (see
/// [`Sandbox`](super::Sandbox)).
pub const MAX_SHARDS: usize = 4;
/// The address space the default pool may reserve when the process has no
/// address-space limit: 1 TiB, a 128th of the user address space of a
/// 64-bit Linux process.
pub const DEFAULT_ADDRESS_BUDGET: u64 = 1 << 40;
/// The most instances a sandbox may be told to keep ready.
pub const MAX_AHEAD: u32 = 64;
/// The share of an address-space limit (`RLIMIT_AS`) the default pool may
/// reserve, in percent; the rest is the process's own (heap, stacks,
/// compiled code, the embedder's).
pub const ADDRESS_BUDGET_PERCENT: u64 = 50;

/// How the sandbox allocates instances: how many calls may run at once,
/// in how many engines, and what that reserves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SandboxSize {
    /// Calls that may run at once across the sandbox; more wait for a
    /// slot. In the pool, every engine reserves this many.
    pub calls: u32,
    /// Engines side by side, each with its own pool (see
    /// [`Sandbox`](super::Sandbox)); at least 1, at most [`MAX_SHARDS`].
    pub engines: usize,
    /// Whether instances come from a pool reserved up front (fast fresh
    /// instances) or are reserved one by one as they are made (a command
    /// that runs one call).
    pub pooled: bool,
    /// Fresh instances kept ready ahead of their calls, in all: made off
    /// the call's path while the host is otherwise idle, each used by one
    /// call only, at most one per plugin and engine. Each holds its
    /// memories (in the pool, slots reserved beside the calls') while it
    /// waits. 0, the default, makes every instance on its call's path
    /// ([`SandboxSize::with_instances_ahead`]).
    pub ahead: u32,
}

impl SandboxSize {
    /// The default for this machine: an engine per core (up to
    /// [`MAX_SHARDS`]) and [`CALLS_PER_CORE`] calls per core, cut to what
    /// fits half the address-space limit (or [`DEFAULT_ADDRESS_BUDGET`]).
    /// Fewer calls than engines are served by one engine; when not even
    /// one call's pool fits, instances are reserved one by one.
    pub fn for_machine() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Self::fitting(cores, address_space_limit())
    }

    /// One call at a time in one engine, reserving memory per instance as
    /// it is made: what a command that runs one call needs.
    pub fn one_call() -> Self {
        Self::on_demand(1)
    }

    /// `calls` calls at once in one engine, reserving memory per instance
    /// as it is made (slower to instantiate than a pool, but nothing is
    /// reserved before it is used).
    pub fn on_demand(calls: u32) -> Self {
        SandboxSize { calls: calls.clamp(1, MAX_CONCURRENT_CALLS), engines: 1, pooled: false, ahead: 0 }
    }

    /// A pool of `calls` calls at once in `engines` engines (each clamped
    /// to its range).
    pub fn pooled(calls: u32, engines: usize) -> Self {
        SandboxSize { calls: calls.clamp(1, MAX_CONCURRENT_CALLS), engines: engines.clamp(1, MAX_SHARDS), pooled: true, ahead: 0 }
    }

    /// The same, keeping `ahead` fresh instances ready (at most
    /// [`MAX_AHEAD`]; 0 turns it off).
    pub fn with_instances_ahead(self, ahead: u32) -> Self {
        SandboxSize { ahead: ahead.min(MAX_AHEAD), ..self }
    }

    /// The default for `cores` cores under an address-space limit of
    /// `limit` bytes (`None`: unlimited).
    fn fitting(cores: usize, limit: Option<u64>) -> Self {
        let budget = limit.map_or(DEFAULT_ADDRESS_BUDGET, |limit| limit / 100 * ADDRESS_BUDGET_PERCENT);
        let wanted = u32::try_from(cores).unwrap_or(u32::MAX).saturating_mul(CALLS_PER_CORE);
        let engines = cores.clamp(1, MAX_SHARDS);
        // The most calls whose memories fit the budget in `engines` pools,
        // each holding at least MAX_MEMORIES_PER_CALL.
        let fitting_calls = |engines: usize| {
            let memories = budget / (engines as u64 * slot_bytes());
            (memories >= u64::from(MAX_MEMORIES_PER_CALL))
                .then(|| u32::try_from(memories / u64::from(MEMORIES_PER_CALL)).unwrap_or(u32::MAX).min(wanted))
        };
        match fitting_calls(engines) {
            Some(calls) if calls as usize >= engines => Self::pooled(calls, engines),
            _ => match fitting_calls(1) {
                Some(calls) => Self::pooled(calls, 1),
                None => Self::on_demand(u32::try_from(cores).unwrap_or(1)),
            },
        }
    }

    /// The address space the pool reserves for linear memories, in bytes
    /// (0 when instances are reserved one by one).
    pub fn reserved_bytes(&self) -> u64 {
        if !self.pooled {
            return 0;
        }
        self.engines as u64 * self.memories_per_engine() as u64 * slot_bytes()
    }

    /// Linear memories each engine's pool holds.
    pub(crate) fn memories_per_engine(&self) -> u32 {
        self.instances_per_engine().saturating_mul(MEMORIES_PER_CALL).max(MAX_MEMORIES_PER_CALL)
    }

    /// Instances each engine's pool holds: the calls', and those kept
    /// ready (any engine may hold them all).
    pub(crate) fn instances_per_engine(&self) -> u32 {
        self.calls.saturating_add(self.ahead)
    }

    /// Tables each engine's pool holds: [`TABLES_PER_CALL`] per call,
    /// and at least what one call may create.
    pub(crate) fn tables_per_engine(&self) -> u32 {
        self.instances_per_engine().saturating_mul(TABLES_PER_CALL).max(MAX_TABLES as u32)
    }

    /// The same with half the calls and instances kept ready, or `None` at
    /// one call.
    pub(crate) fn halved(&self) -> Option<Self> {
        (self.calls > 1).then_some(SandboxSize { calls: self.calls / 2, ahead: self.ahead / 2, ..*self })
    }
}

impl Default for SandboxSize {
    /// [`SandboxSize::for_machine`].
    fn default() -> Self {
        Self::for_machine()
    }
}

impl std::fmt::Display for SandboxSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let engines = if self.engines == 1 { "1 engine".to_owned() } else { format!("{} engines", self.engines) };
        // Instances made ahead are opt-in: named only when asked for.
        let ahead = if self.ahead == 0 { String::new() } else { format!(" ({} instances kept ready)", self.ahead) };
        if self.pooled {
            write!(
                f,
                "{} calls at once in {engines}{ahead}, {} linear-memory slots of {} + {} guard each: {} of address space \
                 reserved",
                self.calls,
                self.engines as u64 * u64::from(self.memories_per_engine()),
                gib(MEMORY_RESERVATION),
                mib(MEMORY_GUARD),
                gib(self.reserved_bytes())
            )
        } else {
            write!(f, "{} calls at once in {engines}{ahead}, memory reserved per instance as it is made", self.calls)
        }
    }
}

/// One linear memory's slot: the reservation and its guard.
fn slot_bytes() -> u64 {
    MEMORY_RESERVATION + MEMORY_GUARD
}

/// The process's address-space limit (`RLIMIT_AS`, soft), if it has one.
pub fn address_space_limit() -> Option<u64> {
    getrlimit(Resource::As).current
}

fn gib(bytes: u64) -> String {
    let gib = bytes as f64 / f64::from(1u32 << 30);
    if gib >= 1024.0 { format!("{:.1} TiB", gib / 1024.0) } else { format!("{gib:.1} GiB") }
}

fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes >> 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn an_unlimited_machine_gets_a_pool_within_the_default_budget() {
        let size = SandboxSize::fitting(2, None);
        assert_eq!((size.engines, size.pooled), (2, true));
        assert!((32..=64).contains(&size.calls), "{size}");
        assert!(size.reserved_bytes() <= DEFAULT_ADDRESS_BUDGET, "{size}");
        let big = SandboxSize::fitting(64, None);
        assert_eq!(big.engines, MAX_SHARDS);
        assert!(big.reserved_bytes() <= DEFAULT_ADDRESS_BUDGET, "{big}");
        assert!(big.calls < 64 * CALLS_PER_CORE, "cut to the budget: {big}");
    }

    #[test]
    fn an_address_space_limit_cuts_the_pool_to_half_of_it() {
        let size = SandboxSize::fitting(2, Some(4096 * GIB));
        assert!(size.reserved_bytes() <= 2048 * GIB, "{size}");
        assert!(size.pooled && size.calls >= 1);
        // 64 GiB: half is 32 GiB, less than one pool's 16 slots of 4 GiB:
        // instances are reserved as they are made.
        let tight = SandboxSize::fitting(2, Some(64 * GIB));
        assert_eq!(tight.reserved_bytes(), 0, "{tight}");
        assert!(!tight.pooled);
    }

    #[test]
    fn fewer_calls_than_engines_run_in_one_engine() {
        // Half of 200 GiB holds 24 slots: two pools of 16 do not fit, one
        // pool for 12 calls does.
        let size = SandboxSize::fitting(2, Some(200 * GIB));
        assert_eq!((size.engines, size.calls, size.ahead, size.pooled), (1, 12, 0, true), "{size}");
    }

    #[test]
    fn halving_stops_at_one_call() {
        let mut size = SandboxSize::pooled(5, 1);
        let mut steps = 0;
        while let Some(smaller) = size.halved() {
            size = smaller;
            steps += 1;
        }
        assert_eq!((size.calls, steps), (1, 2));
    }

    #[test]
    fn the_size_says_what_it_reserves() {
        let text = SandboxSize::pooled(64, 2).to_string();
        assert!(text.contains("64 calls at once in 2 engines, 256 linear-memory"), "{text}");
        assert!(text.contains("256 linear-memory slots of 4.0 GiB + 32 MiB guard"), "{text}");
        let ahead = SandboxSize::pooled(64, 2).with_instances_ahead(8).to_string();
        assert!(ahead.contains("(8 instances kept ready), 288 linear-memory slots"), "{ahead}");
        assert!(SandboxSize::one_call().to_string().contains("reserved per instance"));
    }
}
