//! `hoarder`: Holds host memory, descriptors and host work without any grant. (Skeleton; filled in by its issue-6 fix.)

use toolhost_sdk::prelude::*;

struct Skeleton;

impl Plugin for Skeleton {
    fn manifest() -> Manifest {
        Manifest::new("hoarder", env!("CARGO_PKG_VERSION"), "Holds host memory, descriptors and host work without any grant")
            .tool(Tool::new("hoarder_noop", "Does nothing yet."))
    }

    fn invoke(_tool: &str, _args: Args) -> Result<Output, ToolError> {
        Ok("noop".into())
    }
}

toolhost_sdk::export_plugin!(Skeleton);
