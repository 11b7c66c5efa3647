//! The README's "Quickstart: embedding the host", kept here so that the
//! workspace builds it (a test checks that the README shows this file, and
//! runs it the way the README does).
//!
//! ```sh
//! cargo xtask build-plugins
//! cargo build --release -p toolhost --example one_turn
//! mkdir -p /tmp/myhost/plugins && cp target/plugins/examples/calc.wasm /tmp/myhost/plugins/
//! cp target/release/examples/one_turn /tmp/myhost/
//! cd /tmp/myhost && echo 'plugin_dirs = ["plugins"]' > toolhost.toml && ./one_turn
//! ```

use std::sync::Arc;
use toolhost::{
    AllowAll, Approvals, Declared, Executor, Pipeline, Policy, PromptCache, ProtocolId, Registry, ToolCall, ToolCallConfig, Turn,
};

// Count the host memory each call makes the host hold, so that its limit
// holds: a process-wide allocator, so the program installs it, not the library.
toolhost::count_host_memory!();

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Load the plugins the policy names; a refused one says why.
    let policy = Policy::load("toolhost.toml".as_ref())?;
    let registry = Arc::new(Registry::load(policy.runtime()).await?);
    for refusal in &registry.catalog().refused {
        eprintln!("refused: {}", toolhost::text::printable(&refusal.error.to_string()));
    }

    // Tell the model about the tools: this is its system prompt.
    let agent = ToolCallConfig::on();
    let catalog = registry.catalog();
    let prompt = PromptCache::new().render(&catalog, "assistant", &agent, agent.protocol, "Tools:\n{{tools}}");
    eprintln!("system prompt: {} tokens", prompt.tokens());

    // The model's finished reply (here, a VCP call), and the calls in it.
    let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calculate「末」,\nexpression:「始」6 * 7「末」\n<<<[END_TOOL_REQUEST]>>>";
    let declared = Declared::new(catalog.tools().map(|(_, tool)| tool.name.clone()));
    let parsed = agent.protocol.protocol().parse(reply, &declared);

    // Check, approve (here: whatever the policy's rules allow), run, format.
    let approvals = Arc::new(Approvals::new(&policy.approval));
    let pipeline = Pipeline::new(Executor::new(registry.clone()), approvals, Arc::new(AllowAll));
    let turn = Turn::for_agent("assistant", agent);
    let result = pipeline.run(&turn, ToolCall::from_reply(reply, &parsed.calls)).await;
    for message in &result.messages() {
        println!("{:?}: {}", message.role, message.content); // what the model sees next
    }

    // A call of your own: the arguments are any JSON object.
    let call = ToolCall::new("mine-1", "calculate", serde_json::json!({ "expression": "2 + 2" }));
    let result = pipeline.run(&Turn::direct(ProtocolId::JsonBlock), vec![call]).await;
    let outcome = &result.outcomes[0];
    println!("{} {}: {}", outcome.tool, outcome.status, outcome.output);
    Ok(())
}
