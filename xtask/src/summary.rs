//! The summary `cargo xtask bench` ends with: one `summary KEY: VALUE`
//! line per figure, in a fixed order, so that one run can be compared
//! with another. Each benchmark records its figures as it measures them
//! (a file per key under `target/bench/summary/`); a figure no benchmark
//! of this run measured says so rather than showing an old one.

use std::path::{Path, PathBuf};

/// Every key, in the order printed, with what measures it.
const KEYS: [(&str, &str); 9] = [
    ("fresh_over_floor", "the runtime benchmark: a fresh-instance call over the reused-instance floor"),
    ("fresh_latency_over_floor", "the runtime benchmark: an idle host's call with instances made ahead, over the floor"),
    (
        "fresh_latency_over_paced_floor",
        "the runtime benchmark: the same call over the floor's instance called alike, one call after each idling",
    ),
    ("fresh_throughput_over_today", "the runtime benchmark: calls per second at full load, made ahead over made on the path"),
    ("mcp_stdio_over_bare", "the MCP benchmark: toolhost's stdio round trip over a bare responder's, the worse era"),
    (
        "mcp_server_side_us",
        "the MCP benchmark: toolhost's processor time per call over stdio less a bare responder's, µs, the worse era",
    ),
    ("cold_over_warm", "the runtime benchmark: a plugin's cold load over its warm load"),
    ("auto_parse_gbps", "the protocol benchmark: `auto` reading 1 MiB of prose, GB/s"),
    ("chat_late_round_over_early", "the chain benchmark: a 200-round chat's last rounds over its first"),
];

fn dir(root: &Path) -> PathBuf {
    root.join("target/bench/summary")
}

/// Forget the figures of an earlier run.
pub fn clear(root: &Path) -> anyhow::Result<()> {
    match std::fs::remove_dir_all(dir(root)) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error.into()),
        _ => Ok(()),
    }
}

/// Record `value` under `key` (one of [`KEYS`]).
pub fn record(root: &Path, key: &str, value: f64) -> anyhow::Result<()> {
    anyhow::ensure!(KEYS.iter().any(|(known, _)| *known == key), "`{key}` is not a summary key");
    std::fs::create_dir_all(dir(root))?;
    std::fs::write(dir(root).join(key), value.to_string())?;
    Ok(())
}

/// Print every key: its figure, or that this run did not measure it.
pub fn print(root: &Path) {
    println!();
    for line in lines(root) {
        println!("{line}");
    }
}

fn lines(root: &Path) -> Vec<String> {
    KEYS.iter()
        .map(|(key, what)| {
            match std::fs::read_to_string(dir(root).join(key)).ok().and_then(|text| text.trim().parse::<f64>().ok()) {
                Some(value) => format!("summary {key}: {}", shown(value)),
                None => format!("summary {key}: not measured ({what})"),
            }
        })
        .collect()
}

/// Three significant figures, enough to compare runs.
fn shown(value: f64) -> String {
    match value.abs() {
        v if v >= 100.0 => format!("{value:.0}"),
        v if v >= 10.0 => format!("{value:.1}"),
        _ => format!("{value:.2}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_figure_is_printed_in_order_and_a_missing_one_says_so() {
        let root = std::env::temp_dir().join(format!("summary-test-{}", std::process::id()));
        clear(&root).unwrap();
        record(&root, "cold_over_warm", 151.27).unwrap();
        record(&root, "fresh_over_floor", 1.234).unwrap();
        assert!(record(&root, "made_up", 1.0).is_err());
        let printed = lines(&root);
        assert_eq!(printed.len(), KEYS.len());
        assert_eq!(printed[0], "summary fresh_over_floor: 1.23");
        assert_eq!(printed[6], "summary cold_over_warm: 151");
        assert!(printed[1].starts_with("summary fresh_latency_over_floor: not measured ("), "{}", printed[1]);
        clear(&root).unwrap();
        assert!(lines(&root)[0].contains("not measured"), "an earlier run's figures are forgotten");
        let _ = std::fs::remove_dir_all(&root);
    }
}
