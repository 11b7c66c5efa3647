//! One sandbox behind many registries: its pool, its engines and its limit
//! on calls at once are shared; each registry keeps its own plugins and
//! policy.

use crate::built::CALC;
use crate::support::policy_in;
use std::sync::Arc;
use toolhost::{Executor, Registry, Sandbox, Status, ToolCall, sandbox::SandboxSize};

/// Registries in one process, each over its own directory and policy.
const REGISTRIES: usize = 16;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_registries_share_one_sandbox_and_all_answer() {
    let sandbox = Arc::new(Sandbox::with_size(SandboxSize::pooled(8, 2)).unwrap());
    let mut hosts = Vec::new();
    for index in 0..REGISTRIES {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("plugins")).unwrap();
        std::fs::copy(CALC.path(), dir.path().join("plugins/calc.wasm")).unwrap();
        // Each policy its own fuel, so each registry's limits are its own.
        let fuel = 1_000_000 + index as u64;
        let policy = policy_in(dir.path(), &format!("[limits]\nfuel = {fuel}\n"));
        let registry = Arc::new(Registry::load_in(sandbox.clone(), policy).await.unwrap());
        assert!(Arc::ptr_eq(registry.sandbox(), &sandbox), "registry {index} made a sandbox of its own");
        assert_eq!(registry.catalog().plugins[0].limits.fuel, fuel);
        hosts.push((dir, Executor::new(registry)));
    }
    // Every registry at once, more calls than the sandbox's 8 slots: the
    // rest wait for a slot instead of failing to instantiate.
    let calls = hosts.iter().enumerate().map(|(index, (_, executor))| async move {
        let expression = format!("{index} * 2");
        let call = ToolCall::new(format!("c{index}"), "calculate", serde_json::json!({ "expression": expression }));
        (index, executor.call(&call).await)
    });
    for (index, outcome) in futures::future::join_all(calls).await {
        assert_eq!(outcome.status, Status::Success, "registry {index}: {}", outcome.output);
        let value: serde_json::Value = serde_json::from_str(&outcome.output).unwrap();
        assert_eq!(value["value"], serde_json::json!((index * 2) as f64), "registry {index}: {}", outcome.output);
    }
    assert_eq!(sandbox.size().calls, 8);
}

#[tokio::test]
async fn a_registry_of_its_own_is_sized_as_its_policy_says() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    let policy = policy_in(dir.path(), "[sandbox]\ncalls = 3\nengines = 1\n");
    let registry = Registry::load(policy).await.unwrap();
    let size = registry.sandbox().size();
    assert_eq!((size.calls, size.engines, size.pooled), (3, 1, true), "{size}");
}
