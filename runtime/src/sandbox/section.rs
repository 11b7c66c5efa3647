//! `[sandbox]` and `[limits]` (also a plugin's `limits = { … }`) as the
//! policy file spells them, each value range-checked.

use super::{
    Limits, MAX_AHEAD, MAX_CONCURRENT_CALLS, MAX_INSTANCES, MAX_MEMORIES_PER_CALL, MAX_MEMORY_BYTES, MAX_SHARDS,
    MAX_TABLE_ELEMENTS, MAX_TABLES, SandboxSize,
};
use crate::config_error::{ConfigError, in_range};
use serde::Deserialize;
use std::path::Path;
use std::time::Duration;

/// The longest `timeout_ms` a plugin's limits or an agent may set: a day.
pub const MAX_TIMEOUT_MS: u64 = 24 * 3600 * 1000;

/// `[sandbox]` as the file spells it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    calls: Option<u64>,
    engines: Option<u64>,
    instances_ahead: Option<u64>,
}

impl SandboxSection {
    /// The machine's default with the keys given applied, each in range.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Range`] for a value out of its range.
    pub fn resolve(self, path: &Path) -> Result<SandboxSize, ConfigError> {
        let default = SandboxSize::for_machine();
        let calls = match self.calls {
            Some(calls) => in_range(path, "sandbox.calls", calls, 1..=u64::from(MAX_CONCURRENT_CALLS))? as u32,
            None => default.calls,
        };
        let engines = match self.engines {
            Some(engines) => in_range(path, "sandbox.engines", engines, 1..=MAX_SHARDS as u64)? as usize,
            None => default.engines,
        };
        let sized = SandboxSize::pooled(calls, engines);
        match self.instances_ahead {
            Some(ahead) => {
                Ok(sized.with_instances_ahead(in_range(path, "sandbox.instances_ahead", ahead, 0..=u64::from(MAX_AHEAD))? as u32))
            }
            None if self.calls.is_none() && self.engines.is_none() => Ok(sized.with_instances_ahead(default.ahead)),
            None => Ok(sized),
        }
    }
}

/// Limits as the file spells them, each optional.
#[derive(Deserialize, Default, Clone, Copy)]
#[serde(deny_unknown_fields)]
pub struct LimitOverrides {
    fuel: Option<u64>,
    timeout_ms: Option<u64>,
    memory_mib: Option<u64>,
    output_kib: Option<u64>,
    instances: Option<u64>,
    tables: Option<u64>,
    memories: Option<u64>,
    table_elements: Option<u64>,
    host_memory_mib: Option<u64>,
    resources: Option<u64>,
    open_files: Option<u64>,
    http_requests: Option<u64>,
}

impl LimitOverrides {
    /// `base` with the limits given applied, each in range; a bad value
    /// names its key, `SECTION.KEY`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Range`] for a value out of its range.
    pub fn apply(self, base: Limits, path: &Path, section: &str) -> Result<Limits, ConfigError> {
        let range = |key: &str, value: u64, min: u64, max: u64| in_range(path, &format!("{section}.{key}"), value, min..=max);
        let mut limits = base;
        if let Some(v) = self.fuel {
            limits.fuel = range("fuel", v, 1, u64::MAX / 2)?;
        }
        if let Some(v) = self.timeout_ms {
            limits.timeout = Duration::from_millis(range("timeout_ms", v, 1, MAX_TIMEOUT_MS)?);
        }
        if let Some(v) = self.memory_mib {
            limits.memory_bytes = (range("memory_mib", v, 1, (MAX_MEMORY_BYTES >> 20) as u64)? as usize) << 20;
        }
        if let Some(v) = self.output_kib {
            limits.output_bytes = (range("output_kib", v, 1, 1 << 20)? as usize) << 10;
        }
        if let Some(v) = self.instances {
            limits.instances = range("instances", v, 1, MAX_INSTANCES as u64)? as usize;
        }
        if let Some(v) = self.tables {
            limits.tables = range("tables", v, 1, MAX_TABLES as u64)? as usize;
        }
        if let Some(v) = self.memories {
            limits.memories = range("memories", v, 1, u64::from(MAX_MEMORIES_PER_CALL))? as usize;
        }
        if let Some(v) = self.table_elements {
            limits.table_elements = range("table_elements", v, 1, MAX_TABLE_ELEMENTS as u64)? as usize;
        }
        if let Some(v) = self.host_memory_mib {
            limits.host_memory_bytes = (range("host_memory_mib", v, 1, 4096)? as usize) << 20;
        }
        if let Some(v) = self.resources {
            limits.resources = range("resources", v, 1, 1_000_000)? as usize;
        }
        if let Some(v) = self.open_files {
            limits.open_files = range("open_files", v, 0, 65_536)? as usize;
        }
        if let Some(v) = self.http_requests {
            limits.http_requests = range("http_requests", v, 0, 65_536)? as usize;
        }
        Ok(limits)
    }
}
