//! The host, not the plugin, sets the floor of a tool's level: a tool whose
//! plugin is granted a read-write directory, HTTP hosts or environment
//! variables is at least moderate, whatever it declares, until a rule
//! naming the plugin and the tool lets it run.

use crate::built::{HOSTILE, UNDERSTATED};
use crate::support::TestHost;
use serde_json::json;
use std::sync::Arc;
use toolhost::{
    Approvals, DenyAll, Executor, Permission, Pipeline, ProtocolId, Registry, Status, ToolCall, ToolCallConfig, Turn,
};

/// `understated` (a writer declared public) with `/workspace` granted
/// read-write over a fresh directory, and `extra` policy text.
async fn understated(extra: &str) -> (TestHost, tempfile::TempDir) {
    let workspace = tempfile::tempdir().unwrap();
    let policy = format!(
        "[plugins.understated]\nfile = \"understated.wasm\"\n\
         dirs = {{ \"/workspace\" = {{ host = {:?}, access = \"read-write\" }} }}\n{extra}",
        workspace.path().display().to_string()
    );
    (TestHost::new(&[UNDERSTATED], &policy).await, workspace)
}

/// One `save_note` call as agent `coder`, nobody attached to approve.
async fn save_note(host: &TestHost, path: &str) -> (Status, String) {
    let (registry, approvals) = (&host.registry, Approvals::new(&host.config.approval));
    let pipeline = Pipeline::new(Executor::new(registry.clone()), Arc::new(approvals), Arc::new(DenyAll));
    let mut turn = Turn::for_agent("coder", ToolCallConfig::on());
    turn.protocol = ProtocolId::JsonBlock;
    let args = json!({ "path": path, "content": "x" }).as_object().unwrap().clone();
    let result = pipeline.run(&turn, vec![ToolCall::new("c1", "save_note", args)]).await;
    (result.outcomes[0].status, result.outcomes[0].output.clone())
}

fn levels(registry: &Registry, tool: &str) -> (Permission, Permission) {
    let catalog = registry.catalog();
    let (_, spec) = catalog.tool(tool).unwrap_or_else(|| panic!("{tool} is loaded"));
    (spec.permission, spec.declared_permission)
}

#[tokio::test]
async fn a_writer_declared_public_asks_and_nobody_attached_denies_it() {
    let (host, ws) = understated("").await;
    assert_eq!(levels(&host.registry, "save_note"), (Permission::Moderate, Permission::Public));
    let (status, output) = save_note(&host, "a.txt").await;
    assert_eq!(status, Status::Denied, "{output}");
    assert!(!ws.path().join("a.txt").exists(), "nothing was written");
}

#[tokio::test]
async fn an_allow_rule_naming_the_plugin_and_the_tool_lets_it_run() {
    let rule = "[[approval.rules]]\naction = \"allow\"\nplugin = \"understated\"\ntool = \"save_note\"\n";
    let (host, ws) = understated(rule).await;
    assert_eq!(save_note(&host, "a.txt").await.0, Status::Success);
    assert!(ws.path().join("a.txt").exists());

    // The same rule for another plugin does not.
    let other = "[[approval.rules]]\naction = \"allow\"\nplugin = \"files\"\ntool = \"save_note\"\n";
    let (host, ws) = understated(other).await;
    assert_eq!(save_note(&host, "b.txt").await.0, Status::Denied);
    assert!(!ws.path().join("b.txt").exists());
}

#[tokio::test]
async fn http_hosts_and_environment_variables_raise_the_floor_a_read_only_directory_does_not() {
    let data = tempfile::tempdir().unwrap();
    let dir = |access: &str| {
        format!("dirs = {{ \"/data\" = {{ host = {:?}, access = \"{access}\" }} }}\n", data.path().display().to_string())
    };
    // `hostile` asks for /data, PATH and 127.0.0.1; its tools are declared public.
    let floor = |section: String| async move {
        let host = TestHost::new(&[HOSTILE], &format!("[plugins.hostile]\nfile = \"hostile.wasm\"\n{section}")).await;
        levels(&host.registry, "read_env")
    };
    assert_eq!(floor(String::new()).await, (Permission::Public, Permission::Public), "no grants");
    assert_eq!(floor(dir("read")).await.0, Permission::Public, "reading what the operator put there");
    assert_eq!(floor("env = [\"PATH\"]\n".into()).await.0, Permission::Moderate);
    assert_eq!(floor("http_hosts = [\"127.0.0.1\"]\n".into()).await.0, Permission::Moderate);
}

#[tokio::test]
async fn a_plugin_without_its_read_write_grant_keeps_its_declared_level() {
    let host = TestHost::new(&[UNDERSTATED], "").await;
    assert_eq!(levels(&host.registry, "save_note"), (Permission::Public, Permission::Public));
}
