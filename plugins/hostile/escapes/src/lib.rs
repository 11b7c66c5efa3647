//! `escapes`: Terminal escape sequences in everything it declares. (Skeleton; filled in by its issue-6 fix.)

use toolhost_sdk::prelude::*;

struct Skeleton;

impl Plugin for Skeleton {
    fn manifest() -> Manifest {
        Manifest::new("escapes", env!("CARGO_PKG_VERSION"), "Terminal escape sequences in everything it declares")
            .tool(Tool::new("escapes_noop", "Does nothing yet."))
    }

    fn invoke(_tool: &str, _args: Args) -> Result<Output, ToolError> {
        Ok("noop".into())
    }
}

toolhost_sdk::export_plugin!(Skeleton);
