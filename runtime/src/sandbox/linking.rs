//! What a plugin's imports are linked to.
//!
//! Every plugin gets the `host` interface and WASI p2: `wasi:io`,
//! `wasi:clocks`, `wasi:random`, `wasi:cli` and `wasi:filesystem` (which
//! reaches nothing without a directory grant), with toolhost's own
//! `open-at`, `symlink-at` and metered reads in front (`filesystem`,
//! `host_work`). Only a plugin granted an HTTP host gets working
//! `wasi:http`; no plugin gets working `wasi:sockets`.
//!
//! A plugin may still import what it was not granted — an SDK links
//! `wasi:http` whether or not the host grants a host. The functions of
//! such interfaces are stubs that refuse: calling one ends the call with an
//! outcome naming the missing grant, before the host creates any resource
//! for it. An import toolhost does not offer at all makes the component
//! fail to load.

use super::call_state::CallState;
use super::capability::Grants;
use super::wasi_versions::WASI_LINKED_VERSION;
use super::{bindings, filesystem, host_work};
use crate::failure::GrantKind;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use wasmtime::Engine;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Linker};

/// `wasi:http/types@0.2.0` as the linker names it: `wasi:http/types@0.2.12`.
/// Other versions are left as they are.
fn at_linked_version(interface: &str) -> String {
    match interface.split_once("@0.2.") {
        Some((name, _)) => format!("{name}@{WASI_LINKED_VERSION}"),
        None => interface.to_owned(),
    }
}

/// The capability an interface belongs to, for those linked only where
/// granted: `wasi:http` (with an HTTP grant) and `wasi:sockets` (never).
fn capability_of(interface: &str) -> Option<GrantKind> {
    if interface.starts_with("wasi:http/") {
        Some(GrantKind::Http)
    } else if interface.starts_with("wasi:sockets/") {
        Some(GrantKind::Sockets)
    } else {
        None
    }
}

/// A plugin called a function of an interface it was not granted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("called `{function}` of an interface it was not granted")]
pub(crate) struct NotGranted {
    pub(crate) capability: GrantKind,
    pub(crate) function: String,
}

/// Linkers with stubs kept for reuse, at most: plugins built with the same
/// toolchain import the same interfaces, so a handful covers a host, and
/// one beyond them is built for its plugin alone.
const KEPT_STUBBED_LINKERS: usize = 16;

/// What a plugin's linker replaces with stubs: each interface it imports
/// but was not granted, as it names it, with the functions it imports from
/// it. Two plugins with the same stubs link against the same linker.
type Stubs = BTreeMap<String, BTreeSet<String>>;

/// The linker every plugin is prepared from, and those with stubs made
/// from it.
pub(crate) struct Linkers {
    everything: Arc<Linker<CallState>>,
    /// Copying the WASI linker to add stubs cost 150 µs of a 1.6 ms warm
    /// plugin load (issue 35), once per plugin and grant set.
    stubbed: Mutex<HashMap<Stubs, Arc<Linker<CallState>>>>,
}

impl Linkers {
    pub(crate) fn new(engine: &Engine) -> wasmtime::Result<Self> {
        let mut linker = Linker::new(engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
        filesystem::add_to_linker(&mut linker)?;
        host_work::add_to_linker(&mut linker)?;
        bindings::add_to_linker(&mut linker)?;
        Ok(Linkers { everything: Arc::new(linker), stubbed: Mutex::default() })
    }

    /// The linker for `component` under `grants`: every function of an
    /// interface it imports but was not granted (`wasi:http` without an
    /// HTTP grant, `wasi:sockets` always) replaced by a stub that refuses.
    /// The resource types stay WASI's own, so the component links, but no
    /// such resource can ever be created.
    pub(crate) fn for_plugin(&self, component: &Component, grants: &Grants) -> wasmtime::Result<Arc<Linker<CallState>>> {
        let stubs = stubs_for(component, grants);
        if stubs.is_empty() {
            return Ok(self.everything.clone());
        }
        if let Some(kept) = self.kept().get(&stubs) {
            return Ok(kept.clone());
        }
        let linker = Arc::new(self.with_stubs(&stubs)?);
        let mut kept = self.kept();
        if kept.len() < KEPT_STUBBED_LINKERS {
            kept.insert(stubs, linker.clone());
        }
        Ok(linker)
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, HashMap<Stubs, Arc<Linker<CallState>>>> {
        self.stubbed.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn with_stubs(&self, stubs: &Stubs) -> wasmtime::Result<Linker<CallState>> {
        let mut linker = (*self.everything).clone();
        linker.allow_shadowing(true);
        for (name, functions) in stubs {
            let capability = capability_of(name).expect("only capabilities' interfaces are stubbed");
            // The linker holds each interface once, at WASI's own 0.2.x
            // version; a plugin built against an older one links to it by
            // semver, so that is the instance to stub.
            let mut instance = linker.instance(&at_linked_version(name))?;
            for item in functions {
                let function = format!("{name}#{item}");
                instance.func_new(item, move |_, _, _, _| Err(NotGranted { capability, function: function.clone() }.into()))?;
            }
        }
        Ok(linker)
    }
}

/// The interfaces `component` imports but `grants` do not grant, with the
/// functions it imports from each.
fn stubs_for(component: &Component, grants: &Grants) -> Stubs {
    let engine = component.engine();
    let mut stubs = Stubs::new();
    for (name, import) in component.component_type().imports(engine) {
        let ComponentItem::ComponentInstance(instance) = import.ty else { continue };
        let Some(capability) = capability_of(name) else { continue };
        if capability == GrantKind::Http && grants.http() {
            continue;
        }
        let functions = instance
            .exports(engine)
            .filter(|(_, ty)| matches!(ty.ty, ComponentItem::ComponentFunc(_)))
            .map(|(item, _)| item.to_owned())
            .collect();
        stubs.insert(name.to_owned(), functions);
    }
    stubs
}

#[cfg(test)]
mod tests {
    use super::*;

    use wasm_encoder::{ComponentBuilder, ComponentTypeRef, InstanceType};

    /// A component that imports `interfaces`, each with the functions
    /// named (`func()`), and does nothing.
    fn importing(engine: &Engine, interfaces: &[(&str, &[&str])]) -> Component {
        let mut builder = ComponentBuilder::default();
        for (interface, functions) in interfaces {
            let mut instance = InstanceType::new();
            for function in *functions {
                let index = instance.type_count();
                instance.ty().function().params([] as [(&str, wasm_encoder::ComponentValType); 0]).result(None);
                instance.export(*function, ComponentTypeRef::Func(index));
            }
            let ty = builder.type_instance(None, &instance);
            builder.import(*interface, ComponentTypeRef::Instance(ty));
        }
        Component::new(engine, builder.finish()).unwrap()
    }

    fn http_granted() -> Grants {
        Grants { http_hosts: vec!["example.com".into()], ..Grants::none() }
    }

    #[test]
    fn plugins_with_the_same_stubs_share_one_linker_and_others_get_their_own() {
        let engine = Engine::default();
        let linkers = Linkers::new(&engine).unwrap();
        let (sockets, http) = (("wasi:sockets/tcp@0.2.0", &["a", "b"][..]), ("wasi:http/types@0.2.3", &["c"][..]));
        let first = linkers.for_plugin(&importing(&engine, &[sockets, http]), &Grants::none()).unwrap();
        let same = linkers.for_plugin(&importing(&engine, &[http, sockets]), &Grants::none()).unwrap();
        assert!(Arc::ptr_eq(&first, &same), "the same stubs, in another order, reuse the linker");

        let granted = linkers.for_plugin(&importing(&engine, &[sockets, http]), &http_granted()).unwrap();
        assert!(!Arc::ptr_eq(&first, &granted), "with HTTP granted only sockets are stubbed");
        let fewer = linkers.for_plugin(&importing(&engine, &[sockets, ("wasi:http/types@0.2.3", &[])]), &Grants::none()).unwrap();
        assert!(!Arc::ptr_eq(&first, &fewer), "another function set is another linker");
        let older =
            linkers.for_plugin(&importing(&engine, &[("wasi:sockets/tcp@0.2.1", &["a", "b"]), http]), &Grants::none()).unwrap();
        assert!(!Arc::ptr_eq(&first, &older), "the stubs name the version the plugin imports");

        let plain = linkers.for_plugin(&importing(&engine, &[("wasi:cli/environment@0.2.0", &["x"])]), &Grants::none()).unwrap();
        assert!(Arc::ptr_eq(&plain, &linkers.everything), "nothing to stub: the shared linker itself");
        assert_eq!(linkers.kept().len(), 4);
    }

    #[test]
    fn only_so_many_stubbed_linkers_are_kept() {
        let engine = Engine::default();
        let linkers = Linkers::new(&engine).unwrap();
        let names: Vec<String> = (0..KEPT_STUBBED_LINKERS + 5).map(|i| format!("f{i}")).collect();
        for name in &names {
            let component = importing(&engine, &[("wasi:sockets/udp@0.2.0", &[name.as_str()])]);
            let linker = linkers.for_plugin(&component, &Grants::none()).unwrap();
            if let Err(e) = linker.instantiate_pre(&component) {
                panic!("a linker past the bound still links its plugin: {e:#}")
            }
        }
        assert_eq!(linkers.kept().len(), KEPT_STUBBED_LINKERS);
    }

    #[test]
    fn older_wasi_versions_are_stubbed_where_the_linker_holds_them() {
        assert_eq!(at_linked_version("wasi:http/types@0.2.0"), "wasi:http/types@0.2.12");
        assert_eq!(at_linked_version("wasi:sockets/tcp@0.2.3"), "wasi:sockets/tcp@0.2.12");
        assert_eq!(at_linked_version("wasi:http/types@0.3.0"), "wasi:http/types@0.3.0");
    }
}
