//! Asked to stop: Ctrl-C (SIGINT) or SIGTERM, which service managers and
//! `kill` send. Each door that serves until stopped ends gracefully on the
//! first and at once on the second.

use super::output;
use anyhow::Context;
use std::process::ExitCode;
use tokio::signal::unix::{Signal, SignalKind, signal};
use toolhost::CancellationToken;

/// The signals that ask a serving command to stop.
pub(crate) struct Stops {
    interrupt: Signal,
    terminate: Signal,
}

impl Stops {
    pub(crate) fn new() -> anyhow::Result<Self> {
        Ok(Stops {
            interrupt: signal(SignalKind::interrupt()).context("listening for Ctrl-C")?,
            terminate: signal(SignalKind::terminate()).context("listening for SIGTERM")?,
        })
    }

    /// Until the next request to stop.
    pub(crate) async fn next(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }

    /// Until the next request to stop: the first cancels `shutdown` (and
    /// is `None`), the second is the exit status of stopping at once.
    pub(crate) async fn asked(&mut self, shutdown: &CancellationToken) -> Option<ExitCode> {
        self.next().await;
        if shutdown.is_cancelled() {
            output::note("stopping now");
            return Some(ExitCode::from(130));
        }
        shutdown.cancel();
        None
    }
}
