//! Watching the plugin directories: the registry reloads when a component
//! file is added, changed or removed.
//!
//! It polls (name, size, modification time) of every `*.wasm` file rather
//! than asking the kernel for events: the directories are few and small,
//! a poll costs a `stat` per file, and it behaves the same on every file
//! system (network and container mounts among them).

use super::{Registry, component_files};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};
use tokio_util::sync::CancellationToken;

/// How often the directories are polled by default.
pub const DEFAULT_WATCH_INTERVAL: Duration = Duration::from_millis(500);

/// What a poll sees of one component file.
type Seen = Vec<(PathBuf, u64, Option<SystemTime>)>;

impl Registry {
    /// Reload whenever the component files in the plugin directories
    /// change, polling every `every`, until `shutdown` fires. A change is
    /// acted on once two polls in a row agree, so a file still being
    /// written is not loaded half-way. Subscribers hear of each reload
    /// ([`Registry::subscribe`]); a failed reload is logged and retried at
    /// the next change.
    pub async fn watch(&self, every: Duration, shutdown: CancellationToken) {
        let mut loaded = self.seen();
        let mut last = loaded.clone();
        loop {
            tokio::select! {
                () = tokio::time::sleep(every) => {}
                () = shutdown.cancelled() => return,
            }
            let now = self.seen();
            let settled = now == last;
            last = now;
            if !settled || last == loaded {
                continue;
            }
            loaded = last.clone();
            match self.reload().await {
                Ok(event) => tracing::info!(
                    "plugins changed: {} added, {} changed, {} removed",
                    event.added.len(),
                    event.changed.len(),
                    event.removed.len()
                ),
                Err(error) => tracing::warn!("reloading the plugins after a change failed: {error}"),
            }
        }
    }

    /// The component files now, with their sizes and times.
    fn seen(&self) -> Seen {
        let files = component_files(&self.policy().plugin_dirs).unwrap_or_default();
        files
            .into_iter()
            .map(|path| {
                let meta = std::fs::metadata(&path).ok();
                let (len, modified) = meta.map_or((0, None), |m| (m.len(), m.modified().ok()));
                (path, len, modified)
            })
            .collect()
    }
}
