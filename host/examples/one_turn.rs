//! Embed toolhost and run one turn: load the plugins a policy names, tell
//! the model about them, find the calls in its reply, check, approve and
//! run them, and print what the model sees next.
//!
//! ```sh
//! cargo xtask build-plugins
//! cargo run --release -p toolhost --example one_turn -- target/plugins/examples
//! ```

use std::sync::Arc;
use toolhost::{
    AllowAll, Approvals, Declared, Executor, Pipeline, Policy, PromptCache, Registry, ToolCall, ToolCallConfig, Turn,
};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // A policy whose only setting is the plugin directory, as a
    // `toolhost.toml` beside nothing else would say it.
    let plugins = std::env::args().nth(1).unwrap_or_else(|| "target/plugins/examples".into());
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("toolhost.toml");
    let plugins = std::fs::canonicalize(&plugins)?;
    std::fs::write(&file, format!("plugin_dirs = [{:?}]\n", plugins.display().to_string()))?;
    let registry = Arc::new(Registry::load(Policy::load(&file)?).await?);

    // Tell the model about the tools: this is its system prompt.
    let agent = ToolCallConfig { enabled: true, ..ToolCallConfig::default() };
    let catalog = registry.catalog();
    let prompt = PromptCache::new().render(&catalog, "assistant", &agent, agent.protocol, "Tools:\n{{tools}}");
    println!("--- the system prompt\n{}", prompt.text);

    // The model's finished reply (here, a VCP call), and the calls in it.
    let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calculate「末」,\nexpression:「始」6 * 7「末」\n<<<[END_TOOL_REQUEST]>>>";
    let declared = Declared::new(catalog.tools().map(|(_, tool)| tool.name.clone()));
    let parsed = agent.protocol.protocol().parse(reply, &declared);

    // Check, approve (here: everything the rules allow), run, and format.
    let approvals = Arc::new(Approvals::new(&registry.policy().approval));
    let pipeline = Pipeline::new(Executor::new(registry.clone()), approvals, Arc::new(AllowAll));
    let result = pipeline.run(&Turn::for_agent("assistant", agent), ToolCall::from_reply(reply, &parsed.calls)).await;
    println!("--- what the model sees next");
    for message in &result.messages {
        println!("{:?}: {}", message.role, message.content);
    }
    eprintln!("{}", result.summary);
    Ok(())
}
