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

use super::call::CallState;
use super::capability::Grants;
use super::{bindings, filesystem, host_work};
use crate::failure::GrantKind;
use wasmtime::Engine;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Linker};

/// The WASI interfaces toolhost answers some functions of itself, at the
/// versions `wasmtime-wasi` links (a plugin built against an older 0.2.x
/// links to them by semver).
pub(crate) const WASI_FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";
pub(crate) const WASI_IO_STREAMS: &str = "wasi:io/streams@0.2.12";
pub(crate) const WASI_IO_POLL: &str = "wasi:io/poll@0.2.12";

/// The WASI 0.2 version `wasmtime-wasi` 48 links.
const WASI_LINKED_VERSION: &str = "0.2.12";

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

/// The linker every plugin is prepared from.
pub(crate) struct Linkers {
    everything: Linker<CallState>,
}

impl Linkers {
    pub(crate) fn new(engine: &Engine) -> wasmtime::Result<Self> {
        let mut linker = Linker::new(engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
        filesystem::add_to_linker(&mut linker)?;
        host_work::add_to_linker(&mut linker)?;
        bindings::add_to_linker(&mut linker)?;
        Ok(Linkers { everything: linker })
    }

    /// The linker for `component` under `grants`: every function of an
    /// interface it imports but was not granted (`wasi:http` without an
    /// HTTP grant, `wasi:sockets` always) replaced by a stub that refuses.
    /// The resource types stay WASI's own, so the component links, but no
    /// such resource can ever be created.
    pub(crate) fn for_plugin(&self, component: &Component, grants: &Grants) -> wasmtime::Result<Linker<CallState>> {
        let mut linker = self.everything.clone();
        linker.allow_shadowing(true);
        let engine = component.engine();
        for (name, import) in component.component_type().imports(engine) {
            let ComponentItem::ComponentInstance(instance) = import.ty else { continue };
            let Some(capability) = capability_of(name) else { continue };
            if capability == GrantKind::Http && grants.http() {
                continue;
            }
            // The linker holds each interface once, at WASI's own 0.2.x
            // version; a plugin built against an older one links to it by
            // semver, so that is the instance to stub.
            let mut stubs = linker.instance(&at_linked_version(name))?;
            for (item, ty) in instance.exports(engine) {
                if let ComponentItem::ComponentFunc(_) = ty.ty {
                    let function = format!("{name}#{item}");
                    stubs.func_new(item, move |_, _, _, _| Err(NotGranted { capability, function: function.clone() }.into()))?;
                }
            }
        }
        Ok(linker)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_wasi_versions_are_stubbed_where_the_linker_holds_them() {
        assert_eq!(at_linked_version("wasi:http/types@0.2.0"), "wasi:http/types@0.2.12");
        assert_eq!(at_linked_version("wasi:sockets/tcp@0.2.3"), "wasi:sockets/tcp@0.2.12");
        assert_eq!(at_linked_version("wasi:http/types@0.3.0"), "wasi:http/types@0.3.0");
    }
}
