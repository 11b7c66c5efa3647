//! A fair share of the executor per plugin: one plugin's calls may hold at
//! most half of the executor's slots (at least one), and its further calls
//! wait here, not in the executor's queue. So another plugin's quick call
//! waits for a free slot, never behind every slow call the first one was
//! sent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// The gates, one per plugin that was called.
pub(super) struct PluginShares {
    per_plugin: usize,
    gates: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl PluginShares {
    /// Shares of an executor running `concurrency` calls at once.
    pub(super) fn new(concurrency: usize) -> Self {
        PluginShares { per_plugin: (concurrency / 2).max(1), gates: Mutex::default() }
    }

    /// Wait for a place among `plugin`'s calls; `None` if `cancel` fired
    /// first.
    pub(super) async fn enter(&self, plugin: &str, cancel: &CancellationToken) -> Option<OwnedSemaphorePermit> {
        let gate = {
            let mut gates = self.gates.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            gates.entry(plugin.to_owned()).or_insert_with(|| Arc::new(Semaphore::new(self.per_plugin))).clone()
        };
        tokio::select! {
            permit = gate.acquire_owned() => permit.ok(),
            () = cancel.cancelled() => None,
        }
    }
}
