//! `api_mismatch`: claims toolhost API 9.0.0, which no host of API 0.x may
//! load.

use toolhost_sdk::prelude::*;

struct ApiMismatch;

impl Plugin for ApiMismatch {
    fn manifest() -> Manifest {
        Manifest::new("api_mismatch", env!("CARGO_PKG_VERSION"), "Built against a future API")
            .api_version("9.0.0")
            .tool(Tool::new("from_the_future", "Never runs."))
    }

    fn invoke(tool: &str, _args: Args) -> Result<Output, ToolError> {
        Err(ToolError::unknown_tool(tool))
    }
}

toolhost_sdk::export_plugin!(ApiMismatch);
