//! A fair share of the executor per plugin. One plugin's calls may hold
//! half of the executor's slots (at least one) whatever else runs, and
//! more while a quarter of the slots stays free for other plugins; its
//! further calls wait here, not in the executor's queue. So another
//! plugin's quick call finds a free slot instead of waiting behind every
//! slow call the first one was sent, and a plugin's own quick call does
//! not wait behind its slow ones while the node has room.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The calls each plugin runs, and how many the node runs in all.
pub(super) struct PluginShares {
    concurrency: usize,
    per_plugin: usize,
    held: Mutex<Held>,
    /// Woken whenever a call leaves.
    freed: Notify,
}

#[derive(Default)]
struct Held {
    per_plugin: HashMap<String, usize>,
    total: usize,
}

/// A plugin's place among the node's calls, given back when dropped.
pub(super) struct Place {
    shares: Arc<PluginShares>,
    plugin: String,
}

impl PluginShares {
    /// Shares of an executor running `concurrency` calls at once.
    pub(super) fn new(concurrency: usize) -> Arc<Self> {
        let concurrency = concurrency.max(1);
        Arc::new(PluginShares { concurrency, per_plugin: (concurrency / 2).max(1), held: Mutex::default(), freed: Notify::new() })
    }

    /// Wait for a place among `plugin`'s calls; `None` if `cancel` fired
    /// first.
    pub(super) async fn enter(self: &Arc<Self>, plugin: &str, cancel: &CancellationToken) -> Option<Place> {
        loop {
            // Registered before the check, so a call leaving in between
            // still wakes this one.
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if self.try_enter(plugin) {
                return Some(Place { shares: self.clone(), plugin: plugin.to_owned() });
            }
            tokio::select! {
                () = freed => {}
                () = cancel.cancelled() => return None,
            }
        }
    }

    /// Take a place for `plugin` if its share, or the node's spare room,
    /// has one.
    fn try_enter(&self, plugin: &str) -> bool {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let running = held.per_plugin.get(plugin).copied().unwrap_or(0);
        let reserve = self.concurrency.div_ceil(4);
        let spare = held.total + 1 + reserve <= self.concurrency;
        if running >= self.per_plugin && !spare {
            return false;
        }
        *held.per_plugin.entry(plugin.to_owned()).or_default() += 1;
        held.total += 1;
        true
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut held = self.shares.held.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(running) = held.per_plugin.get_mut(&self.plugin) {
            *running -= 1;
            if *running == 0 {
                held.per_plugin.remove(&self.plugin);
            }
        }
        held.total -= 1;
        drop(held);
        self.shares.freed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn enters(shares: &Arc<PluginShares>, plugin: &str) -> Option<Place> {
        tokio::time::timeout(Duration::from_millis(50), shares.enter(plugin, &CancellationToken::new())).await.ok().flatten()
    }

    #[tokio::test]
    async fn a_plugin_passes_its_half_while_a_quarter_stays_free_and_others_keep_their_half() {
        let shares = PluginShares::new(16);
        let mut slow = Vec::new();
        for _ in 0..12 {
            slow.push(enters(&shares, "slow").await.expect("half, then spare room"));
        }
        assert!(enters(&shares, "slow").await.is_none(), "a quarter stays free for other plugins");
        let mut quick = Vec::new();
        for _ in 0..4 {
            quick.push(enters(&shares, "quick").await.expect("within its half"));
        }
        drop(slow.pop());
        assert!(enters(&shares, "slow").await.is_none(), "the node is full past the reserve: the slow plugin is over its half");
        assert!(enters(&shares, "quick").await.is_some(), "a plugin within its half enters however full the node is");
    }

    #[tokio::test]
    async fn a_waiting_call_enters_when_a_call_leaves() {
        let shares = PluginShares::new(2);
        let first = enters(&shares, "p").await.expect("its half");
        let waiting = tokio::spawn({
            let shares = shares.clone();
            async move { shares.enter("p", &CancellationToken::new()).await.is_some() }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "over its half with no spare room");
        drop(first);
        assert!(tokio::time::timeout(Duration::from_secs(5), waiting).await.unwrap().unwrap(), "woken when a call left");
    }

    #[tokio::test]
    async fn a_cancelled_wait_takes_nothing() {
        let shares = PluginShares::new(2);
        let held = enters(&shares, "p").await.expect("one of two");
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert!(shares.enter("p", &cancel).await.is_none());
        drop(held);
        assert_eq!(shares.held.lock().unwrap().total, 0);
        assert!(enters(&shares, "p").await.is_some());
    }
}
