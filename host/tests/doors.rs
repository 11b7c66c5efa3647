//! The doors are features: without them the library depends on no HTTP
//! client, web server, WebSocket client, MCP server or tokenizer, as Cargo
//! resolves it for an embedder who turns the default features off. And the
//! way to run a tool without the pipeline is a feature only tests take.

use std::collections::BTreeSet;
use std::process::Command;

/// What each door brings, and no part of the core may.
const DOORS_ONLY: [&str; 6] = ["reqwest", "axum", "tokio-tungstenite", "rmcp", "tiktoken-rs", "eventsource-stream"];

/// What `cargo tree` prints with `arguments`, a line each.
fn tree(arguments: &[&str]) -> Vec<String> {
    let output = Command::new(env!("CARGO"))
        .args(["tree", "--locked", "--prefix", "none"])
        .args(arguments)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(output.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("cargo tree prints UTF-8").lines().map(str::to_owned).collect()
}

/// Every package the library depends on, not counting dev-dependencies,
/// with `features` as `cargo` takes them.
fn dependencies(features: &[&str]) -> BTreeSet<String> {
    let lines = tree(&[&["-p", "toolhost", "-e", "normal", "--format", "{p}"], features].concat());
    lines.iter().filter_map(|line| line.split_whitespace().next()).map(str::to_owned).collect()
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

#[test]
fn only_the_tests_can_run_a_tool_without_the_pipeline() {
    let unchecked = |package: &str, edges: &str| {
        tree(&["-p", package, "-e", edges]).iter().any(|line| line.starts_with("toolhost-runtime feature \"unchecked\""))
    };
    assert!(unchecked("toolhost-tests", "normal,dev,features"), "the check reads the features the tests take");
    assert!(!unchecked("toolhost-cli", "normal,features"), "the command can run a tool without the pipeline");
    assert!(!unchecked("toolhost", "normal,features"), "the library's default features run a tool without the pipeline");
}
