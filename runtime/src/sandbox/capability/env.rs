//! Environment variables: a plugin declares the names it reads (`env`),
//! `[plugins.NAME] env = ["HOME"]` allows them, and a call sees each
//! allowed one that is set on the host, with the host's value.

use super::{AskedFor, Capability, Unasked, Withheld};
use crate::manifest::{Capabilities, Reach};
use serde::Serialize;
use std::path::PathBuf;
use wasmtime_wasi::WasiCtxBuilder;

/// Environment variables as a `[plugins.NAME]` section allows them.
pub(crate) struct Env;

/// An environment variable a call sees. Its value is never serialized
/// nor shown by `Debug`: it may be a secret.
#[derive(Clone, PartialEq, Eq, Serialize)]
pub struct EnvGrant {
    /// The variable's name.
    pub name: String,
    #[serde(skip)]
    value: String,
}

impl std::fmt::Debug for EnvGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvGrant").field("name", &self.name).field("value", &"<redacted>").finish()
    }
}

impl Capability for Env {
    type Section = Vec<String>;
    type Allowed = Vec<String>;
    type Grant = EnvGrant;

    fn allowed(section: Vec<String>, _: &dyn Fn(PathBuf) -> PathBuf) -> Vec<String> {
        section
    }

    fn resolve(requested: &Capabilities, allowed: &Vec<String>, withheld: &mut Vec<Withheld>) -> Vec<EnvGrant> {
        let mut grants = Vec::new();
        for name in &requested.env {
            if !allowed.contains(name) {
                withheld.push(Withheld::Env { name: name.clone(), reason: "not allowed by the policy".into() });
                continue;
            }
            match std::env::var(name) {
                Ok(value) => grants.push(EnvGrant { name: name.clone(), value }),
                Err(_) => withheld.push(Withheld::Env { name: name.clone(), reason: "allowed, but not set on the host".into() }),
            }
        }
        grants
    }

    fn unasked(requested: &Capabilities, allowed: &Vec<String>) -> Vec<Unasked> {
        let asked = requested.env.clone();
        allowed
            .iter()
            .filter(|name| !asked.contains(name))
            .map(|name| Unasked { key: "env".to_owned(), what: "variable", item: name.clone(), asked: asked.clone() })
            .collect()
    }

    fn reach(grants: &[EnvGrant]) -> Reach {
        if grants.is_empty() { Reach::Compute } else { Reach::Read }
    }

    fn raising(grants: &[EnvGrant]) -> Vec<String> {
        grants.iter().map(|e| format!("env {}", e.name)).collect()
    }

    fn described(grants: &[EnvGrant]) -> Vec<String> {
        Self::raising(grants)
    }

    fn asked(requested: &Capabilities, grants: &[EnvGrant]) -> Vec<AskedFor> {
        let granted = |name: &String| grants.iter().any(|e| &e.name == name);
        requested
            .env
            .iter()
            .map(|name| AskedFor { kind: "env", item: name.clone(), access: None, granted: granted(name), how: None })
            .collect()
    }

    fn wire(grants: &[EnvGrant], wasi: &mut WasiCtxBuilder) -> wasmtime::Result<()> {
        for env in grants {
            wasi.env(&env.name, &env.value);
        }
        Ok(())
    }
}

#[cfg(test)]
impl EnvGrant {
    pub(crate) fn for_test(name: &str, value: &str) -> Self {
        EnvGrant { name: name.into(), value: value.into() }
    }
}
