//! [`ToolFilter`]: which of the loaded tools a door offers, by name
//! patterns, tags and permission levels — as `[mcp]` narrows them.

use crate::manifest::{Permission, ToolSpec};
use globset::{Glob, GlobSet, GlobSetBuilder};

/// Narrows a set of tools: a tool passes when its name matches one of the
/// patterns (if any are given), it has one of the tags (if any), and its
/// level is one of the levels (if any). An empty filter passes every tool.
#[derive(Debug, Clone, Default)]
pub struct ToolFilter {
    names: Option<(Vec<String>, GlobSet)>,
    tags: Vec<String>,
    levels: Vec<Permission>,
}

impl ToolFilter {
    /// Tools whose names match one of `patterns` (`*` and `?` globs, or
    /// plain names); an invalid pattern is returned with why.
    ///
    /// # Errors
    ///
    /// The pattern and why, when one is not a valid glob.
    pub fn names(mut self, patterns: &[String]) -> Result<Self, (String, String)> {
        let mut set = GlobSetBuilder::new();
        for pattern in patterns {
            set.add(Glob::new(pattern).map_err(|e| (pattern.clone(), e.kind().to_string()))?);
        }
        let set = set.build().map_err(|e| (patterns.join(", "), e.to_string()))?;
        self.names = Some((patterns.to_vec(), set));
        Ok(self)
    }

    /// Tools with at least one of `tags`; none given narrows nothing.
    pub fn tags(mut self, tags: &[String]) -> Self {
        self.tags = tags.to_vec();
        self
    }

    /// Tools of one of `levels`; none given narrows nothing.
    pub fn levels(mut self, levels: &[Permission]) -> Self {
        self.levels = levels.to_vec();
        self
    }

    /// Whether `tool` passes.
    pub fn matches(&self, tool: &ToolSpec) -> bool {
        let named = self.names.as_ref().is_none_or(|(_, set)| set.is_match(&tool.name));
        let tagged = self.tags.is_empty() || tool.tags.iter().any(|tag| self.tags.contains(tag));
        let leveled = self.levels.is_empty() || self.levels.contains(&tool.permission);
        named && tagged && leveled
    }
}

/// Two filters are equal when they were given the same patterns, tags and
/// levels.
impl PartialEq for ToolFilter {
    fn eq(&self, other: &Self) -> bool {
        let patterns = |filter: &Self| filter.names.as_ref().map(|(patterns, _)| patterns.clone());
        patterns(self) == patterns(other) && self.tags == other.tags && self.levels == other.levels
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, tags: &[&str], permission: Permission) -> ToolSpec {
        let mut tool = ToolSpec::new(name, "p", "");
        tool.tags = tags.iter().map(|t| t.to_string()).collect();
        tool.permission = permission;
        tool
    }

    #[test]
    fn names_tags_and_levels_each_narrow() {
        let calculate = tool("calculate", &["math"], Permission::Public);
        let write = tool("write_file", &["files"], Permission::Sensitive);
        assert!(ToolFilter::default().matches(&write), "an empty filter passes everything");
        let by_name = ToolFilter::default().names(&["calc*".into()]).unwrap();
        assert!(by_name.matches(&calculate) && !by_name.matches(&write));
        let by_tag = ToolFilter::default().tags(&["files".into()]);
        assert!(!by_tag.matches(&calculate) && by_tag.matches(&write));
        let by_level = ToolFilter::default().levels(&[Permission::Public, Permission::Moderate]);
        assert!(by_level.matches(&calculate) && !by_level.matches(&write));
        let all = ToolFilter::default().names(&["*".into()]).unwrap().tags(&["math".into()]).levels(&[Permission::Sensitive]);
        assert!(!all.matches(&calculate), "every part must pass");
        assert_eq!(ToolFilter::default().names(&["[".into()]).unwrap_err().0, "[");
    }
}
