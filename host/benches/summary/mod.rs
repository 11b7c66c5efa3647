//! The figures a benchmark gives the summary `cargo xtask bench` ends
//! with (`xtask/src/summary.rs` names the keys and prints them).

use std::path::Path;

/// Record `value` under `key`.
pub fn summarize(key: &str, value: f64) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench/summary");
    let written = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(dir.join(key), value.to_string()));
    if let Err(error) = written {
        eprintln!("could not record `{key}` for the summary: {error}");
    }
}
