//! Capabilities: what a call may touch beyond its own memory. The effective
//! grant is what the plugin asked for ∩ what the host's policy allows; the
//! WASI context of every call is built from it and from nothing else.
//!
//! A call starts with nothing: no preopened directories, no environment
//! variables, no sockets, no name lookups, and outbound HTTP refused. Each
//! capability is one unit, a [`Capability`]: its part of a `[plugins.NAME]`
//! section, how a declaration and that section make its grants (the rest
//! withheld), what it lets a call reach, what raises its tools' level,
//! how it is shown, and how it is wired into a call:
//! - [`directories`]: a [`DirGrant`] preopens one host directory at one
//!   guest path, read-only unless both sides said read-write;
//! - [`env`]: an [`EnvGrant`] sets one environment variable to the host's
//!   value;
//! - [`http`]: an HTTP host lets `wasi:http` requests reach that host (and
//!   port), through the call's `HttpGate`.
//!
//! `wasi:sockets` is never granted (`linking`), and the plugin log is no
//! capability: every plugin has it (`plugin_log`). A new capability is a
//! unit here; its field in the declaration (`Capabilities`, in the WIT and
//! the types crate) with its size check (`declaration`, in the protocol
//! crate); and its field in [`Allowance`], [`Grants`] and the section
//! (`registry::PluginSection`). Every method below that lists the units
//! destructures those structs, so each fails to compile until the new unit
//! is added to it, `raising_level` (what makes a tool `moderate`) among
//! them.

pub(crate) mod directories;
pub(crate) mod env;
pub(crate) mod http;
mod outbound;

use super::capture::Capture;
use crate::manifest::{Capabilities, Permission, Reach};
use directories::Directories;
use env::Env;
use http::Http;
use serde::Serialize;
use std::path::PathBuf;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder};

pub(crate) use directories::DirSection;
pub use directories::{AllowedDirs, DirGrant};
pub use env::EnvGrant;
pub(crate) use http::HttpGate;

/// One kind of thing a plugin may be granted.
pub(crate) trait Capability {
    /// Its part of a `[plugins.NAME]` section, as the file spells it.
    type Section;
    /// What the policy allows one plugin.
    type Allowed;
    /// One thing granted.
    type Grant;

    /// The section read into what it allows, its paths resolved.
    fn allowed(section: Self::Section, resolve: &dyn Fn(PathBuf) -> PathBuf) -> Self::Allowed;

    /// What `requested` asks for that `allowed` allows; the rest is pushed
    /// to `withheld`, with why.
    fn resolve(requested: &Capabilities, allowed: &Self::Allowed, withheld: &mut Vec<Withheld>) -> Vec<Self::Grant>;

    /// What `allowed` allows that `requested` never asks for: a policy
    /// mistake (`policy_check`).
    fn unasked(requested: &Capabilities, allowed: &Self::Allowed) -> Vec<Unasked>;

    /// What these grants let a call reach.
    fn reach(grants: &[Self::Grant]) -> Reach;

    /// The grants that raise a tool's level floor to `moderate`, as
    /// `write /workspace`, `http example.com`, `env HOME`.
    fn raising(grants: &[Self::Grant]) -> Vec<String>;

    /// Each grant as a person reads it, as `dir /w=/srv/w (read)`.
    fn described(grants: &[Self::Grant]) -> Vec<String>;

    /// Each thing of this kind `requested` asks for, and whether (and how)
    /// it was granted.
    fn asked(requested: &Capabilities, grants: &[Self::Grant]) -> Vec<AskedFor>;

    /// Give a call these grants through its WASI context (those that go
    /// elsewhere, as HTTP's gate, add nothing here).
    fn wire(grants: &[Self::Grant], wasi: &mut WasiCtxBuilder) -> wasmtime::Result<()> {
        let _ = (grants, wasi);
        Ok(())
    }
}

/// One thing a plugin asks for, and what became of it: what `toolhost
/// inspect` and the console show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct AskedFor {
    /// Its kind, as `dir`, `env`, `http`.
    pub kind: &'static str,
    /// The thing, as `/workspace`.
    pub item: String,
    /// How it was asked for, where that varies (a directory's access).
    pub access: Option<&'static str>,
    /// Whether it was granted.
    pub granted: bool,
    /// How, where that says more: `read-write → /srv/ws`.
    pub how: Option<String>,
}

/// Something a section allows that the plugin never asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Unasked {
    /// Its key inside `plugins.NAME`, as `dirs."/data"` or `env`.
    pub key: String,
    /// What kind of thing it is, as `directory`.
    pub what: &'static str,
    /// The thing, as `/data`.
    pub item: String,
    /// What the plugin does ask for, of that kind.
    pub asked: Vec<String>,
}

/// What the host's policy allows one plugin, as `toolhost.toml` says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Allowance {
    /// Guest path → the host directory behind it and the most access allowed.
    pub dirs: AllowedDirs,
    /// Environment variable names it may read.
    pub env: Vec<String>,
    /// HTTP hosts (`host` or `host:port`) it may reach.
    pub http_hosts: Vec<String>,
}

/// Something a plugin asked for and did not get, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "capability", rename_all = "kebab-case")]
// Exhaustive on purpose: a new capability must be explained wherever a
// withheld grant is (`toolhost check`, the policy checks).
pub enum Withheld {
    /// A directory the policy maps to nothing.
    Directory {
        /// The guest path asked for.
        guest_path: String,
    },
    /// An environment variable the policy does not allow, or the host lacks.
    Env {
        /// The variable.
        name: String,
        /// Why it was withheld.
        reason: String,
    },
    /// An HTTP host the policy does not allow.
    HttpHost {
        /// The host.
        host: String,
    },
}

impl std::fmt::Display for Withheld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Withheld::Directory { guest_path } => {
                write!(f, "directory {guest_path}: the policy maps no host directory to it")
            }
            Withheld::Env { name, reason } => write!(f, "env {name}: {reason}"),
            Withheld::HttpHost { host } => write!(f, "http host {host}: not allowed by the policy"),
        }
    }
}

/// The effective grants of one plugin.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Grants {
    /// Directories it sees.
    pub dirs: Vec<DirGrant>,
    /// Environment variables it sees.
    pub env: Vec<EnvGrant>,
    /// HTTP hosts it may reach.
    pub http_hosts: Vec<String>,
    /// What it asked for and did not get.
    pub withheld: Vec<Withheld>,
}

impl Grants {
    /// Nothing at all: the grants a manifest is read with.
    pub fn none() -> Self {
        Grants::default()
    }

    /// What a call under these grants can reach.
    pub fn reach(&self) -> Reach {
        let Grants { dirs, env, http_hosts, withheld: _ } = self;
        [Directories::reach(dirs), Env::reach(env), Http::reach(http_hosts)].into_iter().max().unwrap_or(Reach::Compute)
    }

    /// The least level the host holds a tool under these grants to,
    /// whatever its plugin declares: `moderate` when they let it write or
    /// reach out (see [`raising_level`](Self::raising_level)), else
    /// `public`. Only the policy goes below it, by an approval rule.
    pub fn level_floor(&self) -> Permission {
        if self.raising_level().is_empty() { Permission::Public } else { Permission::Moderate }
    }

    /// The grants that raise [`level_floor`](Self::level_floor):
    /// read-write directories, HTTP hosts and environment variables, as
    /// `write /workspace`, `http example.com`, `env HOME`. A read-only
    /// directory does not: the plugin only reads what the operator put
    /// there.
    pub fn raising_level(&self) -> Vec<String> {
        let Grants { dirs, env, http_hosts, withheld: _ } = self;
        [Directories::raising(dirs), Http::raising(http_hosts), Env::raising(env)].concat()
    }

    /// Every grant as a person reads it: `dir /w=/srv/w (read-write)`,
    /// `env HOME`, `http example.com`.
    pub fn described(&self) -> Vec<String> {
        let Grants { dirs, env, http_hosts, withheld: _ } = self;
        [Directories::described(dirs), Env::described(env), Http::described(http_hosts)].concat()
    }

    /// Each thing `requested` asks for, and what became of it.
    pub fn asked(&self, requested: &Capabilities) -> Vec<AskedFor> {
        let Grants { dirs, env, http_hosts, withheld: _ } = self;
        [Directories::asked(requested, dirs), Env::asked(requested, env), Http::asked(requested, http_hosts)].concat()
    }

    /// Intersect what a plugin asks for with what the policy allows.
    pub fn resolve(requested: &Capabilities, allowed: &Allowance) -> Self {
        let mut withheld = Vec::new();
        let dirs = Directories::resolve(requested, &allowed.dirs, &mut withheld);
        let env = Env::resolve(requested, &allowed.env, &mut withheld);
        let http_hosts = Http::resolve(requested, &allowed.http_hosts, &mut withheld);
        Grants { dirs, env, http_hosts, withheld }
    }

    /// The WASI context of one call: these grants and nothing more, with
    /// stdout and stderr captured into bounded pipes.
    pub(crate) fn wasi_ctx(&self, stdout: Capture, stderr: Capture, max_random_bytes: u64) -> wasmtime::Result<WasiCtx> {
        let mut builder = WasiCtxBuilder::new();
        builder
            .stdout(stdout)
            .stderr(stderr)
            .max_random_size(max_random_bytes)
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        let Grants { dirs, env, http_hosts, withheld: _ } = self;
        Directories::wire(dirs, &mut builder)?;
        Env::wire(env, &mut builder)?;
        Http::wire(http_hosts, &mut builder)?;
        Ok(builder.build())
    }

    /// Whether a call gets working `wasi:http` (else its functions refuse).
    pub(crate) fn http(&self) -> bool {
        !self.http_hosts.is_empty()
    }
}

impl Allowance {
    /// A `[plugins.NAME]` section's capability keys read into what they
    /// allow, paths resolved.
    pub(crate) fn from_section(
        dirs: <Directories as Capability>::Section,
        env: <Env as Capability>::Section,
        http_hosts: <Http as Capability>::Section,
        resolve: &dyn Fn(PathBuf) -> PathBuf,
    ) -> Self {
        Allowance {
            dirs: Directories::allowed(dirs, resolve),
            env: Env::allowed(env, resolve),
            http_hosts: Http::allowed(http_hosts, resolve),
        }
    }

    /// What this allows that `requested` never asks for.
    pub fn unasked(&self, requested: &Capabilities) -> Vec<Unasked> {
        let Allowance { dirs, env, http_hosts } = self;
        [Directories::unasked(requested, dirs), Env::unasked(requested, env), Http::unasked(requested, http_hosts)].concat()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{DirAccess, DirRequest};
    use std::collections::BTreeMap;

    #[test]
    fn effective_grant_is_the_intersection() {
        let requested = Capabilities {
            directories: vec![
                DirRequest { guest_path: "/rw".into(), access: DirAccess::ReadWrite },
                DirRequest { guest_path: "/unmapped".into(), access: DirAccess::Read },
            ],
            env: vec!["PATH".into(), "NOT_ALLOWED".into()],
            http_hosts: vec!["Example.com".into(), "evil.test".into()],
        };
        let allowed = Allowance {
            dirs: BTreeMap::from([("/rw".into(), (PathBuf::from("/tmp"), DirAccess::Read))]),
            env: vec!["PATH".into()],
            http_hosts: vec!["example.com".into(), "other.test".into()],
        };
        let grants = Grants::resolve(&requested, &allowed);
        assert_eq!(grants.dirs, vec![DirGrant { guest_path: "/rw".into(), host_path: "/tmp".into(), access: DirAccess::Read }]);
        assert_eq!(grants.env.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["PATH"]);
        assert_eq!(grants.http_hosts, ["example.com"]);
        assert_eq!(
            grants.withheld.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "directory /unmapped: the policy maps no host directory to it",
                "env NOT_ALLOWED: not allowed by the policy",
                "http host evil.test: not allowed by the policy",
            ]
        );
    }

    #[test]
    fn a_granted_value_never_shows_in_debug_output() {
        let grant = EnvGrant::for_test("API_TOKEN", "s3cr3t-value");
        let grants = Grants { env: vec![grant.clone()], ..Grants::none() };
        for shown in [format!("{grant:?}"), format!("{grants:?}"), format!("{grants:#?}")] {
            assert!(shown.contains("API_TOKEN"), "{shown}");
            assert!(!shown.contains("s3cr3t-value"), "{shown}");
        }
    }

    #[test]
    fn each_unit_reports_what_is_allowed_but_never_asked_for() {
        let requested = Capabilities {
            directories: vec![DirRequest { guest_path: "/asked".into(), access: DirAccess::Read }],
            env: vec!["HOME".into()],
            http_hosts: vec![],
        };
        let allowed = Allowance {
            dirs: BTreeMap::from([
                ("/asked".into(), (PathBuf::from("/a"), DirAccess::Read)),
                ("/data".into(), (PathBuf::from("/d"), DirAccess::Read)),
            ]),
            env: vec!["HOME".into(), "TOKEN".into()],
            http_hosts: vec!["example.com".into()],
        };
        let unasked: Vec<(String, &str, String)> =
            allowed.unasked(&requested).into_iter().map(|u| (u.key, u.what, u.item)).collect();
        assert_eq!(
            unasked,
            [
                ("dirs.\"/data\"".to_owned(), "directory", "/data".to_owned()),
                ("env".to_owned(), "variable", "TOKEN".to_owned()),
                ("http_hosts".to_owned(), "HTTP host", "example.com".to_owned()),
            ]
        );
    }

    #[test]
    fn the_grants_reach_as_far_as_their_farthest_unit_and_say_what_raises_the_level() {
        let read_only = DirGrant { guest_path: "/r".into(), host_path: "/srv/r".into(), access: DirAccess::Read };
        let mut grants = Grants { dirs: vec![read_only.clone()], ..Grants::none() };
        assert_eq!((grants.reach(), grants.level_floor()), (Reach::Read, Permission::Public));
        grants.http_hosts.push("example.com".into());
        assert_eq!((grants.reach(), grants.level_floor()), (Reach::Read, Permission::Moderate));
        grants.dirs.push(DirGrant { access: DirAccess::ReadWrite, guest_path: "/w".into(), ..read_only });
        assert_eq!(grants.reach(), Reach::Write);
        assert_eq!(grants.raising_level(), ["write /w", "http example.com"]);
        assert_eq!(grants.described(), ["dir /r=/srv/r (read)", "dir /w=/srv/r (read-write)", "http example.com"]);
        assert_eq!(Grants::none().reach(), Reach::Compute);
    }
}
