//! Policy mistakes that load without error but do nothing: a section for
//! a plugin that is not loaded, a grant the plugin never asked for, a
//! rename of a tool the plugin does not declare, a tool toggle naming no
//! tool, a `{{tool:NAME}}` in an agent's system prompt naming no tool
//! offered to it, an agent whose tool calling is off, an approval rule
//! naming a plugin that is not loaded or none of its tools. Each is found against what
//! actually loaded and named with the closest real name, so a typo is seen
//! rather than silently ignored.

use crate::config::Policy;
use crate::discovery::{unknown_template_tools, visible_tools};
use crate::registry::Catalog;
use crate::sandbox::Withheld;
use crate::suggest::did_you_mean;

/// One mistake, in words for a person: the key and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PolicyWarning {
    /// The key, e.g. `plugins.file.dirs."/workspace"`.
    pub key: String,
    /// What is wrong with it.
    pub message: String,
}

impl std::fmt::Display for PolicyWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

/// The mistakes in `policy`, judged against the plugins in `catalog`.
pub fn check_policy(policy: &Policy, catalog: &Catalog) -> Vec<PolicyWarning> {
    let mut warnings = Vec::new();
    let mut warn = |key: String, message: String| warnings.push(PolicyWarning { key, message });
    let plugins: Vec<&str> = catalog.plugins.iter().map(|p| p.name()).collect();
    for (name, section) in &policy.plugins {
        let Some(plugin) = catalog.plugins.iter().find(|p| p.name() == name) else {
            warn(format!("plugins.{name}"), format!("no loaded plugin is named `{name}`{}", did_you_mean(name, &plugins)));
            continue;
        };
        for unasked in section.allowance.unasked(&plugin.manifest.capabilities) {
            let asked: Vec<&str> = unasked.asked.iter().map(String::as_str).collect();
            warn(format!("plugins.{name}.{}", unasked.key), never_asked(unasked.what, &unasked.item, &asked));
        }
        let declared: Vec<&str> = plugin.manifest.tools.iter().map(|t| plugin.declared_name(&t.name)).collect();
        for tool in section.rename.keys().filter(|t| !declared.contains(&t.as_str())) {
            warn(
                format!("plugins.{name}.rename.{tool}"),
                format!(
                    "the plugin declares no tool `{tool}`, so the rename does nothing (it declares {}){}",
                    declared.join(", "),
                    did_you_mean(tool, &declared)
                ),
            );
        }
    }
    for (i, rule) in policy.approval.rules.iter().enumerate() {
        let Some(name) = rule.plugin() else { continue };
        let key = format!("approval.rules[{i}].plugin");
        match catalog.plugins.iter().find(|p| p.name() == name) {
            None => {
                warn(key, format!("no loaded plugin is named `{name}`, so the rule does nothing{}", did_you_mean(name, &plugins)))
            }
            Some(plugin) if !plugin.manifest.tools.iter().any(|t| rule.covers(name, &t.name)) => {
                let offered: Vec<&str> = plugin.manifest.tools.iter().map(|t| t.name.as_str()).collect();
                warn(
                    key,
                    format!(
                        "`{name}` has no tool the rule's `tool` matches, so the rule does nothing (it has {})",
                        offered.join(", ")
                    ),
                );
            }
            Some(_) => {}
        }
    }
    let tools: Vec<&str> = catalog.tools().map(|(_, t)| t.name.as_str()).collect();
    for (agent, config) in &policy.agents {
        if !config.enabled {
            warn(
                format!("agents.{agent}.enabled"),
                "tool calling is off for this agent: its model is offered no tools (set enabled = true)".into(),
            );
        }
        for tool in config.tool_toggles.keys().filter(|t| !tools.contains(&t.as_str())) {
            warn(
                format!("agents.{agent}.tool_toggles.{tool}"),
                format!("no loaded tool is named `{tool}`{}", did_you_mean(tool, &tools)),
            );
        }
        let key = if config.system_prompt_file.is_some() { "system_prompt_file" } else { "system_prompt" };
        match config.system_prompt_template() {
            Ok(template) => {
                let offered = visible_tools(catalog, config);
                let names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
                for unknown in unknown_template_tools(&template, &offered) {
                    warn(
                        format!("agents.{agent}.{key}"),
                        format!(
                            "{{{{tool:{unknown}}}}} names no tool offered to this agent, so it renders as nothing{}",
                            did_you_mean(unknown, &names)
                        ),
                    );
                }
            }
            Err(error) => warn(format!("agents.{agent}.{key}"), format!("cannot be read: {error}")),
        }
    }
    warnings
}

/// Tools offered to models whose plugin asks for a directory or HTTP host
/// the policy withholds: they fail where they use it (`toolhost prompt`
/// leaves them out). One warning per capability withheld, naming the key
/// that would grant it. `toolhost check` fails on these.
pub fn missing_grants(catalog: &Catalog) -> Vec<PolicyWarning> {
    let mut warnings = Vec::new();
    for plugin in &catalog.plugins {
        let tools: Vec<&str> = plugin.manifest.tools.iter().filter(|t| t.agent_callable).map(|t| t.name.as_str()).collect();
        if tools.is_empty() {
            continue;
        }
        let name = plugin.name();
        for withheld in plugin.missing_grants() {
            let (key, what) = match withheld {
                Withheld::Directory { guest_path } => {
                    (format!("plugins.{name}.dirs.\"{guest_path}\""), format!("the directory {guest_path}"))
                }
                Withheld::HttpHost { host } => (format!("plugins.{name}.http_hosts"), format!("the HTTP host {host}")),
                Withheld::Env { .. } => continue,
            };
            let message = format!(
                "the plugin asks for {what}, which the policy does not grant, so its tools ({}) fail where they use it \
                 and `toolhost prompt` leaves them out; grant it, or offer a tool anyway with an agent's tool_toggles = {{ {} = true }}",
                tools.join(", "),
                tools[0]
            );
            warnings.push(PolicyWarning { key, message });
        }
    }
    warnings
}

/// Not mistakes: what each approval rule that names no plugin matches,
/// plugin by plugin, so a person sees when a glob written for one
/// plugin's tools also takes in another's.
pub fn unscoped_rules(policy: &Policy, catalog: &Catalog) -> Vec<PolicyWarning> {
    let rules = policy.approval.rules.iter().enumerate().filter(|(_, rule)| rule.plugin().is_none());
    rules
        .map(|(i, rule)| {
            let matched: Vec<String> = catalog
                .tools()
                .filter(|(plugin, tool)| rule.covers(plugin.name(), &tool.name))
                .map(|(plugin, tool)| format!("{} of {}", tool.name, plugin.name()))
                .collect();
            let message = if matched.is_empty() {
                format!("`{rule}` names no plugin and matches no loaded tool")
            } else {
                format!("`{rule}` names no plugin; it matches {}", matched.join(", "))
            };
            PolicyWarning { key: format!("approval.rules[{i}]"), message }
        })
        .collect()
}

fn never_asked(what: &str, granted: &str, asked: &[&str]) -> String {
    let asked_for = if asked.is_empty() { "nothing of the kind".to_owned() } else { asked.join(", ") };
    format!(
        "the plugin never asks for the {what} `{granted}`, so the grant does nothing (it asks for {asked_for}){}",
        did_you_mean(granted, asked)
    )
}
