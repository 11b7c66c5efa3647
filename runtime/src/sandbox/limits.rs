//! Per-call limits, their defaults, and the resource limiter that enforces
//! the memory and table caps inside a store.

use crate::units::{grouped, human_bytes, human_duration};
use serde::Serialize;
use std::time::Duration;

/// Fuel a call may burn by default. A tight guest loop burns about 2.3e10
/// units a second on a 2-core x86-64 test machine, so this stops it within
/// roughly 45 ms; ordinary tools use a few thousand to a few million.
pub const DEFAULT_FUEL: u64 = 1_000_000_000;
/// Wall-clock time a call may take by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Linear memory a call may use by default, all its memories together.
pub const DEFAULT_MEMORY_BYTES: usize = 64 << 20;
/// Output a call may return by default.
pub const DEFAULT_OUTPUT_BYTES: usize = 1 << 20;
/// Core instances a call may create by default (a Rust component needs a
/// handful).
pub const DEFAULT_INSTANCES: usize = 32;
/// The ceiling for the instances limit, as the pool is sized for every
/// call at it.
pub const MAX_INSTANCES: usize = 64;
/// Tables a call may create by default.
pub const DEFAULT_TABLES: usize = 32;
/// The ceiling for the tables limit.
pub const MAX_TABLES: usize = 64;
/// Linear memories a call may create by default.
pub const DEFAULT_MEMORIES: usize = 8;
/// Elements one table may grow to by default.
pub const DEFAULT_TABLE_ELEMENTS: usize = 10_000;
/// The ceiling for the table-elements limit, as the pooling allocator
/// reserves room for it.
pub const MAX_TABLE_ELEMENTS: usize = 100_000;
/// Host memory a call may make the host hold by default: resources it
/// creates, buffers it hands over (see `host_memory`). A call needs a few
/// hundred KiB; an HTTP request with large headers a few MiB.
pub const DEFAULT_HOST_MEMORY_BYTES: usize = 32 << 20;
/// WASI resources (streams, descriptors, HTTP fields, pollables…) a call
/// may hold at once by default. An HTTP request uses about fifteen.
pub const DEFAULT_RESOURCES: usize = 1_000;
/// Files and directories a call may hold open at once by default: far
/// below the process's descriptor limit (often 1 024), so that a few
/// hostile calls cannot take the host's last descriptors.
pub const DEFAULT_OPEN_FILES: usize = 128;
/// Outbound HTTP requests a call may send by default; each holds a
/// connection (a descriptor) while it runs.
pub const DEFAULT_HTTP_REQUESTS: usize = 64;

/// The ceiling for any memory limit: the size of one slot in the pooling
/// allocator, which reserves address space for it up front.
pub const MAX_MEMORY_BYTES: usize = 1 << 30;

/// Limits for one call. Every field has a documented default
/// ([`Limits::default`]); `toolhost.toml` overrides them globally and per
/// plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Limits {
    /// Fuel units (roughly, WebAssembly instructions). Default
    /// [`DEFAULT_FUEL`].
    pub fuel: u64,
    /// Wall-clock deadline, enforced by epoch interruption so a call that
    /// runs over is stopped. Default [`DEFAULT_TIMEOUT`].
    pub timeout: Duration,
    /// Linear memory per call, all its memories together, in bytes.
    /// Default [`DEFAULT_MEMORY_BYTES`], at most [`MAX_MEMORY_BYTES`].
    pub memory_bytes: usize,
    /// Output size in bytes. Default [`DEFAULT_OUTPUT_BYTES`].
    pub output_bytes: usize,
    /// Core instances per call. Default [`DEFAULT_INSTANCES`].
    pub instances: usize,
    /// Tables per call. Default [`DEFAULT_TABLES`].
    pub tables: usize,
    /// Linear memories per call. Default [`DEFAULT_MEMORIES`].
    pub memories: usize,
    /// Elements per table. Default [`DEFAULT_TABLE_ELEMENTS`].
    pub table_elements: usize,
    /// Bytes of host memory the call may make the host hold. Default
    /// [`DEFAULT_HOST_MEMORY_BYTES`].
    pub host_memory_bytes: usize,
    /// WASI resources held at once. Default [`DEFAULT_RESOURCES`].
    pub resources: usize,
    /// Files and directories open at once. Default [`DEFAULT_OPEN_FILES`].
    pub open_files: usize,
    /// Outbound HTTP requests per call. Default [`DEFAULT_HTTP_REQUESTS`].
    pub http_requests: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            fuel: DEFAULT_FUEL,
            timeout: DEFAULT_TIMEOUT,
            memory_bytes: DEFAULT_MEMORY_BYTES,
            output_bytes: DEFAULT_OUTPUT_BYTES,
            instances: DEFAULT_INSTANCES,
            tables: DEFAULT_TABLES,
            memories: DEFAULT_MEMORIES,
            table_elements: DEFAULT_TABLE_ELEMENTS,
            host_memory_bytes: DEFAULT_HOST_MEMORY_BYTES,
            resources: DEFAULT_RESOURCES,
            open_files: DEFAULT_OPEN_FILES,
            http_requests: DEFAULT_HTTP_REQUESTS,
        }
    }
}

impl Limits {
    /// The tight limits under which a plugin's manifest is read at load
    /// time: a manifest is data and needs little.
    pub fn for_manifest() -> Self {
        Limits {
            fuel: 50_000_000,
            timeout: Duration::from_secs(2),
            memory_bytes: 16 << 20,
            output_bytes: crate::manifest::MAX_PLUGIN_MANIFEST_BYTES,
            host_memory_bytes: 16 << 20,
            resources: 100,
            open_files: 0,
            ..Limits::default()
        }
    }
}

/// A growth the limiter refused. A guest may survive a refusal (an
/// allocator that falls back), so this is a hint for classifying a later
/// trap, not proof of what ended the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    Memory { limit: usize },
    TableElements { limit: usize },
}

/// Enforces memory and table growth per store, and remembers the last
/// growth it refused. The memory limit holds for all of a call's linear
/// memories together, so `memories` more of them do not multiply it.
pub(crate) struct CallLimiter {
    limits: Limits,
    memory_bytes: usize,
    pub(crate) refused: Option<Refusal>,
}

impl CallLimiter {
    pub(crate) fn new(limits: Limits) -> Self {
        CallLimiter { limits, memory_bytes: 0, refused: None }
    }
}

impl wasmtime::ResourceLimiter for CallLimiter {
    fn memory_growing(&mut self, current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        let total = self.memory_bytes.saturating_add(desired.saturating_sub(current));
        if total > self.limits.memory_bytes {
            self.refused = Some(Refusal::Memory { limit: self.limits.memory_bytes });
            return Ok(false);
        }
        self.memory_bytes = total;
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.limits.table_elements {
            self.refused = Some(Refusal::TableElements { limit: self.limits.table_elements });
            return Ok(false);
        }
        Ok(true)
    }

    fn instances(&self) -> usize {
        self.limits.instances
    }

    fn tables(&self) -> usize {
        self.limits.tables
    }

    fn memories(&self) -> usize {
        self.limits.memories
    }
}

impl std::fmt::Display for Limits {
    /// The limits a person tunes most, as `toolhost -vv` logs them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "fuel {}, time {}, memory {}, output {}, host memory {}, open files {}, HTTP requests {}",
            grouped(self.fuel),
            human_duration(self.timeout),
            human_bytes(self.memory_bytes),
            human_bytes(self.output_bytes),
            human_bytes(self.host_memory_bytes),
            self.open_files,
            self.http_requests
        )
    }
}
