//! `files`: list, read and write files in the granted workspace.
//!
//! Listing and reading are moderate; reading also needs a person to approve
//! the result before a model sees it. Writing is sensitive and needs no
//! result approval (the call itself was approved).

use std::fs;
use std::path::{Component, Path, PathBuf};
use toolhost_sdk::prelude::*;

/// Where the granted workspace appears inside the sandbox.
const WORKSPACE: &str = "/workspace";
/// Reads longer than this are refused; the model should ask for less.
const MAX_READ_BYTES: u64 = 256 * 1024;

struct Files;

impl Plugin for Files {
    fn manifest() -> Manifest {
        Manifest::new("files", env!("CARGO_PKG_VERSION"), "List, read and write files in a granted workspace")
            .directory(WORKSPACE, Access::ReadWrite)
            .tool(
                Tool::new("list_files", "List the entries of a workspace directory, with sizes.")
                    .param("path", Type::String, "a directory relative to the workspace (default .)", Optional)
                    .permission(Permission::Moderate)
                    .agent_callable(true)
                    .tag("filesystem")
                    .example(json!({ "path": "." })),
            )
            .tool(
                Tool::new("read_file", "Read a UTF-8 text file from the workspace.")
                    .param("path", Type::String, "a file relative to the workspace", Required)
                    .permission(Permission::Moderate)
                    .result_approval(true)
                    .agent_callable(true)
                    .tag("filesystem")
                    .example(json!({ "path": "notes.txt" })),
            )
            .tool(
                Tool::new("write_file", "Create or overwrite a text file in the workspace.")
                    .param("path", Type::String, "a file relative to the workspace", Required)
                    .param("content", Type::String, "the new content", Required)
                    .permission(Permission::Sensitive)
                    .result_approval(false)
                    .agent_callable(true)
                    .tag("filesystem")
                    .example(json!({ "path": "notes.txt", "content": "hello" })),
            )
    }

    fn invoke(tool: &str, args: Args) -> Result<Output, ToolError> {
        match tool {
            "list_files" => {
                let dir = resolve(&args.get_opt::<String>("path")?.unwrap_or_else(|| ".".into()))?;
                let mut entries = Vec::new();
                for entry in fs::read_dir(&dir)? {
                    let entry = entry?;
                    let meta = entry.metadata()?;
                    entries.push(json!({
                        "name": entry.file_name().to_string_lossy(),
                        "kind": if meta.is_dir() { "dir" } else { "file" },
                        "bytes": meta.len(),
                    }));
                }
                entries.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
                Ok(json!({ "entries": entries }).into())
            }
            "read_file" => {
                let path = resolve(&args.get::<String>("path")?)?;
                let size = fs::metadata(&path)?.len();
                if size > MAX_READ_BYTES {
                    return Err(ToolError::failed(format!(
                        "{} is {size} bytes; this tool reads at most {MAX_READ_BYTES}",
                        path.display()
                    )));
                }
                Ok(fs::read_to_string(&path)?.into())
            }
            "write_file" => {
                let path = resolve(&args.get::<String>("path")?)?;
                let content: String = args.get("content")?;
                fs::write(&path, content.as_bytes())?;
                Ok(json!({ "written": path.display().to_string(), "bytes": content.len() }).into())
            }
            other => Err(ToolError::unknown_tool(other)),
        }
    }
}

toolhost_sdk::export_plugin!(Files);

/// Join a workspace-relative path. `..` and absolute paths are refused here
/// for a clear message; the sandbox would refuse them anyway.
fn resolve(relative: &str) -> Result<PathBuf, ToolError> {
    let relative = Path::new(relative);
    if relative.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Err(ToolError::invalid_args(format!(
            "`{}` must be a path inside the workspace, without `..` or a leading `/`",
            relative.display()
        )));
    }
    Ok(Path::new(WORKSPACE).join(relative))
}
