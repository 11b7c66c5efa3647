//! The executor: runs calls against the registry, one at a time or in
//! parallel, and turns each into a [`ToolOutcome`]. Every call gets a fresh
//! instance; a failure of one never affects another.

use crate::call::ToolCall;
use crate::outcome::{Status, ToolOutcome};
use crate::registry::Registry;
use crate::suggest::unknown_tool;
use std::sync::Arc;

/// Runs tool calls.
#[derive(Clone)]
pub struct Executor {
    registry: Arc<Registry>,
}

impl Executor {
    /// An executor over `registry`.
    pub fn new(registry: Arc<Registry>) -> Self {
        Executor { registry }
    }

    /// The registry calls run against.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Run one call. An unknown tool gives a not-found outcome that names
    /// the closest loaded tools.
    pub async fn call(&self, call: &ToolCall) -> ToolOutcome {
        let catalog = self.registry.catalog();
        let Some((plugin, _spec)) = catalog.tool(&call.tool) else {
            let names: Vec<&str> = catalog.tools().map(|(_, t)| t.name.as_str()).collect();
            return ToolOutcome::without_running(&call.id, &call.tool, Status::NotFound, unknown_tool(&call.tool, &names));
        };
        let args_json = serde_json::to_string(&call.args).expect("a JSON map serializes");
        let invocation = self.registry.invoke(plugin, &call.tool, &args_json).await;
        ToolOutcome::from_invocation(&call.id, &call.tool, invocation)
    }

    /// Run `calls`, in order or all at once; outcomes keep the calls' order.
    pub async fn call_all(&self, calls: Vec<ToolCall>, parallel: bool) -> Vec<ToolOutcome> {
        if !parallel {
            let mut outcomes = Vec::with_capacity(calls.len());
            for call in &calls {
                outcomes.push(self.call(call).await);
            }
            return outcomes;
        }
        let tasks: Vec<_> = calls
            .into_iter()
            .map(|call| {
                let executor = self.clone();
                tokio::spawn(async move { executor.call(&call).await })
            })
            .collect();
        let mut outcomes = Vec::with_capacity(tasks.len());
        for task in tasks {
            outcomes.push(task.await.expect("a call task does not panic"));
        }
        outcomes
    }
}
