//! The MCP door's agent: its `[agents.NAME]` section decides what the
//! server offers, whether the policy file or the embedding program names it.

use crate::built::CALC;
use crate::support::TestHost;
use std::sync::Arc;
use toolhost::mcp::McpConfig;
use toolhost::{Approvals, DenyAll, McpServer, Pipeline, ToolCallConfig};

fn offered(host: &TestHost, config: McpConfig) -> Vec<String> {
    let approvals = Arc::new(Approvals::new(&host.config.approval));
    McpServer::new(Pipeline::new(host.executor.clone(), approvals, Arc::new(DenyAll)), config).offered_tools()
}

#[tokio::test]
async fn the_agents_section_in_the_policy_file_turns_the_mcp_tools_off() {
    let host = TestHost::new(&[CALC], "[agents.mcp]\nenabled = false\n").await;
    assert_eq!(offered(&host, host.config.mcp.clone()), Vec::<String>::new());
    let host = TestHost::new(&[CALC], "[agents.other]\nenabled = false\n").await;
    assert_eq!(offered(&host, host.config.mcp.clone()), ["calculate"], "an agent with no section serves its tools");
}

#[tokio::test]
async fn an_agent_chosen_by_the_program_brings_its_own_section() {
    let host = TestHost::new(&[CALC], "[agents.desk]\nenabled = false\n").await;
    let config = McpConfig::default().with_agent("desk", host.config.agents.get("desk").cloned());
    assert_eq!(offered(&host, config), Vec::<String>::new());
    let mut toggled = ToolCallConfig::on();
    toggled.tool_toggles = [("calculate".to_owned(), false)].into();
    let config = McpConfig::default().with_agent("desk", Some(toggled));
    assert_eq!(offered(&host, config), Vec::<String>::new(), "a toggle is obeyed");
    assert_eq!(offered(&host, McpConfig::default().with_agent("desk", None)), ["calculate"]);
}
