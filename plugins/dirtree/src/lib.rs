//! `dirtree`: a `tree`-like listing of the granted directory.

use std::fs;
use std::path::Path;
use toolhost_sdk::prelude::*;

/// Where the granted directory appears inside the sandbox.
const ROOT: &str = "/tree";
/// Listings longer than this are cut, so a huge tree cannot flood the model.
const MAX_ENTRIES: usize = 2_000;

struct DirTree;

impl Plugin for DirTree {
    fn manifest() -> Manifest {
        Manifest::new("dirtree", env!("CARGO_PKG_VERSION"), "A tree-like listing of a granted directory")
            .directory(ROOT, Access::Read)
            .tool(
                Tool::new("dir_tree", "List a directory as a tree, like the `tree` command.")
                    .param("path", Type::String, "a directory under /tree (default /tree)", Optional)
                    .param("max_depth", Type::Integer, "how many levels to descend (default 3)", Optional)
                    .param("ignore", Type::Json, "names to skip, e.g. [\".git\", \"target\"]", Optional)
                    .agent_callable(true)
                    .tag("filesystem")
                    .example(json!({ "path": "/tree", "max_depth": 2, "ignore": [".git"] })),
            )
    }

    fn invoke(tool: &str, args: Args) -> Result<Output, ToolError> {
        if tool != "dir_tree" {
            return Err(ToolError::unknown_tool(tool));
        }
        let path = args.get_opt::<String>("path")?.unwrap_or_else(|| ROOT.into());
        let max_depth = args.get_opt::<u32>("max_depth")?.unwrap_or(3);
        let ignore =
            args.get_opt::<Vec<String>>("ignore")?.unwrap_or_else(|| vec![".git".into(), "target".into(), "node_modules".into()]);
        let mut listing = Listing { lines: vec![path.clone()], dirs: 0, files: 0, ignore, max_depth };
        listing.walk(Path::new(&path), "", 1)?;
        let mut text = listing.lines.join("\n");
        text.push_str(&format!("\n\n{} directories, {} files", listing.dirs, listing.files));
        Ok(text.into())
    }
}

toolhost_sdk::export_plugin!(DirTree);

struct Listing {
    lines: Vec<String>,
    dirs: usize,
    files: usize,
    ignore: Vec<String>,
    max_depth: u32,
}

impl Listing {
    fn walk(&mut self, dir: &Path, prefix: &str, depth: u32) -> Result<(), ToolError> {
        let entries = fs::read_dir(dir).map_err(|e| ToolError::failed(format!("cannot list {}: {e}", dir.display())))?;
        let mut entries: Vec<_> = entries
            .filter_map(Result::ok)
            .filter(|e| !self.ignore.iter().any(|i| e.file_name().to_string_lossy() == i.as_str()))
            .collect();
        entries.sort_by_key(|e| e.file_name());
        let count = entries.len();
        for (index, entry) in entries.into_iter().enumerate() {
            if self.lines.len() >= MAX_ENTRIES {
                self.lines.push(format!("{prefix}… (cut at {MAX_ENTRIES} entries)"));
                return Ok(());
            }
            let last = index + 1 == count;
            let name = entry.file_name().to_string_lossy().into_owned();
            self.lines.push(format!("{prefix}{}{name}", if last { "└── " } else { "├── " }));
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                self.dirs += 1;
                if depth < self.max_depth {
                    let inner = format!("{prefix}{}", if last { "    " } else { "│   " });
                    self.walk(&entry.path(), &inner, depth + 1)?;
                }
            } else {
                self.files += 1;
            }
        }
        Ok(())
    }
}
