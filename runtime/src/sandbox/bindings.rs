//! Host bindings for every released version of the `toolhost:plugin`
//! world (see [`Contract`]), and what a guest returns turned into the
//! host-side types: the one place each version's records are mirrored.

use super::call_state::CallState;
use crate::contract::Contract;
use crate::declaration::{RawManifest, RawTool};
use crate::failure::{ToolFailure, ToolFailureKind, ToolOutput};
use crate::manifest::{Capabilities, DirAccess, DirRequest, ParamSpec, ParamType, Permission, Reach, ToolSpec};
use tracing::Level;
use wasmtime::component::{ComponentExportIndex, HasSelf, Instance, InstancePre, Linker};
use wasmtime::{Store, format_err};

/// `toolhost:plugin@0.1.0`, generated from its frozen copy.
mod v0_1 {
    wasmtime::component::bindgen!({
        path: "wit/released/0.1.0",
        world: "plugin",
        exports: { default: async },
        // A manifest is kept beside the compiled artifact (`GuestManifest`).
        additional_derives: [serde::Serialize, serde::Deserialize],
    });
    pub(super) use self::toolhost::plugin::{host, types};
}

/// Link the `host` interface of every released version.
pub(crate) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    v0_1::Plugin::add_to_linker::<_, HasSelf<CallState>>(linker, |state| state)
}

// The `types` interface has no functions; its host trait is empty.
impl v0_1::types::Host for CallState {}

impl v0_1::host::Host for CallState {
    fn log(&mut self, level: v0_1::host::LogLevel, message: String) {
        use v0_1::host::LogLevel;
        let level = match level {
            LogLevel::Trace => Level::TRACE,
            LogLevel::Debug => Level::DEBUG,
            LogLevel::Info => Level::INFO,
            LogLevel::Warn => Level::WARN,
            LogLevel::Error => Level::ERROR,
        };
        self.plugin_log(level, &message);
    }
}

/// A manifest as the guest returned it, in its contract version's own
/// types. The compiled cache keeps it beside the component's artifact, so a
/// warm load does not run the guest again; turned into the host's types
/// (and validated) on every load.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) enum GuestManifest {
    V0_1(v0_1::types::Manifest),
}

impl GuestManifest {
    /// The contract version it was returned under.
    pub(crate) fn contract(&self) -> Contract {
        match self {
            GuestManifest::V0_1(_) => Contract::V0_1,
        }
    }
}

impl From<GuestManifest> for RawManifest {
    fn from(manifest: GuestManifest) -> Self {
        match manifest {
            GuestManifest::V0_1(m) => m.into(),
        }
    }
}

impl From<v0_1::types::Manifest> for RawManifest {
    fn from(m: v0_1::types::Manifest) -> Self {
        use v0_1::types::DirAccess as Access;
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
                            Access::Read => DirAccess::Read,
                            Access::ReadWrite => DirAccess::ReadWrite,
                        },
                    })
                    .collect(),
                env: m.capabilities.env,
                http_hosts: m.capabilities.http_hosts,
            },
        }
    }
}

impl From<v0_1::types::Tool> for RawTool {
    fn from(t: v0_1::types::Tool) -> Self {
        use v0_1::types::{ParamType as Type, Permission as Level};
        let declared = match t.permission {
            Level::Public => Permission::Public,
            Level::Moderate => Permission::Moderate,
            Level::Sensitive => Permission::Sensitive,
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
                        Type::String => ParamType::String,
                        Type::Integer => ParamType::Integer,
                        Type::Number => ParamType::Number,
                        Type::Boolean => ParamType::Boolean,
                        Type::Json => ParamType::Json,
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
            reach: Reach::Compute,
        };
        RawTool { spec, example: t.example }
    }
}

/// What `invoke` of `toolhost:plugin@0.1.0` returned, as the host's types.
fn returned_v0_1(returned: Result<v0_1::types::Output, v0_1::types::ToolError>) -> Result<ToolOutput, ToolFailure> {
    use v0_1::types::{Output, ToolError};
    match returned {
        Ok(Output::Text(text)) => Ok(ToolOutput::Text(text)),
        Ok(Output::Json(json)) => Ok(ToolOutput::Json(json)),
        Err(error) => {
            let (kind, message) = match error {
                ToolError::InvalidArgs(m) => (ToolFailureKind::InvalidArgs, m),
                ToolError::UnknownTool(m) => (ToolFailureKind::UnknownTool, m),
                ToolError::Failed(m) => (ToolFailureKind::Failed, m),
            };
            Err(ToolFailure { kind, message })
        }
    }
}

/// `invoke` of `toolhost:plugin@0.1.0`, as a typed function.
type InvokeV0_1<'a> = wasmtime::component::TypedFunc<(&'a str, &'a str), (Result<v0_1::types::Output, v0_1::types::ToolError>,)>;

/// A plugin linked for one engine, ready to instantiate, with its two
/// exports found once and the contract version it was built against. A
/// call type-checks only the export it calls: bindgen's
/// `PluginPre::instantiate_async` type-checks both on every
/// instantiation, and the manifest's nested record type alone cost
/// ~0.3 µs of a 13.7 µs fresh call (measured with `perf`, issue 17).
#[derive(Clone)]
pub(crate) struct ReadyPlugin {
    contract: Contract,
    pre: InstancePre<CallState>,
    manifest: ComponentExportIndex,
    invoke: ComponentExportIndex,
}

impl ReadyPlugin {
    /// Make the component's memory images now (on Linux, a memfd each)
    /// rather than at its first instance.
    pub(crate) fn make_memory_images(&self) -> wasmtime::Result<()> {
        self.pre.component().initialize_copy_on_write_image()
    }

    /// `pre`, built against `contract`, once its exports are found to
    /// exist with that version's types.
    pub(crate) fn new(pre: InstancePre<CallState>, contract: Contract) -> wasmtime::Result<Self> {
        match contract {
            Contract::V0_1 => drop(v0_1::PluginPre::new(pre.clone())?),
        }
        let component = pre.component();
        let find = |name: &str| component.get_export_index(None, name).ok_or_else(|| format_err!("no export `{name}` found"));
        Ok(ReadyPlugin { contract, manifest: find("manifest")?, invoke: find("invoke")?, pre })
    }

    /// A fresh instance in `store`.
    pub(crate) async fn instantiate(&self, store: &mut Store<CallState>) -> wasmtime::Result<Instance> {
        self.pre.instantiate_async(store).await
    }

    /// Call `manifest` on `instance`.
    pub(crate) async fn call_manifest(
        &self,
        instance: &Instance,
        store: &mut Store<CallState>,
    ) -> wasmtime::Result<GuestManifest> {
        match self.contract {
            Contract::V0_1 => {
                let manifest = instance.get_typed_func::<(), (v0_1::types::Manifest,)>(&mut *store, self.manifest)?;
                Ok(GuestManifest::V0_1(manifest.call_async(store, ()).await?.0))
            }
        }
    }

    /// Call `invoke` on `instance`.
    pub(crate) async fn call_invoke(
        &self,
        instance: &Instance,
        store: &mut Store<CallState>,
        tool: &str,
        args_json: &str,
    ) -> wasmtime::Result<Result<ToolOutput, ToolFailure>> {
        match self.contract {
            Contract::V0_1 => {
                let invoke: InvokeV0_1<'_> = instance.get_typed_func(&mut *store, self.invoke)?;
                Ok(returned_v0_1(invoke.call_async(store, (tool, args_json)).await?.0))
            }
        }
    }

    /// Call `invoke` on `instance` `times` times, results dropped: the
    /// floor the benchmark measures a fresh call against.
    pub(crate) async fn call_invoke_repeatedly(
        &self,
        instance: &Instance,
        store: &mut Store<CallState>,
        tool: &str,
        args_json: &str,
        times: u32,
    ) -> wasmtime::Result<()> {
        match self.contract {
            Contract::V0_1 => {
                let invoke: InvokeV0_1<'_> = instance.get_typed_func(&mut *store, self.invoke)?;
                for _ in 0..times {
                    let _ = invoke.call_async(&mut *store, (tool, args_json)).await?;
                }
            }
        }
        Ok(())
    }
}
