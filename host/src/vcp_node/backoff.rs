//! The waits between connection attempts: exponential, capped, jittered.

use super::config::Reconnect;
use std::time::Duration;

/// The next wait, as [`Reconnect`] describes: the step doubles per failed
/// attempt up to the cap, and each wait lies between half the step and the
/// whole step. Never shorter than half the initial wait, so no failure
/// makes a tight loop.
#[derive(Debug)]
pub(super) struct Backoff {
    settings: Reconnect,
    failures: u32,
}

impl Backoff {
    pub(super) fn new(settings: Reconnect) -> Self {
        Backoff { settings, failures: 0 }
    }

    /// Start again from the initial wait.
    pub(super) fn reset(&mut self) {
        self.failures = 0;
    }

    /// The wait after one more failure.
    pub(super) fn next(&mut self) -> Duration {
        let step = self.step();
        self.failures = self.failures.saturating_add(1);
        let half = step / 2;
        half + half.mul_f64(jitter())
    }

    /// The step before jitter: `initial × 2^failures`, at most `max`.
    fn step(&self) -> Duration {
        let doubled = self.settings.initial.saturating_mul(1u32.checked_shl(self.failures.min(31)).unwrap_or(u32::MAX));
        doubled.min(self.settings.max)
    }
}

/// A uniform draw from [0, 1).
fn jitter() -> f64 {
    // The OS generator: a few bytes per reconnect costs nothing, and a
    // fixed seed would make every node wait alike.
    let bits = getrandom::u64().unwrap_or(u64::MAX / 2);
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_cap_with_jitter_and_reset() {
        let settings = Reconnect { initial: Duration::from_millis(100), max: Duration::from_millis(1000) };
        let mut backoff = Backoff::new(settings);
        let steps = [100, 200, 400, 800, 1000, 1000, 1000];
        for step in steps {
            let wait = backoff.next();
            let step = Duration::from_millis(step);
            assert!(wait >= step / 2 && wait <= step, "{wait:?} is not within [{:?}, {step:?}]", step / 2);
        }
        for _ in 0..100 {
            assert!(backoff.next() <= settings.max, "capped however many failures");
        }
        backoff.reset();
        assert!(backoff.next() <= settings.initial);
    }

    #[test]
    fn jitter_spreads_the_waits() {
        let mut backoff = Backoff::new(Reconnect::default());
        let waits: std::collections::BTreeSet<Duration> = (0..20)
            .map(|_| {
                backoff.reset();
                backoff.next()
            })
            .collect();
        assert!(waits.len() > 10, "{waits:?}");
    }
}
