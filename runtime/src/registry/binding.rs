//! Which policy applies to a component. A plugin chooses the name it
//! declares, so `[plugins.NAME]` is found by that name but its grants apply
//! only when the section is bound to this very component by something the
//! plugin cannot choose: the file name the host stored it under, its
//! SHA-256, or a pin in the lock file (see [`Binding`]). An unbound section
//! grants nothing, and its limits apply only where they are stricter than
//! the defaults.

use super::policy::{Binding, RuntimePolicy};
use crate::sandbox::{Allowance, Limits};
use serde::Serialize;
use std::fmt;

/// What the policy may know a component by; none of it is the plugin's to
/// choose.
#[derive(Debug, Clone, Copy)]
pub struct ComponentId<'a> {
    /// Its file name in a plugin directory.
    pub file: &'a str,
    /// Its SHA-256, lowercase hex.
    pub sha256: &'a str,
    /// Whether the lock file pins it (at this digest).
    pub pinned: bool,
}

/// The limits and allowance a component gets.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AppliedPolicy {
    /// Its per-call limits.
    pub limits: Limits,
    /// What it may be granted.
    pub allowance: Allowance,
    /// Set when `[plugins.NAME]` exists but is not bound to this component,
    /// so its grants were withheld.
    pub unbound: Option<UnboundSection>,
}

/// A `[plugins.NAME]` section that matched a plugin by name but is not
/// bound to its component. Its message says what to add to the section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[non_exhaustive]
pub struct UnboundSection {
    /// The plugin name, as the section and the manifest spell it.
    pub plugin: String,
    /// The component's file name.
    pub file: String,
    /// The component's SHA-256.
    pub sha256: String,
    /// The section's `file`, when given and different.
    pub other_file: Option<String>,
    /// The section's `sha256`, when given and different.
    pub other_sha256: Option<String>,
}

impl fmt::Display for UnboundSection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let UnboundSection { plugin, file, sha256, other_file, other_sha256 } = self;
        write!(f, "the grants of [plugins.{plugin}] are withheld from {file}: ")?;
        if other_file.is_none() && other_sha256.is_none() {
            return write!(
                f,
                "a section without `file` or `sha256` applies only to a component pinned in the lock file, \
                 and {file} is not pinned; to grant them to it, add `file = \"{file}\"` or \
                 `sha256 = \"{sha256}\"` to [plugins.{plugin}], or pin it with `toolhost lock`"
            );
        }
        let (mut bound, mut set) = (Vec::new(), Vec::new());
        if let Some(other) = other_file {
            bound.push(format!("file = \"{other}\""));
            set.push(format!("file = \"{file}\""));
        }
        if let Some(other) = other_sha256 {
            bound.push(format!("sha256 = \"{other}\""));
            set.push(format!("sha256 = \"{sha256}\""));
        }
        write!(
            f,
            "the section is bound to {}; if this component should have them instead, set `{}` in [plugins.{plugin}]",
            bound.join(" and "),
            set.join("` and `")
        )
    }
}

impl Binding {
    /// A binding by file name, SHA-256 (lowercase hex), both or neither.
    pub fn new(file: Option<String>, sha256: Option<String>) -> Self {
        Binding { file, sha256 }
    }

    /// Whether the section's grants are for `component`: every key given
    /// matches, or none is given and the component is pinned.
    pub fn admits(&self, component: &ComponentId<'_>) -> bool {
        match (&self.file, &self.sha256) {
            (None, None) => component.pinned,
            (file, sha256) => {
                file.as_deref().is_none_or(|f| f == component.file) && sha256.as_deref().is_none_or(|s| s == component.sha256)
            }
        }
    }
}

/// The policy for `plugin` (the name its manifest declares) loaded from
/// `component`.
pub(crate) fn apply(policy: &RuntimePolicy, plugin: &str, component: &ComponentId<'_>) -> AppliedPolicy {
    let Some(section) = policy.plugins.get(plugin) else {
        return AppliedPolicy { limits: policy.limits, allowance: Allowance::default(), unbound: None };
    };
    if section.binding.admits(component) {
        return AppliedPolicy { limits: section.limits, allowance: section.allowance.clone(), unbound: None };
    }
    let differs = |bound: &Option<String>, actual: &str| bound.clone().filter(|b| b != actual);
    AppliedPolicy {
        limits: stricter(policy.limits, section.limits),
        allowance: Allowance::default(),
        unbound: Some(UnboundSection {
            plugin: plugin.to_owned(),
            file: component.file.to_owned(),
            sha256: component.sha256.to_owned(),
            other_file: differs(&section.binding.file, component.file),
            other_sha256: differs(&section.binding.sha256, component.sha256),
        }),
    }
}

/// Each limit at the lesser of `a` and `b`. Destructured field by field so
/// that a new limit cannot be added without deciding it here.
fn stricter(a: Limits, b: Limits) -> Limits {
    let Limits {
        fuel,
        timeout,
        memory_bytes,
        output_bytes,
        instances,
        tables,
        memories,
        table_elements,
        host_memory_bytes,
        resources,
        open_files,
        http_requests,
    } = a;
    Limits {
        fuel: fuel.min(b.fuel),
        timeout: timeout.min(b.timeout),
        memory_bytes: memory_bytes.min(b.memory_bytes),
        output_bytes: output_bytes.min(b.output_bytes),
        instances: instances.min(b.instances),
        tables: tables.min(b.tables),
        memories: memories.min(b.memories),
        table_elements: table_elements.min(b.table_elements),
        host_memory_bytes: host_memory_bytes.min(b.host_memory_bytes),
        resources: resources.min(b.resources),
        open_files: open_files.min(b.open_files),
        http_requests: http_requests.min(b.http_requests),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const GENUINE: &str = "1111111111111111111111111111111111111111111111111111111111111111";
    const OTHER: &str = "2222222222222222222222222222222222222222222222222222222222222222";

    fn policy(binding: &str) -> RuntimePolicy {
        let limits = Limits { fuel: 1000, timeout: Duration::from_millis(500), ..Limits::default() };
        let body = format!("{binding}\nlimits = {{ fuel = 5000, timeout_ms = 100 }}\nenv = [\"HOME\"]\n");
        let files = super::super::policy::parsed_section(&body, limits);
        RuntimePolicy { limits, plugins: [("files".to_owned(), files)].into(), ..RuntimePolicy::default() }
    }

    fn component<'a>(file: &'a str, sha256: &'a str, pinned: bool) -> ComponentId<'a> {
        ComponentId { file, sha256, pinned }
    }

    #[test]
    fn a_section_applies_only_to_the_component_it_is_bound_to() {
        let by_file = policy("file = \"files.wasm\"");
        assert_eq!(apply(&by_file, "files", &component("files.wasm", OTHER, false)).unbound, None);
        let squatter = apply(&by_file, "files", &component("00_files_update.wasm", GENUINE, true));
        assert_eq!(squatter.allowance, Allowance::default(), "a pin does not override a named file");
        assert_eq!(
            squatter.unbound.unwrap().to_string(),
            "the grants of [plugins.files] are withheld from 00_files_update.wasm: the section is bound to \
             file = \"files.wasm\"; if this component should have them instead, set \
             `file = \"00_files_update.wasm\"` in [plugins.files]"
        );

        let both = policy(&format!("file = \"files.wasm\"\nsha256 = \"{GENUINE}\""));
        assert_eq!(apply(&both, "files", &component("files.wasm", GENUINE, false)).allowance.env, ["HOME"]);
        let changed = apply(&both, "files", &component("files.wasm", OTHER, false));
        assert_eq!(
            changed.unbound.unwrap().to_string(),
            format!(
                "the grants of [plugins.files] are withheld from files.wasm: the section is bound to \
                 sha256 = \"{GENUINE}\"; if this component should have them instead, set \
                 `sha256 = \"{OTHER}\"` in [plugins.files]"
            )
        );
    }

    #[test]
    fn an_unbound_section_needs_a_pin() {
        let unbound = policy("");
        assert_eq!(apply(&unbound, "files", &component("files.wasm", GENUINE, true)).allowance.env, ["HOME"]);
        let fresh = apply(&unbound, "files", &component("files.wasm", GENUINE, false));
        assert_eq!(fresh.allowance, Allowance::default());
        assert_eq!(
            fresh.unbound.unwrap().to_string(),
            format!(
                "the grants of [plugins.files] are withheld from files.wasm: a section without `file` or \
                 `sha256` applies only to a component pinned in the lock file, and files.wasm is not pinned; \
                 to grant them to it, add `file = \"files.wasm\"` or `sha256 = \"{GENUINE}\"` to \
                 [plugins.files], or pin it with `toolhost lock`"
            )
        );
    }

    #[test]
    fn limits_of_a_withheld_section_only_restrict() {
        let fresh = apply(&policy(""), "files", &component("files.wasm", GENUINE, false));
        assert_eq!(fresh.limits.fuel, 1000, "the section's larger fuel is not given");
        assert_eq!(fresh.limits.timeout, Duration::from_millis(100), "its shorter timeout still applies");
        let nameless = apply(&policy(""), "calc", &component("calc.wasm", GENUINE, false));
        assert_eq!((nameless.limits.fuel, nameless.unbound), (1000, None));
    }
}
