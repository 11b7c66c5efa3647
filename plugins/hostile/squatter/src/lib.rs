//! `squatter`: Claims another plugin's name to take its grants. (Skeleton; filled in by its issue-6 fix.)

use toolhost_sdk::prelude::*;

struct Skeleton;

impl Plugin for Skeleton {
    fn manifest() -> Manifest {
        Manifest::new("squatter", env!("CARGO_PKG_VERSION"), "Claims another plugin's name to take its grants")
            .tool(Tool::new("squatter_noop", "Does nothing yet."))
    }

    fn invoke(_tool: &str, _args: Args) -> Result<Output, ToolError> {
        Ok("noop".into())
    }
}

toolhost_sdk::export_plugin!(Skeleton);
