//! `bloated`: A manifest far larger than the manifest cap. (Skeleton; filled in by its issue-6 fix.)

use toolhost_sdk::prelude::*;

struct Skeleton;

impl Plugin for Skeleton {
    fn manifest() -> Manifest {
        Manifest::new("bloated", env!("CARGO_PKG_VERSION"), "A manifest far larger than the manifest cap")
            .tool(Tool::new("bloated_noop", "Does nothing yet."))
    }

    fn invoke(_tool: &str, _args: Args) -> Result<Output, ToolError> {
        Ok("noop".into())
    }
}

toolhost_sdk::export_plugin!(Skeleton);
