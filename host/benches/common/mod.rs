//! What every benchmark reports with.

use std::time::Duration;

/// The middle sample.
pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// `12.34 µs` or `1.23 ms`.
pub fn show(d: Duration) -> String {
    let micros = d.as_secs_f64() * 1e6;
    if micros < 1_000.0 { format!("{micros:.2} µs") } else { format!("{:.2} ms", micros / 1000.0) }
}
