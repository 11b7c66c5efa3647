//! The host-side view of a plugin's declarations: [`PluginManifest`],
//! [`ToolSpec`], [`ParamSpec`], [`Permission`] and [`Capabilities`], and the
//! checks every manifest passes before its plugin is loaded.

use serde::Serialize;
use std::collections::HashSet;

/// The toolhost plugin API this host speaks. A plugin built against API
/// `X` loads only when `^X` (the semver caret rule) admits this version.
pub const HOST_API_VERSION: &str = "0.1.0";

/// The longest tool name every text protocol can carry.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// The JSON type a parameter's value must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ParamType {
    /// A JSON string.
    String,
    /// A JSON number with no fractional part.
    Integer,
    /// Any JSON number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// Any JSON value.
    Json,
}

impl ParamType {
    /// The name used in prompts and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            ParamType::String => "string",
            ParamType::Integer => "integer",
            ParamType::Number => "number",
            ParamType::Boolean => "boolean",
            ParamType::Json => "json",
        }
    }
}

/// One parameter of a tool.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ParamSpec {
    /// The argument's key.
    pub name: String,
    /// The type its value must have.
    #[serde(rename = "type")]
    pub ty: ParamType,
    /// What it means, for a model to read.
    pub description: String,
    /// Whether a call without it is refused.
    pub required: bool,
}

/// How much care a call needs before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Permission {
    /// Reads or computes; runs without asking.
    Public,
    /// Reads the user's data or reaches the network; approved once.
    Moderate,
    /// Changes or deletes something; approved every call.
    Sensitive,
}

impl Permission {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Public => "public",
            Permission::Moderate => "moderate",
            Permission::Sensitive => "sensitive",
        }
    }
}

/// One tool, as its plugin declared it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// The name models call it by; unique across the registry.
    pub name: String,
    /// The name of the plugin that offers it.
    pub plugin: String,
    /// What it does.
    pub description: String,
    /// Its parameters, in declaration order.
    pub params: Vec<ParamSpec>,
    /// How much care a call needs.
    pub permission: Permission,
    /// Whether a person approves the result before the model sees it.
    pub result_approval: bool,
    /// Whether it is offered to models.
    pub agent_callable: bool,
    /// Whether it is offered to other systems (VCP, MCP).
    pub distributed_exposed: bool,
    /// Free-form labels.
    pub tags: Vec<String>,
    /// An example call's arguments.
    pub example: Option<serde_json::Value>,
}

impl ToolSpec {
    /// The parameter named `name`, if declared.
    pub fn param(&self, name: &str) -> Option<&ParamSpec> {
        self.params.iter().find(|p| p.name == name)
    }
}

/// Access to a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DirAccess {
    /// List and read.
    Read,
    /// List, read, create, write and remove.
    ReadWrite,
}

impl DirAccess {
    /// The kebab-case name, as in `toolhost.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            DirAccess::Read => "read",
            DirAccess::ReadWrite => "read-write",
        }
    }
}

/// A directory a plugin asks for, by the path it uses inside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct DirRequest {
    /// The path inside the sandbox, e.g. `/workspace`.
    pub guest_path: String,
    /// The access asked for.
    pub access: DirAccess,
}

/// What a plugin asks for beyond computation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Capabilities {
    /// Directories, by guest path.
    pub directories: Vec<DirRequest>,
    /// Environment variable names.
    pub env: Vec<String>,
    /// Outbound HTTP hosts.
    pub http_hosts: Vec<String>,
}

/// A plugin's validated manifest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PluginManifest {
    /// The plugin's name.
    pub name: String,
    /// Its version.
    pub version: semver::Version,
    /// What it is for.
    pub description: String,
    /// The plugin API it was built against.
    pub api_version: semver::Version,
    /// Its tools.
    pub tools: Vec<ToolSpec>,
    /// What it asks for.
    pub capabilities: Capabilities,
}

/// Why a manifest was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// A version string is not semver.
    #[error("plugin `{plugin}`: {what} `{value}` is not a semver version: {reason}")]
    BadVersion {
        /// The plugin.
        plugin: String,
        /// Which version: "version" or "api-version".
        what: &'static str,
        /// The text given.
        value: String,
        /// What semver said.
        reason: String,
    },
    /// The plugin's API is not compatible with the host's.
    #[error(
        "plugin `{plugin}` was built against toolhost API {plugin_api}, \
         which this host (API {host_api}) cannot load: ^{plugin_api} does not admit {host_api}"
    )]
    IncompatibleApi {
        /// The plugin.
        plugin: String,
        /// The API version it was built against.
        plugin_api: String,
        /// The host's API version.
        host_api: String,
    },
    /// A plugin, tool or parameter name is not usable.
    #[error("plugin `{plugin}`: {what} name `{name}` must match ^[A-Za-z0-9_-]{{1,64}}$")]
    BadName {
        /// The plugin.
        plugin: String,
        /// "plugin", "tool" or "parameter".
        what: &'static str,
        /// The name given.
        name: String,
    },
    /// Two tools, or two params of one tool, share a name.
    #[error("plugin `{plugin}`: {what} `{name}` is declared twice")]
    Duplicate {
        /// The plugin.
        plugin: String,
        /// "tool" or "parameter of tool `x`".
        what: String,
        /// The repeated name.
        name: String,
    },
    /// A tool's example is not a JSON object.
    #[error("plugin `{plugin}`: the example of tool `{tool}` is not a JSON object: {reason}")]
    BadExample {
        /// The plugin.
        plugin: String,
        /// The tool.
        tool: String,
        /// Why.
        reason: String,
    },
}

/// Whether `name` can be carried by every protocol: `^[A-Za-z0-9_-]{1,64}$`.
pub fn is_valid_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME_LEN).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl PluginManifest {
    /// Check everything a manifest promises that the type system cannot:
    /// semver versions, API compatibility, names and uniqueness, examples.
    pub(crate) fn validate(
        raw: RawManifest,
    ) -> Result<Self, ManifestError> {
        let plugin = raw.name.clone();
        if !is_valid_name(&plugin) {
            return Err(ManifestError::BadName { plugin, what: "plugin", name: raw.name });
        }
        let parse = |what: &'static str, value: &str| {
            semver::Version::parse(value).map_err(|e| ManifestError::BadVersion {
                plugin: plugin.clone(),
                what,
                value: value.to_owned(),
                reason: e.to_string(),
            })
        };
        let version = parse("version", &raw.version)?;
        let api_version = parse("api-version", &raw.api_version)?;
        check_api(&plugin, &api_version)?;

        let mut tool_names = HashSet::new();
        let mut tools = Vec::with_capacity(raw.tools.len());
        for RawTool { spec: mut tool, example } in raw.tools {
            if !is_valid_name(&tool.name) {
                return Err(ManifestError::BadName { plugin, what: "tool", name: tool.name });
            }
            if !tool_names.insert(tool.name.clone()) {
                return Err(ManifestError::Duplicate { plugin, what: "tool".into(), name: tool.name });
            }
            let mut param_names = HashSet::new();
            for param in &tool.params {
                if !is_valid_name(&param.name) {
                    return Err(ManifestError::BadName { plugin, what: "parameter", name: param.name.clone() });
                }
                if !param_names.insert(param.name.as_str()) {
                    return Err(ManifestError::Duplicate {
                        plugin,
                        what: format!("parameter of tool `{}`", tool.name),
                        name: param.name.clone(),
                    });
                }
            }
            tool.example = match example {
                None => None,
                Some(text) => match serde_json::from_str::<serde_json::Value>(&text) {
                    Ok(value @ serde_json::Value::Object(_)) => Some(value),
                    Ok(_) => {
                        return Err(ManifestError::BadExample { plugin, tool: tool.name, reason: "not an object".into() });
                    }
                    Err(e) => {
                        return Err(ManifestError::BadExample { plugin, tool: tool.name, reason: e.to_string() });
                    }
                },
            };
            tool.plugin = plugin.clone();
            tools.push(tool);
        }
        Ok(PluginManifest {
            name: raw.name,
            version,
            description: raw.description,
            api_version,
            tools,
            capabilities: raw.capabilities,
        })
    }
}

fn check_api(plugin: &str, plugin_api: &semver::Version) -> Result<(), ManifestError> {
    let host = semver::Version::parse(HOST_API_VERSION).expect("HOST_API_VERSION is semver");
    let admits = semver::VersionReq::parse(&format!("^{plugin_api}"))
        .is_ok_and(|requirement| requirement.matches(&host));
    if admits {
        Ok(())
    } else {
        Err(ManifestError::IncompatibleApi {
            plugin: plugin.to_owned(),
            plugin_api: plugin_api.to_string(),
            host_api: HOST_API_VERSION.to_owned(),
        })
    }
}

/// A manifest as the guest returned it, before validation.
#[derive(Debug, Clone)]
pub(crate) struct RawManifest {
    pub name: String,
    pub version: String,
    pub description: String,
    pub api_version: String,
    pub tools: Vec<RawTool>,
    pub capabilities: Capabilities,
}

/// A tool as the guest returned it, before validation: `spec` has no
/// plugin and no example yet; `example` is the unparsed example text.
#[derive(Debug, Clone)]
pub(crate) struct RawTool {
    pub spec: ToolSpec,
    pub example: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(api: &str) -> RawManifest {
        RawManifest {
            name: "demo".into(),
            version: "1.0.0".into(),
            description: String::new(),
            api_version: api.into(),
            tools: vec![RawTool {
                spec: ToolSpec {
                    name: "t".into(),
                    plugin: String::new(),
                    description: String::new(),
                    params: vec![],
                    permission: Permission::Public,
                    result_approval: false,
                    agent_callable: false,
                    distributed_exposed: false,
                    tags: vec![],
                    example: None,
                },
                example: Some(r#"{"a": 1}"#.into()),
            }],
            capabilities: Capabilities::default(),
        }
    }

    #[test]
    fn names_follow_the_protocol_safe_pattern() {
        assert!(is_valid_name("read_file-2"));
        assert!(!is_valid_name(""));
        assert!(!is_valid_name("has space"));
        assert!(!is_valid_name("ünï"));
        assert!(is_valid_name(&"a".repeat(64)));
        assert!(!is_valid_name(&"a".repeat(65)));
    }

    #[test]
    fn api_compatibility_follows_the_caret_rule() {
        assert!(PluginManifest::validate(raw("0.1.0")).is_ok());
        let error = PluginManifest::validate(raw("9.0.0")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "plugin `demo` was built against toolhost API 9.0.0, which this host (API 0.1.0) \
             cannot load: ^9.0.0 does not admit 0.1.0"
        );
        assert!(matches!(PluginManifest::validate(raw("0.2.0")), Err(ManifestError::IncompatibleApi { .. })));
        assert!(matches!(PluginManifest::validate(raw("0.1.5")), Err(ManifestError::IncompatibleApi { .. })));
    }

    #[test]
    fn duplicate_tools_and_bad_examples_are_refused() {
        let mut twice = raw("0.1.0");
        twice.tools.push(twice.tools[0].clone());
        assert!(matches!(PluginManifest::validate(twice), Err(ManifestError::Duplicate { .. })));
        let mut bad = raw("0.1.0");
        bad.tools[0].example = Some("[1]".into());
        assert!(matches!(PluginManifest::validate(bad), Err(ManifestError::BadExample { .. })));
        let mut version = raw("0.1.0");
        version.version = "one".into();
        assert!(matches!(PluginManifest::validate(version), Err(ManifestError::BadVersion { what: "version", .. })));
    }
}
