//! Log lines a peer can cause, written at most once a second from each
//! place ([`warn_throttled!`]): a client that repeats a refused request as
//! fast as it can would else write a line each time, to a terminal or to
//! the file its host captures stderr in, for as long as it liked. A line
//! after some were left out says how many (`left_out`).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The least time between two lines from one place.
pub(crate) const LOG_INTERVAL: Duration = Duration::from_secs(1);

/// When lines from one place were last written, and how many were left
/// out since.
pub(crate) struct Throttle {
    /// Milliseconds since [`epoch`] of the last line written, plus one; 0
    /// before the first.
    last: AtomicU64,
    left_out: AtomicU64,
}

impl Throttle {
    #[allow(clippy::new_without_default, reason = "built in statics, where `Default` cannot be called")]
    pub(crate) const fn new() -> Self {
        Throttle { last: AtomicU64::new(0), left_out: AtomicU64::new(0) }
    }

    /// Whether a line may be written now: `Some` with how many were left
    /// out since the last one, or `None` (counted as left out).
    pub(crate) fn admit(&self) -> Option<u64> {
        self.admit_at(epoch().elapsed())
    }

    /// [`Throttle::admit`] at `now`, since the epoch.
    fn admit_at(&self, now: Duration) -> Option<u64> {
        let now = u64::try_from(now.as_millis()).unwrap_or(u64::MAX).saturating_add(1);
        let last = self.last.load(Ordering::Acquire);
        let due = last == 0 || now.saturating_sub(last) >= LOG_INTERVAL.as_millis() as u64;
        if due && self.last.compare_exchange(last, now, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            return Some(self.left_out.swap(0, Ordering::AcqRel));
        }
        self.left_out.fetch_add(1, Ordering::AcqRel);
        None
    }
}

/// The process's start, for the throttles' times.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// `tracing::warn!`, at most once every [`LOG_INTERVAL`] from this place;
/// a line after some were left out carries their count as `left_out`.
macro_rules! warn_throttled {
    ($($message:tt)+) => {{
        static THROTTLE: $crate::log_throttle::Throttle = $crate::log_throttle::Throttle::new();
        match THROTTLE.admit() {
            Some(0) => tracing::warn!($($message)+),
            Some(left_out) => tracing::warn!(left_out, $($message)+),
            None => {}
        }
    }};
}
pub(crate) use warn_throttled;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_a_second_at_most_each_saying_how_many_were_left_out() {
        let throttle = Throttle::new();
        let at = Duration::from_millis;
        assert_eq!(throttle.admit_at(at(0)), Some(0), "the first line is written");
        for ms in [1, 500, 999] {
            assert_eq!(throttle.admit_at(at(ms)), None, "{ms} ms after it");
        }
        assert_eq!(throttle.admit_at(at(1_000)), Some(3), "a second on, with the three left out");
        assert_eq!(throttle.admit_at(at(1_001)), None);
        assert_eq!(throttle.admit_at(at(60_000)), Some(1));
    }

    #[test]
    fn places_are_throttled_apart() {
        fn place_a() -> bool {
            static A: Throttle = Throttle::new();
            A.admit().is_some()
        }
        fn place_b() -> bool {
            static B: Throttle = Throttle::new();
            B.admit().is_some()
        }
        assert!(place_a() && place_b(), "each place's first line");
        assert!(!place_a() && !place_b(), "and no second within the interval");
    }
}
