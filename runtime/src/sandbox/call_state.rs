//! The data of one call's store: its WASI and HTTP contexts, resources,
//! limits, log budget, open files and host-work account.

use super::capability::HttpGate;
use super::host_account::HostWork;
use super::limits::{CallLimiter, Limits};
use super::open_files::{Listings, OpenFiles};
use super::plugin_log::LogBudget;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// The data of one call's store.
pub(crate) struct CallState {
    pub(super) wasi: WasiCtx,
    pub(super) http: WasiHttpCtx,
    pub(crate) table: ResourceTable,
    pub(super) http_gate: HttpGate,
    pub(super) limiter: CallLimiter,
    pub(crate) limits: Limits,
    pub(crate) plugin: String,
    pub(super) log: LogBudget,
    pub(crate) open_files: OpenFiles,
    pub(crate) listings: Listings,
    /// Cancels the call; checked every epoch tick.
    pub(super) cancel: CancellationToken,
    /// When the call's time is up; checked every epoch tick.
    pub(super) deadline: Instant,
    /// Last, so that everything above is freed while the account is open.
    pub(crate) work: HostWork,
}

impl CallState {
    /// The call's time is up `after` from now.
    pub(crate) fn set_deadline(&mut self, after: Duration) {
        self.deadline = Instant::now() + after;
    }

    /// Host memory held for the call: what the allocator counted, and the
    /// estimated directory listings it could not.
    pub(crate) fn host_memory_held(&self) -> usize {
        self.work.memory.held() + self.listings.bytes()
    }

    /// A line the host logs because of the plugin (a refused open), paid
    /// from the plugin's own log budget like its records.
    pub(crate) fn notice(&mut self, message: &str) {
        if let Some(message) = self.log.admit(&self.plugin, message) {
            let plugin = self.plugin.as_str();
            tracing::warn!(plugin, "{message}");
        }
    }

    /// A record the plugin writes into the host's log, within its budget.
    pub(crate) fn plugin_log(&mut self, level: tracing::Level, message: &str) {
        let plugin = self.plugin.as_str();
        let Some(message) = self.log.admit(plugin, message) else { return };
        match level {
            tracing::Level::TRACE => tracing::trace!(plugin, "{message}"),
            tracing::Level::DEBUG => tracing::debug!(plugin, "{message}"),
            tracing::Level::INFO => tracing::info!(plugin, "{message}"),
            tracing::Level::WARN => tracing::warn!(plugin, "{message}"),
            _ => tracing::error!(plugin, "{message}"),
        }
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView { ctx: &mut self.http, table: &mut self.table, hooks: &mut self.http_gate }
    }
}
