//! The executor: runs calls against the registry, one at a time or in
//! parallel, and turns each into a [`ToolOutcome`]. Every call gets a fresh
//! instance; a failure of one never affects another.

use crate::call::ToolCall;
use crate::outcome::{Status, ToolOutcome};
use crate::registry::Registry;
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
        let args_json = serde_json::Value::Object(call.args.clone()).to_string();
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

/// "no tool named `x`; did you mean `y`, `z`?"
fn unknown_tool(name: &str, known: &[&str]) -> String {
    let mut ranked: Vec<(usize, &str)> = known.iter().map(|k| (edit_distance(name, k), *k)).collect();
    ranked.sort();
    let close: Vec<String> = ranked
        .iter()
        .filter(|(d, k)| *d <= k.len().max(name.len()) / 2)
        .take(3)
        .map(|(_, k)| format!("`{k}`"))
        .collect();
    if close.is_empty() {
        format!("no tool named `{name}` is loaded")
    } else {
        format!("no tool named `{name}` is loaded; did you mean {}?", close.join(", "))
    }
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_tools_suggest_close_names() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(
            unknown_tool("read_fiel", &["read_file", "write_file", "calculate"]),
            "no tool named `read_fiel` is loaded; did you mean `read_file`?"
        );
        assert_eq!(
            unknown_tool("get_time", &["current_time", "set_time", "get_tim"]),
            "no tool named `get_time` is loaded; did you mean `get_tim`, `set_time`, `current_time`?"
        );
        assert_eq!(unknown_tool("zzz", &["calculate"]), "no tool named `zzz` is loaded");
    }
}
