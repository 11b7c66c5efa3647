//! The names the host gives a plugin's tools. `[plugins.NAME]` may give a
//! tool another name, in full (`rename = { calculate = "misc_calculate" }`),
//! and put a prefix before the name of every tool it does not rename
//! (`tool_prefix = "misc_"`), so that two plugins declaring one tool name
//! can both load. The new name is the only one the host knows: the catalog,
//! prompts, parsers, approvals, agents' `tool_toggles` and every door see
//! it; the plugin alone is still called with the name it declares.
//!
//! Renaming follows the plugin's name alone, whatever the section's
//! [`Binding`](super::Binding): unlike a grant it earns nothing, as
//! a plugin could declare the new name itself, and the new names are
//! checked for collisions like declared ones. A name comes from the
//! policy, so one that cannot be (a prefixed name too long, or a rename to
//! the name of another of the plugin's tools) refuses that component, naming
//! the key; new names of the wrong form are refused with the policy itself.

use super::LoadError;
use super::policy::PluginPolicy;
use crate::manifest::{MAX_TOOL_NAME_LEN, PluginManifest, is_valid_name};
use std::collections::BTreeMap;

impl PluginPolicy {
    /// The name the host gives the plugin's tool `declared`: its `rename`
    /// if it has one (the prefix is not added to it), else `tool_prefix`
    /// and the declared name.
    pub fn tool_name(&self, declared: &str) -> String {
        match (self.rename.get(declared), &self.tool_prefix) {
            (Some(name), _) => name.clone(),
            (None, Some(prefix)) => format!("{prefix}{declared}"),
            (None, None) => declared.to_owned(),
        }
    }
}

/// Give the tools of `manifest` the names `section` gives them; `file` is
/// the component as a refusal names it. Returns the declared name of each renamed tool, by its new
/// name.
pub(super) fn rename_tools(
    manifest: &mut PluginManifest,
    section: Option<&PluginPolicy>,
    file: &str,
) -> Result<BTreeMap<String, String>, LoadError> {
    let Some(section) = section else { return Ok(BTreeMap::new()) };
    let names: Vec<String> = manifest.tools.iter().map(|tool| section.tool_name(&tool.name)).collect();
    let plugin = &manifest.name;
    for (tool, name) in manifest.tools.iter().zip(&names) {
        let refused = |key: String, why: String| LoadError::ToolName {
            file: file.to_owned(),
            key: format!("plugins.{plugin}.{key}"),
            tool: tool.name.clone(),
            name: name.clone(),
            why,
        };
        if !section.rename.contains_key(&tool.name) {
            // The prefix's characters are checked with the policy; only its
            // length with this name is left.
            if !is_valid_name(name) {
                return Err(refused(
                    "tool_prefix".into(),
                    format!("is longer than a tool name may be ({MAX_TOOL_NAME_LEN} bytes)"),
                ));
            }
            continue;
        }
        // Two tools not renamed never meet (one prefix before distinct
        // names), and the policy gives no two renames one name: a clash
        // has a renamed tool in it, which is blamed.
        let same = manifest.tools.iter().zip(&names).find(|(other, other_name)| other.name != tool.name && *other_name == name);
        if let Some((other, _)) = same {
            return Err(refused(format!("rename.{}", tool.name), format!("its tool `{}` is called too", other.name)));
        }
    }
    let mut renamed = BTreeMap::new();
    for (tool, name) in manifest.tools.iter_mut().zip(names) {
        if name != tool.name {
            renamed.insert(name.clone(), std::mem::replace(&mut tool.name, name));
        }
    }
    Ok(renamed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{Capabilities, ToolSpec};

    fn files() -> PluginManifest {
        let tool = |name: &str| ToolSpec::new(name, "files", "a tool");
        PluginManifest {
            name: "files".into(),
            version: semver::Version::new(1, 0, 0),
            description: String::new(),
            api_version: semver::Version::new(0, 1, 0),
            tools: vec![tool("read_file"), tool("write_file"), tool("list_files")],
            capabilities: Capabilities::default(),
        }
    }

    /// The tool names of `files` under `section`, and the declared name of
    /// each renamed one; or the refusal's text.
    fn renamed(section: &str) -> Result<(Vec<String>, BTreeMap<String, String>), String> {
        let section = super::super::policy::parsed_section(section, crate::sandbox::Limits::default());
        let mut manifest = files();
        let renamed = rename_tools(&mut manifest, Some(&section), "files.wasm").map_err(|e| e.to_string())?;
        Ok((manifest.tools.into_iter().map(|t| t.name).collect(), renamed))
    }

    #[test]
    fn a_rename_is_the_full_name_and_the_prefix_goes_before_the_others() {
        let (names, declared) = renamed("rename = { read_file = \"cat\" }\ntool_prefix = \"fs_\"\n").unwrap();
        assert_eq!(names, ["cat", "fs_write_file", "fs_list_files"]);
        assert_eq!(declared["cat"], "read_file");
        assert_eq!(declared["fs_write_file"], "write_file");
        let (names, declared) = renamed("rename = { list_files = \"list_files\" }\n").unwrap();
        assert_eq!((names, declared), (vec!["read_file".into(), "write_file".into(), "list_files".into()], BTreeMap::new()));
    }

    #[test]
    fn a_name_the_plugin_cannot_have_refuses_it_naming_the_key() {
        assert_eq!(
            renamed("rename = { read_file = \"write_file\" }\n").unwrap_err(),
            "files.wasm is refused: plugins.files.rename.read_file gives its tool `read_file` the name `write_file`, \
             which its tool `write_file` is called too"
        );
        assert_eq!(
            renamed("rename = { read_file = \"fs_list_files\" }\ntool_prefix = \"fs_\"\n").unwrap_err(),
            "files.wasm is refused: plugins.files.rename.read_file gives its tool `read_file` the name `fs_list_files`, \
             which its tool `list_files` is called too"
        );
        let prefix = "p".repeat(55);
        assert_eq!(
            renamed(&format!("tool_prefix = \"{prefix}\"\n")).unwrap_err(),
            format!(
                "files.wasm is refused: plugins.files.tool_prefix gives its tool `write_file` the name \
                 `{prefix}write_file`, which is longer than a tool name may be (64 bytes)"
            )
        );
        assert!(renamed(&format!("tool_prefix = \"{prefix}\"\nrename = {{ write_file = \"w\", list_files = \"l\" }}\n")).is_ok());
    }
}
