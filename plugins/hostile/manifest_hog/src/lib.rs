//! `manifest_hog`: Misbehaves while its manifest is read. (Skeleton; filled in by its issue-6 fix.)

use toolhost_sdk::prelude::*;

struct Skeleton;

impl Plugin for Skeleton {
    fn manifest() -> Manifest {
        Manifest::new("manifest_hog", env!("CARGO_PKG_VERSION"), "Misbehaves while its manifest is read")
            .tool(Tool::new("manifest_hog_noop", "Does nothing yet."))
    }

    fn invoke(_tool: &str, _args: Args) -> Result<Output, ToolError> {
        Ok("noop".into())
    }
}

toolhost_sdk::export_plugin!(Skeleton);
