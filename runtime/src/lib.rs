//! toolhost's runtime: the sandbox that runs each call in a fresh,
//! capability-limited WebAssembly instance ([`sandbox`]), the registry of
//! loaded plugins with its compiled-artifact cache and lock file
//! ([`registry`]), the frozen plugin contract ([`contract`]), and the
//! [`executor`] that runs checked calls ([`checked_call`]) under their
//! limits.
//!
//! It knows no door, no approval and no model: the `toolhost` crate builds
//! those on it and re-exports what an embedder uses, so a program needs
//! only that one.

// A `pub` item that no path from the root reaches is `pub(crate)`, so
// that `pub` alone marks the public API.
#![warn(unreachable_pub)]
#![warn(clippy::missing_errors_doc)]

// The crates below, at the paths their modules had when they were part of
// this one.
use toolhost_protocol::{arguments, declaration};
use toolhost_support::{config_error, digest, error_chain, home_paths, printable, regular_file, trust};
use toolhost_types::{call, failure, manifest, outcome, units};

pub mod checked_call;
pub mod contract;
pub mod executor;
pub mod registry;
pub mod sandbox;

/// Install toolhost's counting allocator as the program's global
/// allocator, so that each call's host memory is counted and the per-call
/// host-memory limit holds (see [`HostMemoryAllocator`](sandbox::HostMemoryAllocator)). A library makes
/// no process-wide choice, so the program does, once, in its binary:
///
/// ```ignore
/// toolhost::count_host_memory!();                               // over the system allocator
/// toolhost::count_host_memory!(MyAllocator, MyAllocator::new()); // over another one
/// ```
///
/// Without it, calls still run under every other limit (linear memory,
/// fuel, time, resource counts, open files), but what the host allocates
/// for a call is not counted: `host_memory_mib` does not apply and host
/// work costs no per-byte fuel ([`accounting_active`](sandbox::accounting_active) is false).
#[macro_export]
macro_rules! count_host_memory {
    () => {
        $crate::count_host_memory!(::std::alloc::System, ::std::alloc::System);
    };
    ($allocator:ty, $inner:expr) => {
        #[global_allocator]
        static TOOLHOST_HOST_MEMORY: $crate::sandbox::HostMemoryAllocator<$allocator> =
            $crate::sandbox::HostMemoryAllocator::new($inner);
    };
}

// The crate's own unit tests run with host memory counted, as the CLI does.
#[cfg(test)]
count_host_memory!();
