//! A plugin at its count limits beside a good one: the pool's memories
//! are taken as shares, so the good plugin's call waits for them rather
//! than failing with a pool error; and a component's counts are checked by
//! the host before anything is made.

use crate::built::{CALC, HOSTILE};
use crate::support::policy_in;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost::{Executor, Registry, Sandbox, Status, ToolCall, sandbox::SandboxSize, types::FailureKind};
use wasm_encoder::reencode::{Reencode, ReencodeComponent, utils};

/// `component` with `extra` more linear memories in each core module that
/// defines one: a hostile component that creates many memories, which no
/// Rust source can declare.
fn with_extra_memories(component: &[u8], extra: u32) -> Vec<u8> {
    struct ExtraMemories(u32);
    impl Reencode for ExtraMemories {
        type Error = std::convert::Infallible;

        fn parse_memory_section(
            &mut self,
            memories: &mut wasm_encoder::MemorySection,
            section: wasmparser::MemorySectionReader<'_>,
        ) -> Result<(), wasm_encoder::reencode::Error<Self::Error>> {
            utils::parse_memory_section(self, memories, section)?;
            for _ in 0..self.0 {
                memories.memory(wasm_encoder::MemoryType {
                    minimum: 1,
                    maximum: None,
                    memory64: false,
                    shared: false,
                    page_size_log2: None,
                });
            }
            Ok(())
        }
    }
    impl ReencodeComponent for ExtraMemories {}
    let mut encoded = wasm_encoder::Component::new();
    ExtraMemories(extra).parse_component(&mut encoded, wasmparser::Parser::new(0), component).expect("a component");
    encoded.finish()
}

/// A registry over `sandbox` with `calc` and `hostile` with `extra` more
/// memories, under `policy`; its directory, which must outlive it.
async fn registry_with(sandbox: Arc<Sandbox>, extra: u32, policy: &str) -> (tempfile::TempDir, Registry) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    std::fs::copy(CALC.path(), dir.path().join("plugins/calc.wasm")).unwrap();
    let hostile = std::fs::read(HOSTILE.path()).unwrap();
    std::fs::write(dir.path().join("plugins/hostile.wasm"), with_extra_memories(&hostile, extra)).unwrap();
    let registry = Registry::load_in(sandbox, policy_in(dir.path(), policy)).await.expect("a registry");
    (dir, registry)
}

fn call(id: &str, tool: &str, args: serde_json::Value) -> ToolCall {
    ToolCall::new(id, tool, args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_holding_every_pooled_memory_make_another_plugins_call_wait_not_fail() {
    // Four calls at once in one engine: the pool's least, 16 memories. Two
    // calls of the hostile plugin, 8 memories each (its limit), hold all.
    let sandbox = Arc::new(Sandbox::with_size(SandboxSize::pooled(4, 1)).unwrap());
    let (_dir, registry) = registry_with(sandbox.clone(), 7, "").await;
    let executor = Arc::new(Executor::with_concurrency(Arc::new(registry), 4));
    let hogs: Vec<_> = (0..2)
        .map(|i| {
            let executor = executor.clone();
            tokio::spawn(async move { executor.call(&call(&format!("hog{i}"), "wait_ms", json!({ "ms": 1500 }))).await })
        })
        .collect();
    let metrics = sandbox.engine().pooling_allocator_metrics().expect("a pool");
    let deadline = Instant::now() + Duration::from_secs(20);
    while metrics.memories() < 16 {
        assert!(Instant::now() < deadline, "the two calls never held the pool's 16 memories: {}", metrics.memories());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let good = executor.call(&call("good", "calculate", json!({ "expression": "6 * 7" }))).await;
    assert_eq!(good.status, Status::Success, "{}", good.output);
    assert!(good.output.contains("42"), "{}", good.output);
    for hog in hogs {
        let hog = hog.await.unwrap();
        assert_eq!(hog.status, Status::Success, "{}", hog.output);
    }
    // A finished call's instance goes back to the pool just after its
    // caller has the result.
    while metrics.memories() > 0 {
        assert!(Instant::now() < deadline, "{} memories never went back to the pool", metrics.memories());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_component_past_its_memories_limit_is_refused_by_count_before_it_is_made() {
    let sandbox = Arc::new(Sandbox::with_size(SandboxSize::pooled(4, 1)).unwrap());
    let (_dir, registry) = registry_with(sandbox.clone(), 7, "[plugins.hostile]\nlimits = { memories = 4 }\n").await;
    let executor = Executor::new(Arc::new(registry));
    let refused = executor.call(&call("over", "wait_ms", json!({ "ms": 1 }))).await;
    assert_eq!(refused.status, Status::LimitExceeded, "{}", refused.output);
    assert_eq!(refused.output, "memories limit 4 exceeded");
    let failure = refused.failure.as_ref().expect("a failure");
    assert_eq!(failure.kind, FailureKind::ResourceLimit);
    assert_eq!(failure.limit.as_ref().map(|l| (l.name.as_str(), l.value)), Some(("memories", 4)));
    let next = executor.call(&call("next", "calculate", json!({ "expression": "1 + 1" }))).await;
    assert_eq!(next.status, Status::Success, "{}", next.output);

    // At load, the manifest is read under the default count (8), in a pool
    // or reserved per instance as the one-shot commands do: a component of
    // 8 memories loads and runs, one of 9 is refused naming the count, not
    // a byte limit.
    for sandbox in [sandbox, Arc::new(Sandbox::with_size(SandboxSize::on_demand(1)).unwrap())] {
        let (_dir, registry) = registry_with(sandbox.clone(), 7, "").await;
        let ran = Executor::new(Arc::new(registry)).call(&call("eight", "wait_ms", json!({ "ms": 1 }))).await;
        assert_eq!(ran.status, Status::Success, "{}", ran.output);
        let (_dir, registry) = registry_with(sandbox, 8, "").await;
        let catalog = registry.catalog();
        let refusal = catalog.refused.iter().find(|r| r.path.ends_with("hostile.wasm")).expect("refused at load");
        let error = refusal.error.to_string();
        assert!(error.ends_with("reading the manifest of hostile.wasm failed: memories limit 8 exceeded"), "{error}");
    }
}
