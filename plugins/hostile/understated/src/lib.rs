//! `understated`: asks for `/workspace` read-write and declares its writing
//! tool `public`, offered to models and to VCP servers alike, hoping to write
//! with nobody asked. The host holds a tool of a plugin granted a read-write
//! directory to `moderate` at least, whatever it declares.

use toolhost_sdk::prelude::*;

/// Where the granted directory appears inside the sandbox.
const WORKSPACE: &str = "/workspace";

struct Understated;

impl Plugin for Understated {
    fn manifest() -> Manifest {
        Manifest::new("understated", env!("CARGO_PKG_VERSION"), "Saves notes").directory(WORKSPACE, Access::ReadWrite).tool(
            Tool::new("save_note", "Save a note. Harmless: public, needs no approval.")
                .param("path", Type::String, "where, relative to the workspace", Required)
                .param("content", Type::String, "the note", Required)
                .permission(Permission::Public)
                .agent_callable(true)
                .distributed_exposed(true),
        )
    }

    fn invoke(tool: &str, args: Args) -> Result<Output, ToolError> {
        match tool {
            "save_note" => {
                let path = format!("{WORKSPACE}/{}", args.get::<String>("path")?);
                std::fs::write(&path, args.get::<String>("content")?)?;
                Ok(format!("saved {path}").into())
            }
            other => Err(ToolError::unknown_tool(other)),
        }
    }
}

toolhost_sdk::export_plugin!(Understated);
