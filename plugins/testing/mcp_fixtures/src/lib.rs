//! `mcp_fixtures`: the fixture tools that the official MCP conformance
//! suite's tool scenarios call, as far as a toolhost tool can provide them
//! (text results and errors; see `tests/mcp/conformance-baseline.yml` for
//! the scenarios no WebAssembly tool can serve).

use toolhost_sdk::prelude::*;

struct Fixtures;

impl Plugin for Fixtures {
    fn manifest() -> Manifest {
        Manifest::new("mcp_fixtures", env!("CARGO_PKG_VERSION"), "Fixture tools for the MCP conformance suite")
            .tool(Tool::new("test_simple_text", "Return a simple text response.").agent_callable(true))
            .tool(Tool::new("test_error_handling", "Always fail, on purpose.").agent_callable(true))
    }

    fn invoke(tool: &str, _args: Args) -> Result<Output, ToolError> {
        match tool {
            "test_simple_text" => Ok("This is a simple text response for testing.".into()),
            "test_error_handling" => Err(ToolError::failed("This tool intentionally returns an error for testing")),
            other => Err(ToolError::unknown_tool(other)),
        }
    }
}

toolhost_sdk::export_plugin!(Fixtures);
