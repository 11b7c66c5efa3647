//! `mcp_fixtures`: the fixture tools that the official MCP conformance
//! suite's tool scenarios call, as far as a toolhost tool can provide them
//! (text results and errors; see `tests/mcp/conformance-baseline.yml` and
//! `conformance-2026-baseline.yml` for the scenarios no WebAssembly tool
//! can serve). The 2026-07-28 scenarios of multi round-trip requests get
//! sensitive tools: the host asks to approve each call through
//! `input_required`, which is what those scenarios exercise (its
//! `requestState`, a tampered one refused); a tool cannot ask questions of
//! its own.

use toolhost_sdk::prelude::*;

struct Fixtures;

impl Plugin for Fixtures {
    fn manifest() -> Manifest {
        Manifest::new("mcp_fixtures", env!("CARGO_PKG_VERSION"), "Fixture tools for the MCP conformance suite")
            .tool(Tool::new("test_simple_text", "Return a simple text response.").agent_callable(true))
            .tool(Tool::new("test_error_handling", "Always fail, on purpose.").agent_callable(true))
            .tool(asked("test_input_required_result_elicitation"))
            .tool(asked("test_input_required_result_request_state"))
            .tool(asked("test_input_required_result_tampered_state"))
    }

    fn invoke(tool: &str, _args: Args) -> Result<Output, ToolError> {
        match tool {
            "test_simple_text" => Ok("This is a simple text response for testing.".into()),
            "test_error_handling" => Err(ToolError::failed("This tool intentionally returns an error for testing")),
            // The word the request-state scenario looks for: the call ran
            // after its approval came back with the state.
            "test_input_required_result_request_state" => Ok("state-ok: approved and run".into()),
            "test_input_required_result_elicitation" | "test_input_required_result_tampered_state" => {
                Ok("approved and run".into())
            }
            other => Err(ToolError::unknown_tool(other)),
        }
    }
}

/// A sensitive tool: every call is asked.
fn asked(name: &str) -> Tool {
    Tool::new(name, "Run only once a person approves it.").permission(Permission::Sensitive).agent_callable(true)
}

toolhost_sdk::export_plugin!(Fixtures);
