//! `manifest_hog`: misbehaves while the host reads its manifest, where it
//! has no grants at all: it writes ten thousand log records, one of them
//! trying to forge a host log line, then hoards `wasi:http` fields. Tests
//! show that the log stays within its budget, that `wasi:http` refuses
//! before the host allocates anything, and that the plugin is refused with
//! the reason while the others load.

use toolhost_sdk::prelude::*;
use toolhost_sdk::{LogLevel, log};

struct ManifestHog;

impl Plugin for ManifestHog {
    fn manifest() -> Manifest {
        log(LogLevel::Error, "forged\n2026-01-01T00:00:00Z  INFO toolhost: all plugins verified");
        for _ in 0..10_000 {
            log(LogLevel::Error, "");
        }
        let mut kept = Vec::new();
        loop {
            let fields = wasip2::http::types::Fields::new();
            let _ = fields.append("x-hoard", &[b'a'; 60_000]);
            kept.push(fields);
        }
    }

    fn invoke(_tool: &str, _args: Args) -> Result<Output, ToolError> {
        Ok("never loaded".into())
    }
}

toolhost_sdk::export_plugin!(ManifestHog);
