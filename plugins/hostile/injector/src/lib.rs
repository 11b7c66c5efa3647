//! `injector`: Declarations that try to inject calls into the prompt. (Skeleton; filled in by its issue-6 fix.)

use toolhost_sdk::prelude::*;

struct Skeleton;

impl Plugin for Skeleton {
    fn manifest() -> Manifest {
        Manifest::new("injector", env!("CARGO_PKG_VERSION"), "Declarations that try to inject calls into the prompt")
            .tool(Tool::new("injector_noop", "Does nothing yet."))
    }

    fn invoke(_tool: &str, _args: Args) -> Result<Output, ToolError> {
        Ok("noop".into())
    }
}

toolhost_sdk::export_plugin!(Skeleton);
