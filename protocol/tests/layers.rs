//! The layers hold: the types and protocol crates reach no WebAssembly
//! runtime, no async runtime and no network stack, by anything they depend
//! on (dev-dependencies included), as `Cargo.lock` resolves them.

use std::collections::{BTreeSet, HashMap};

/// Crates that belong to the layers below: the host's, never the parser's.
const FORBIDDEN: [&str; 6] = ["wasmtime", "tokio", "reqwest", "axum", "hyper", "rmcp"];

/// Every package `root` depends on, directly or not, by name.
fn closure(lock: &toml::Table, root: &str) -> BTreeSet<String> {
    let packages = lock["package"].as_array().expect("Cargo.lock lists packages");
    // A dependency is named `name` or `name version` when two versions exist.
    // Two versions of a package: the dependencies of both.
    let mut deps: HashMap<&str, Vec<&str>> = HashMap::new();
    for package in packages {
        let name = package["name"].as_str().expect("a package name");
        let list = package.get("dependencies").and_then(|d| d.as_array()).map(Vec::as_slice).unwrap_or_default();
        deps.entry(name).or_default().extend(list.iter().filter_map(|d| d.as_str()?.split(' ').next()));
    }
    let mut seen = BTreeSet::new();
    let mut todo = vec![root];
    while let Some(name) = todo.pop() {
        if seen.insert(name.to_owned()) {
            todo.extend(deps.get(name).into_iter().flatten().copied());
        }
    }
    seen
}

#[test]
fn the_types_and_protocol_crates_depend_on_no_runtime() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock")).expect("the workspace's Cargo.lock");
    let lock: toml::Table = text.parse().expect("Cargo.lock is TOML");
    let host = closure(&lock, "toolhost");
    assert!(host.contains("wasmtime") && host.contains("tokio"), "the check reads the lock file: {host:?}");
    for root in ["toolhost-types", "toolhost-protocol"] {
        let reached = closure(&lock, root);
        assert!(reached.len() > 3, "{root} was not found in Cargo.lock: {reached:?}");
        let bad: Vec<&String> = reached.iter().filter(|name| FORBIDDEN.iter().any(|f| name.starts_with(f))).collect();
        assert!(bad.is_empty(), "{root} depends on {bad:?}");
    }
}
