//! Work that may take a while, said on stderr when it does, whether stderr
//! is a terminal or a log: nothing for a wait under [`SAY_AFTER`]; past
//! it, what is being done and for how long, again every [`SAY_EVERY`],
//! and at the end how long it took. `--quiet` silences it, as every note.

use super::output;
use std::fmt::Display;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a wait goes unsaid.
pub(super) const SAY_AFTER: Duration = Duration::from_secs(1);
/// How often a long wait is said again.
pub(super) const SAY_EVERY: Duration = Duration::from_secs(5);

/// One piece of work under way; said as the module says while it lasts.
pub(super) struct Progress {
    state: Arc<Mutex<State>>,
    ticker: tokio::task::JoinHandle<()>,
}

struct State {
    doing: String,
    started: Instant,
    said: bool,
}

impl Progress {
    /// Start saying `doing` once it has lasted [`SAY_AFTER`].
    pub(super) fn start(doing: impl Display) -> Progress {
        let state = Arc::new(Mutex::new(State { doing: doing.to_string(), started: Instant::now(), said: false }));
        let ticker = tokio::spawn({
            let state = state.clone();
            async move {
                tokio::time::sleep(SAY_AFTER).await;
                loop {
                    {
                        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
                        state.said = true;
                        output::note(format_args!("{} … {}", state.doing, seconds(state.started.elapsed())));
                    }
                    tokio::time::sleep(SAY_EVERY).await;
                }
            }
        });
        Progress { state, ticker }
    }

    /// What is being done now.
    pub(super) fn update(&self, doing: impl Display) {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).doing = doing.to_string();
    }

    /// Done: `done` and how long it took, if the wait was said at all.
    pub(super) fn finish(self, done: impl Display) {
        self.ticker.abort();
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.said {
            output::note(format_args!("{done} in {}", seconds(state.started.elapsed())));
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.ticker.abort();
    }
}

/// `18.3 s`.
fn seconds(elapsed: Duration) -> String {
    format!("{:.1} s", elapsed.as_secs_f64())
}
