//! `bloated`: a manifest far larger than the manifest cap (256 KiB), built
//! at load time so the component stays small: one tool whose description
//! alone is 4 MiB. Unchecked, it loads and renders a prompt of about a
//! million tokens.

use toolhost_sdk::prelude::*;

struct Bloated;

/// The size of the over-long description.
const DESCRIPTION_BYTES: usize = 4 << 20;

impl Plugin for Bloated {
    fn manifest() -> Manifest {
        let description = "Describes itself at great length. ".repeat(DESCRIPTION_BYTES / 34 + 1);
        Manifest::new("bloated", env!("CARGO_PKG_VERSION"), "A manifest far larger than the manifest cap").tool(
            Tool::new("flood", &description[..DESCRIPTION_BYTES])
                .param("text", Type::String, "anything", Required)
                .agent_callable(true),
        )
    }

    fn invoke(_tool: &str, _args: Args) -> Result<Output, ToolError> {
        Ok("flooded".into())
    }
}

toolhost_sdk::export_plugin!(Bloated);
