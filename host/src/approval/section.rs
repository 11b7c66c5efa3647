//! `[approval]` as the policy file spells it: paths resolved, rules
//! compiled into an [`ApprovalConfig`].

use super::rules::{ApprovalConfig, DEFAULT_MEMORY_FILE, Rule, RuleAction};
use crate::config_error::ConfigError;
use crate::home_paths::expanded;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApprovalSection {
    #[serde(default, deserialize_with = "expanded")]
    memory_file: Option<PathBuf>,
    #[serde(default, deserialize_with = "expanded")]
    audit_log: Option<PathBuf>,
    #[serde(default)]
    rules: Vec<RuleSection>,
}

impl ApprovalSection {
    /// Paths resolved, the memory file beside the lock file unless named,
    /// the host key file `key_file`, every rule compiled; a bad rule names its place, `approval.rules[i].key`.
    pub(crate) fn resolve(
        self,
        lock_file: &Path,
        key_file: Option<PathBuf>,
        resolve: &dyn Fn(PathBuf) -> PathBuf,
        path: &Path,
    ) -> Result<ApprovalConfig, ConfigError> {
        let rules = self.rules.into_iter().enumerate().map(|(i, rule)| {
            Rule::new(rule.action, &rule.tool, rule.plugin, rule.agent, rule.args, rule.reason).map_err(|e| {
                ConfigError::Invalid {
                    path: path.to_owned(),
                    key: format!("approval.rules[{i}].{}", e.key),
                    value: e.value,
                    why: e.why,
                }
            })
        });
        Ok(ApprovalConfig {
            memory_file: self.memory_file.map_or_else(|| lock_file.with_file_name(DEFAULT_MEMORY_FILE), resolve),
            audit_log: self.audit_log.map(resolve),
            rules: rules.collect::<Result<_, _>>()?,
            key_file,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RuleSection {
    action: RuleAction,
    tool: String,
    plugin: Option<String>,
    agent: Option<String>,
    #[serde(default)]
    args: BTreeMap<String, String>,
    reason: Option<String>,
}
