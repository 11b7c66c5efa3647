//! Host bindings for the `toolhost:plugin` world, and the conversion of a
//! guest's manifest into the host-side types.

use crate::declaration::{RawManifest, RawTool};
use crate::manifest::{Capabilities, DirAccess, DirRequest, ParamSpec, ParamType, Permission, ToolSpec};

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
        let declared = match t.permission {
            wit::Permission::Public => Permission::Public,
            wit::Permission::Moderate => Permission::Moderate,
            wit::Permission::Sensitive => Permission::Sensitive,
        };
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
            permission: declared,
            declared_permission: declared,
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

/// A plugin linked for one engine, ready to instantiate, with its two
/// exports found once. A call type-checks only the export it calls:
/// bindgen's `PluginPre::instantiate_async` type-checks both on every
/// instantiation, and the manifest's nested record type alone cost
/// ~0.3 µs of a 13.7 µs fresh call (measured with `perf`, issue 17).
pub(crate) struct ReadyPlugin<T: 'static> {
    pre: PluginPre<T>,
    manifest: wasmtime::component::ComponentExportIndex,
    invoke: wasmtime::component::ComponentExportIndex,
}

impl<T: Send + 'static> ReadyPlugin<T> {
    /// `pre`, whose exports `PluginPre::new` checks exist with the
    /// world's types.
    pub(crate) fn new(pre: wasmtime::component::InstancePre<T>) -> wasmtime::Result<Self> {
        let pre = PluginPre::new(pre)?;
        let component = pre.instance_pre().component();
        let find =
            |name: &str| component.get_export_index(None, name).ok_or_else(|| wasmtime::format_err!("no export `{name}` found"));
        Ok(ReadyPlugin { manifest: find("manifest")?, invoke: find("invoke")?, pre })
    }

    /// A fresh instance in `store`.
    pub(crate) async fn instantiate(&self, store: &mut wasmtime::Store<T>) -> wasmtime::Result<wasmtime::component::Instance> {
        self.pre.instance_pre().instantiate_async(store).await
    }

    /// Call `manifest` on `instance`.
    pub(crate) async fn call_manifest(
        &self,
        instance: &wasmtime::component::Instance,
        store: &mut wasmtime::Store<T>,
    ) -> wasmtime::Result<wit::Manifest> {
        let manifest = instance.get_typed_func::<(), (wit::Manifest,)>(&mut *store, &self.manifest)?;
        Ok(manifest.call_async(store, ()).await?.0)
    }

    /// Call `invoke` on `instance`.
    pub(crate) async fn call_invoke(
        &self,
        instance: &wasmtime::component::Instance,
        store: &mut wasmtime::Store<T>,
        tool: &str,
        args_json: &str,
    ) -> wasmtime::Result<Result<wit::Output, wit::ToolError>> {
        let invoke = self.invoke(instance, store)?;
        Ok(invoke.call_async(store, (tool, args_json)).await?.0)
    }

    /// `invoke` of `instance`, type-checked.
    #[allow(clippy::type_complexity, reason = "the export's signature, spelled once")]
    pub(crate) fn invoke<'a>(
        &self,
        instance: &wasmtime::component::Instance,
        store: &mut wasmtime::Store<T>,
    ) -> wasmtime::Result<wasmtime::component::TypedFunc<(&'a str, &'a str), (Result<wit::Output, wit::ToolError>,)>> {
        instance.get_typed_func(store, self.invoke)
    }
}
