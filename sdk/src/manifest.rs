//! Builders for the manifest a plugin declares.

use crate::__bindings::toolhost::plugin::types as wit;
use serde_json::Value;

/// The toolhost plugin API version this SDK builds against. The host refuses
/// plugins whose API version is not compatible with its own by the semver
/// caret rule.
pub const API_VERSION: &str = "0.1.0";

/// What a plugin says about itself: its tools and the capabilities it asks
/// for. Starts with no tools and no capabilities.
#[derive(Debug, Clone)]
pub struct Manifest {
    name: String,
    version: String,
    description: String,
    api_version: String,
    tools: Vec<Tool>,
    directories: Vec<(String, Access)>,
    env: Vec<String>,
    http_hosts: Vec<String>,
}

impl Manifest {
    /// A manifest for plugin `name` at semver `version`, e.g.
    /// `Manifest::new("calc", env!("CARGO_PKG_VERSION"), "Arithmetic")`.
    pub fn new(name: &str, version: &str, description: &str) -> Self {
        Manifest {
            name: name.into(),
            version: version.into(),
            description: description.into(),
            api_version: API_VERSION.into(),
            tools: Vec::new(),
            directories: Vec::new(),
            env: Vec::new(),
            http_hosts: Vec::new(),
        }
    }

    /// Add a tool.
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Ask for a directory, seen inside the sandbox at `guest_path` (e.g.
    /// `/workspace`). The host decides which real directory it is.
    pub fn directory(mut self, guest_path: &str, access: Access) -> Self {
        self.directories.push((guest_path.into(), access));
        self
    }

    /// Ask to read the environment variable `name`.
    pub fn env(mut self, name: &str) -> Self {
        self.env.push(name.into());
        self
    }

    /// Ask to reach `host` (e.g. `example.com`) over outbound HTTP(S).
    pub fn http_host(mut self, host: &str) -> Self {
        self.http_hosts.push(host.into());
        self
    }

    /// Claim a different API version. Only for testing how hosts refuse
    /// incompatible plugins.
    #[doc(hidden)]
    pub fn api_version(mut self, version: &str) -> Self {
        self.api_version = version.into();
        self
    }

    pub(crate) fn into_wit(self) -> wit::Manifest {
        wit::Manifest {
            name: self.name,
            version: self.version,
            description: self.description,
            api_version: self.api_version,
            tools: self.tools.into_iter().map(Tool::into_wit).collect(),
            capabilities: wit::Capabilities {
                directories: self
                    .directories
                    .into_iter()
                    .map(|(guest_path, access)| wit::DirRequest {
                        guest_path,
                        access: match access {
                            Access::Read => wit::DirAccess::Read,
                            Access::ReadWrite => wit::DirAccess::ReadWrite,
                        },
                    })
                    .collect(),
                env: self.env,
                http_hosts: self.http_hosts,
            },
        }
    }
}

/// Access asked for a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// List and read only.
    Read,
    /// List, read, create, write and remove.
    ReadWrite,
}

/// The JSON type of a parameter's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
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

/// Whether a parameter must be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// A call without it is refused before the plugin runs.
    Required,
    /// It may be left out.
    Optional,
}

/// How much care a call needs before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    /// Reads or computes; runs without asking.
    Public,
    /// Reads the user's data or reaches the network; approved once.
    Moderate,
    /// Changes or deletes something; approved every time.
    Sensitive,
}

/// One tool. Starts public, not agent-callable, not distributed-exposed, no
/// result approval, no params.
#[derive(Debug, Clone)]
pub struct Tool {
    name: String,
    description: String,
    params: Vec<wit::Param>,
    permission: Permission,
    result_approval: bool,
    agent_callable: bool,
    distributed_exposed: bool,
    tags: Vec<String>,
    example: Option<Value>,
}

impl Tool {
    /// A tool named `name` (`[A-Za-z0-9_-]{1,64}`) that does `description`.
    pub fn new(name: &str, description: &str) -> Self {
        Tool {
            name: name.into(),
            description: description.into(),
            params: Vec::new(),
            permission: Permission::Public,
            result_approval: false,
            agent_callable: false,
            distributed_exposed: false,
            tags: Vec::new(),
            example: None,
        }
    }

    /// Add a parameter.
    pub fn param(mut self, name: &str, ty: Type, description: &str, presence: Presence) -> Self {
        self.params.push(wit::Param {
            name: name.into(),
            type_: match ty {
                Type::String => wit::ParamType::String,
                Type::Integer => wit::ParamType::Integer,
                Type::Number => wit::ParamType::Number,
                Type::Boolean => wit::ParamType::Boolean,
                Type::Json => wit::ParamType::Json,
            },
            description: description.into(),
            required: presence == Presence::Required,
        });
        self
    }

    /// Set the permission level (default public).
    pub fn permission(mut self, permission: Permission) -> Self {
        self.permission = permission;
        self
    }

    /// Require a person to approve the result before the model sees it.
    pub fn result_approval(mut self, needed: bool) -> Self {
        self.result_approval = needed;
        self
    }

    /// Offer the tool to models (default false).
    pub fn agent_callable(mut self, callable: bool) -> Self {
        self.agent_callable = callable;
        self
    }

    /// Offer the tool to other systems such as a VCP server (default false).
    pub fn distributed_exposed(mut self, exposed: bool) -> Self {
        self.distributed_exposed = exposed;
        self
    }

    /// Add a label.
    pub fn tag(mut self, tag: &str) -> Self {
        self.tags.push(tag.into());
        self
    }

    /// An example call's arguments, e.g. `json!({"expression": "1 + 2"})`.
    pub fn example(mut self, arguments: Value) -> Self {
        self.example = Some(arguments);
        self
    }

    fn into_wit(self) -> wit::Tool {
        wit::Tool {
            name: self.name,
            description: self.description,
            params: self.params,
            permission: match self.permission {
                Permission::Public => wit::Permission::Public,
                Permission::Moderate => wit::Permission::Moderate,
                Permission::Sensitive => wit::Permission::Sensitive,
            },
            result_approval: self.result_approval,
            agent_callable: self.agent_callable,
            distributed_exposed: self.distributed_exposed,
            tags: self.tags,
            example: self.example.map(|v| v.to_string()),
        }
    }
}

/// Every field of the contract's `tool` record with the default its
/// ``Default: `…` `` note names, if it has one, read from the WIT text
/// `wit`: the one source that this SDK's [`Tool::new`] and the host's
/// `ToolSpec::new` are both tested against. A field's note is the first in
/// its own doc comment.
#[doc(hidden)]
pub fn declared_tool_defaults(wit: &str) -> Vec<(String, Option<String>)> {
    let Some(start) = wit.find("record tool {") else { return Vec::new() };
    let mut docs = String::new();
    let mut fields = Vec::new();
    for line in wit[start..].lines().skip(1).map(str::trim) {
        if line.starts_with('}') {
            break;
        }
        if let Some(doc) = line.strip_prefix("///") {
            docs.push_str(doc);
            continue;
        }
        let code = line.split("//").next().unwrap_or_default();
        if let Some((field, _)) = code.split_once(':') {
            let default = docs.split("Default: `").nth(1).and_then(|rest| rest.split('`').next());
            fields.push((field.trim().to_owned(), default.map(str::to_owned)));
        }
        docs.clear();
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_tool_has_the_defaults_the_contract_names() {
        let tool = Tool::new("t", "d").into_wit();
        let list = |empty: bool| if empty { "[]" } else { "a list with items" };
        let permission = match tool.permission {
            wit::Permission::Public => "public",
            wit::Permission::Moderate => "moderate",
            wit::Permission::Sensitive => "sensitive",
        };
        // Every field but the two a tool must be given has a default.
        let ours = [
            ("name", None),
            ("description", None),
            ("params", Some(list(tool.params.is_empty()).to_owned())),
            ("permission", Some(permission.to_owned())),
            ("result-approval", Some(tool.result_approval.to_string())),
            ("agent-callable", Some(tool.agent_callable.to_string())),
            ("distributed-exposed", Some(tool.distributed_exposed.to_string())),
            ("tags", Some(list(tool.tags.is_empty()).to_owned())),
            ("example", Some(tool.example.unwrap_or_else(|| "none".into()))),
        ]
        .map(|(field, value)| (field.to_owned(), value));
        assert_eq!(declared_tool_defaults(crate::WIT), ours);
    }

    #[test]
    fn defaults_are_read_only_from_the_tool_record() {
        let wit = "record param {\n  /// Default: `x`.\n  a: bool,\n}\nrecord tool {\n  /// Its name.\n  name: string,\n  \
                   /// Whether. Default: `true`:\n  /// or not; c's Default: `no`.\n  b: bool, // a comment: here\n  c: u8,\n} // end\n";
        let fields = [("name", None), ("b", Some("true")), ("c", None)].map(|(f, d)| (f.to_owned(), d.map(str::to_owned)));
        assert_eq!(declared_tool_defaults(wit), fields);
    }
}
