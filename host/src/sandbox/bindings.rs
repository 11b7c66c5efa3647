//! Host bindings for the `toolhost:plugin` world, and the conversion of a
//! guest's manifest into the host-side types.

use crate::manifest::{
    Capabilities, DirAccess, DirRequest, ParamSpec, ParamType, Permission, RawManifest, RawTool, ToolSpec,
};

wasmtime::component::bindgen!({
    path: "wit",
    world: "plugin",
    exports: { default: async },
});

use self::toolhost::plugin::types as wit;

impl From<wit::Manifest> for RawManifest {
    fn from(m: wit::Manifest) -> Self {
        RawManifest {
            name: m.name,
            version: m.version,
            description: m.description,
            api_version: m.api_version,
            tools: m.tools.into_iter().map(RawTool::from).collect(),
            capabilities: Capabilities {
                directories: m
                    .capabilities
                    .directories
                    .into_iter()
                    .map(|d| DirRequest {
                        guest_path: d.guest_path,
                        access: match d.access {
                            wit::DirAccess::Read => DirAccess::Read,
                            wit::DirAccess::ReadWrite => DirAccess::ReadWrite,
                        },
                    })
                    .collect(),
                env: m.capabilities.env,
                http_hosts: m.capabilities.http_hosts,
            },
        }
    }
}

impl From<wit::Tool> for RawTool {
    fn from(t: wit::Tool) -> Self {
        let spec = ToolSpec {
            name: t.name,
            plugin: String::new(),
            description: t.description,
            params: t
                .params
                .into_iter()
                .map(|p| ParamSpec {
                    name: p.name,
                    ty: match p.type_ {
                        wit::ParamType::String => ParamType::String,
                        wit::ParamType::Integer => ParamType::Integer,
                        wit::ParamType::Number => ParamType::Number,
                        wit::ParamType::Boolean => ParamType::Boolean,
                        wit::ParamType::Json => ParamType::Json,
                    },
                    description: p.description,
                    required: p.required,
                })
                .collect(),
            permission: match t.permission {
                wit::Permission::Public => Permission::Public,
                wit::Permission::Moderate => Permission::Moderate,
                wit::Permission::Sensitive => Permission::Sensitive,
            },
            result_approval: t.result_approval,
            agent_callable: t.agent_callable,
            distributed_exposed: t.distributed_exposed,
            tags: t.tags,
            example: None,
            reach: crate::manifest::Reach::Compute,
        };
        RawTool { spec, example: t.example }
    }
}
