//! [`VcpNode`]: the host as a node of a VCP server.

use super::backoff::Backoff;
use super::connection::{Ended, Session};
use super::*;
use crate::agent::ToolCallConfig;
use crate::pipeline::{Pipeline, Turn};
use crate::protocol::ProtocolId;
use std::sync::Arc;
use std::time::SystemTime;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The calls a node's executor should run at once, at least
/// (`Executor::with_concurrency`; `toolhost node` does): the server sends a
/// reply's calls together and times each from when it sent it, so calls of
/// one plugin queued behind each other (a call that waits holds its slot;
/// a plugin gets half the slots) would time out at the server though each
/// is within its own limit.
pub const NODE_CONCURRENCY: usize = 8;

/// A host joined to one VCP server as a node. Cheap to clone: clones share
/// the connection and its status.
#[derive(Clone)]
pub struct VcpNode {
    pub(super) inner: Arc<Inner>,
}

/// What every connection and call shares.
pub(super) struct Inner {
    pub(super) config: VcpConfig,
    /// Sent in the path and never shown.
    pub(super) key: String,
    pub(super) pipeline: Pipeline,
    /// Which tools are exposed: distributed-exposed ones, narrowed by
    /// `[vcp] tools`. Calls are checked by the same rule.
    pub(super) exposure: ToolCallConfig,
    /// Every call's turn, but for its cancellation token.
    pub(super) turn: Turn,
    pub(super) status: watch::Sender<NodeStatus>,
    /// Each plugin's share of the executor.
    pub(super) shares: Arc<share::PluginShares>,
    /// Files read and encoded at once.
    pub(super) files_at_once: tokio::sync::Semaphore,
}

impl VcpNode {
    /// A node joining `config.server` with `key`, running calls on
    /// `pipeline` (whose approver decides calls that need approval: a
    /// person's, or an [`UnattendedApprover`]). Nothing connects until
    /// [`run`](Self::run).
    ///
    /// # Errors
    ///
    /// [`NodeError::KeyInvalid`] when the key cannot be sent as the server
    /// compares it.
    pub fn new(config: VcpConfig, key: impl Into<String>, pipeline: Pipeline) -> Result<Self, NodeError> {
        let key = key.into();
        if let Some(why) = unusable_key(&key) {
            return Err(NodeError::KeyInvalid { env: config.key_env.clone(), why });
        }
        let exposure = ToolCallConfig {
            enabled: true,
            tool_toggles: config.tools.iter().flatten().map(|tool| (tool.clone(), true)).collect(),
            default_tool_enabled: config.tools.is_none(),
            // No deadline of the node's own: each tool's limit holds, and
            // the server is told it at registration.
            timeout_ms: u64::MAX,
            protocol: ProtocolId::Vcp,
            ..ToolCallConfig::default()
        };
        let turn = Turn::distributed(config.agent(), exposure.clone());
        let status = watch::Sender::new(NodeStatus::new(&config.node_name, &config.server));
        let shares = share::PluginShares::new(pipeline.executor().concurrency());
        let files_at_once = tokio::sync::Semaphore::new(FILES_AT_ONCE);
        Ok(VcpNode { inner: Arc::new(Inner { config, key, pipeline, exposure, turn, status, shares, files_at_once }) })
    }

    /// [`VcpNode::new`] with the key from the environment variable
    /// `config.key_env`.
    ///
    /// # Errors
    ///
    /// [`NodeError::KeyMissing`] when the variable is not set or empty;
    /// [`NodeError::KeyInvalid`] when the key cannot be sent as the server
    /// compares it.
    pub fn from_env(config: VcpConfig, pipeline: Pipeline) -> Result<Self, NodeError> {
        let key = std::env::var(&config.key_env).ok().filter(|key| !key.is_empty());
        let key = key.ok_or_else(|| NodeError::KeyMissing { env: config.key_env.clone() })?;
        Self::new(config, key, pipeline)
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &VcpConfig {
        &self.inner.config
    }

    /// Where it stands now.
    pub fn status(&self) -> NodeStatus {
        self.inner.status.borrow().clone()
    }

    /// Its status, told of every change.
    pub fn watch(&self) -> watch::Receiver<NodeStatus> {
        self.inner.status.subscribe()
    }

    /// Connect, register and serve calls, reconnecting whenever the
    /// connection is lost or the exposed tools change, until `shutdown`
    /// is cancelled; then finish as the module docs say. Connection errors
    /// are retried, never returned: the last one is in the status, and
    /// logged. The status file is kept up to date while it runs.
    pub async fn run(&self, shutdown: CancellationToken) {
        let inner = &self.inner;
        let writer = tokio::spawn(keep_status_file(inner.config.status_file.clone(), inner.status.subscribe()));
        let mut events = inner.pipeline.executor().registry().subscribe();
        let mut backoff = Backoff::new(inner.config.reconnect);
        while !shutdown.is_cancelled() {
            inner.update(|status| status.state = NodeState::Connecting);
            let joined = tokio::select! {
                () = shutdown.cancelled() => break,
                joined = connection::join(inner) => joined,
            };
            let error = match joined {
                Ok(joined) => {
                    let started = Instant::now();
                    match Session::run(inner.clone(), joined, &shutdown, &mut events).await {
                        Ended::Shutdown => break,
                        Ended::Reregister => {
                            backoff.reset();
                            continue;
                        }
                        Ended::Lost(error) => {
                            if started.elapsed() >= STABLE_CONNECTION {
                                backoff.reset();
                            }
                            error
                        }
                    }
                }
                Err(error) => error,
            };
            let wait = backoff.next();
            tracing::warn!("{error}; trying again in {}", humantime::format_duration(round_ms(wait)));
            inner.update(|status| {
                status.state = NodeState::Reconnecting;
                status.last_error = Some(error.to_string());
                status.next_attempt_unix_ms = Some(status::unix_ms(SystemTime::now() + wait));
            });
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(wait) => {}
            }
        }
        inner.update(|status| {
            status.state = NodeState::Stopped;
            status.next_attempt_unix_ms = None;
        });
        writer.abort();
        let (path, last) = (inner.config.status_file.clone(), self.status());
        if let Ok(Err(error)) = tokio::task::spawn_blocking(move || last.write(&path)).await {
            tracing::warn!("{error}");
        }
    }
}

impl Inner {
    /// What the node registers for the tools of `catalog`.
    pub(super) fn registration(&self, catalog: &crate::registry::Catalog) -> frames::Registration {
        frames::Registration::of(catalog, &self.exposure, &self.config, self.pipeline.approvals(), self.agent())
    }

    /// The agent the node's calls are approved and audited under.
    pub(super) fn agent(&self) -> &str {
        self.turn.agent.as_deref().expect("a distributed turn names its agent")
    }

    /// Change the status and stamp it.
    pub(super) fn update(&self, change: impl FnOnce(&mut NodeStatus)) {
        self.status.send_modify(|status| {
            change(status);
            status.updated_unix_ms = status::unix_ms(SystemTime::now());
        });
    }
}

/// Counts a call in the status while it runs.
pub(super) struct InFlight(pub(super) Arc<Inner>);

impl InFlight {
    pub(super) fn enter(inner: &Arc<Inner>) -> Self {
        inner.update(|status| status.calls_in_flight += 1);
        InFlight(inner.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.update(|status| status.calls_in_flight -= 1);
    }
}

/// Why `key` cannot be sent as the server compares it (literally, with
/// everything after `VCP_Key=` in the path), if it cannot.
pub(super) fn unusable_key(key: &str) -> Option<&'static str> {
    if key.is_empty() {
        Some("it is empty")
    } else if !key.bytes().all(|b| b.is_ascii_graphic()) {
        Some("it holds spaces, control or non-ASCII characters, which cannot stand in a URL path as they are")
    } else if key.contains(['?', '#']) {
        // A `/` stays part of the path, which the server compares whole
        // (keys made with base64 often hold one).
        Some("it holds `?` or `#`, which would end the key in the URL path")
    } else {
        None
    }
}

/// Write the status to `path` on every change, at most every
/// [`STATUS_WRITE_INTERVAL`]; a failure is logged once until it changes.
pub(super) async fn keep_status_file(path: std::path::PathBuf, mut changes: watch::Receiver<NodeStatus>) {
    let mut last_error = None;
    loop {
        let status = changes.borrow_and_update().clone();
        let target = path.clone();
        let written = tokio::task::spawn_blocking(move || status.write(&target)).await;
        let error = match written {
            Ok(Err(error)) => Some(error.to_string()),
            _ => None,
        };
        if error.is_some() && error != last_error {
            tracing::warn!("{}", error.as_deref().unwrap_or_default());
        }
        last_error = error;
        tokio::time::sleep(STATUS_WRITE_INTERVAL).await;
        if changes.changed().await.is_err() {
            return;
        }
    }
}

/// `d` to the millisecond, for messages.
pub(super) fn round_ms(d: std::time::Duration) -> std::time::Duration {
    std::time::Duration::from_millis(d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_cannot_stand_in_the_path_are_refused() {
        assert_eq!(unusable_key("s3cr3t-KEY_1.~"), None);
        assert!(unusable_key("").is_some());
        assert!(unusable_key("a b").unwrap().contains("spaces"));
        assert_eq!(unusable_key("ab/cd+ef=="), None, "a base64 key");
        assert!(unusable_key("a?deviceName=x").unwrap().contains("`?`"));
        assert!(unusable_key("é").is_some());
    }
}
