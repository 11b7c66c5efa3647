//! The host-side view of a plugin's declarations: [`PluginManifest`],
//! [`ToolSpec`], [`ParamSpec`], [`Permission`] and [`Capabilities`], and the
//! limits on their sizes ([`limits`](self#constants)) that every manifest
//! is checked against before its plugin is loaded (the checks are
//! `toolhost-protocol`'s `declaration`).

mod limits;

pub use limits::{
    MAX_CAPABILITY_ENTRIES, MAX_CAPABILITY_ENTRY_BYTES, MAX_EXAMPLE_BYTES, MAX_PARAM_DESCRIPTION_BYTES, MAX_PARAMS,
    MAX_PLUGIN_DESCRIPTION_BYTES, MAX_PLUGIN_MANIFEST_BYTES, MAX_TAG_BYTES, MAX_TAGS, MAX_TOOL_DESCRIPTION_BYTES,
    MAX_TOOL_NAME_LEN, MAX_TOOLS, MAX_VERSION_BYTES, STRING_OVERHEAD_BYTES,
};

use serde::{Deserialize, Serialize};

/// The toolhost plugin API this host speaks. A plugin built against API
/// `X` loads only when `^X` (the semver caret rule) admits this version.
pub const HOST_API_VERSION: &str = "0.1.0";

/// The JSON type a parameter's value must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
// Exhaustive: it mirrors the WIT `param-type`, which changes only with a new
// contract version, and then every match must handle the new case.
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
// Exhaustive: it mirrors the WIT `permission`, which changes only with a new
// contract version, and then every match must handle the new case.
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
    /// How much care a call needs: the level its plugin declared, raised
    /// to its grants' level floor (toolhost's `Grants::level_floor`) when the
    /// registry loads it. Approval, tool filters, prompts and MCP
    /// annotations read this one.
    pub permission: Permission,
    /// The level its plugin declared, shown beside the one the host holds
    /// it to.
    pub declared_permission: Permission,
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
    /// What it can reach, from its plugin's grants (set when the registry
    /// loads it; [`Reach::Compute`] until then).
    pub reach: Reach,
}

/// What a tool can reach beyond its arguments, judged from the grants of
/// its plugin: a prompt tells a model how freely to call it by this and by
/// its [`Permission`].
/// Ordered from the least reach to the most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Reach {
    /// Nothing: it computes from its arguments.
    #[default]
    Compute,
    /// Directories it may only read, environment variables, HTTP hosts.
    Read,
    /// At least one directory it may write in.
    Write,
}

impl ToolSpec {
    /// A tool `name` of `plugin` that does `description`, with the SDK's
    /// defaults: no parameters, public, not agent-callable, not
    /// distributed-exposed, no result approval, no tags, no example.
    pub fn new(name: impl Into<String>, plugin: impl Into<String>, description: impl Into<String>) -> Self {
        ToolSpec {
            name: name.into(),
            plugin: plugin.into(),
            description: description.into(),
            params: Vec::new(),
            permission: Permission::Public,
            declared_permission: Permission::Public,
            result_approval: false,
            agent_callable: false,
            distributed_exposed: false,
            tags: Vec::new(),
            example: None,
            reach: Reach::Compute,
        }
    }

    /// The parameter named `name`, if declared.
    pub fn param(&self, name: &str) -> Option<&ParamSpec> {
        self.params.iter().find(|p| p.name == name)
    }
}

/// Access to a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
// Exhaustive: it mirrors the WIT `dir-access`, which changes only with a new
// contract version, and then every match must handle the new case.
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

/// Whether `name` can be carried by every protocol: `^[A-Za-z0-9_-]{1,64}$`.
pub fn is_valid_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME_LEN).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// "a string", "an object", … for an error message.
pub fn json_type(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
