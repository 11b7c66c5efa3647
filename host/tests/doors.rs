//! The doors are features: without them the library depends on no HTTP
//! client, web server, WebSocket client, MCP server or tokenizer, as Cargo
//! resolves it for an embedder who turns the default features off.

use std::collections::BTreeSet;
use std::process::Command;

/// What each door brings, and no part of the core may.
const DOORS_ONLY: [&str; 6] = ["reqwest", "axum", "tokio-tungstenite", "rmcp", "tiktoken-rs", "eventsource-stream"];

/// Every package the library depends on, not counting dev-dependencies,
/// with `features` as `cargo` takes them.
fn dependencies(features: &[&str]) -> BTreeSet<String> {
    let output = Command::new(env!("CARGO"))
        .args(["tree", "--locked", "-p", "toolhost", "-e", "normal", "--prefix", "none", "--format", "{p}"])
        .args(features)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(output.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).expect("cargo tree prints UTF-8");
    text.lines().filter_map(|line| line.split_whitespace().next()).map(str::to_owned).collect()
}

#[test]
fn the_core_alone_depends_on_no_door() {
    let core = dependencies(&["--no-default-features"]);
    assert!(core.contains("wasmtime") && core.contains("toolhost-runtime"), "the tree was read: {core:?}");
    let reached: Vec<&&str> = DOORS_ONLY.iter().filter(|door| core.contains(**door)).collect();
    assert!(reached.is_empty(), "the core depends on {reached:?}");

    let everything = dependencies(&[]);
    let missing: Vec<&&str> = DOORS_ONLY.iter().filter(|door| !everything.contains(**door)).collect();
    assert!(missing.is_empty(), "the default features no longer bring {missing:?}: update DOORS_ONLY");
}

#[test]
fn each_door_brings_its_own_dependencies_alone() {
    for (feature, brings) in [
        ("chat", ["reqwest", "eventsource-stream"].as_slice()),
        ("mcp", &["rmcp", "axum"]),
        ("vcp", &["tokio-tungstenite"]),
        ("console", &["axum", "reqwest"]),
        ("tokens", &["tiktoken-rs"]),
    ] {
        let with = dependencies(&["--no-default-features", "--features", feature]);
        for door in DOORS_ONLY {
            assert_eq!(with.contains(door), brings.contains(&door), "feature {feature} and {door}");
        }
    }
}
