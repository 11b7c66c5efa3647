//! Grants: what a call may touch. The effective grant is what the plugin
//! asked for ∩ what the host's policy allows; the WASI context of every call
//! is built from it and from nothing else.
//!
//! A call starts with nothing: no preopened directories, no environment
//! variables, no sockets, no name lookups, and outbound HTTP refused. Each
//! grant opens exactly one thing:
//! - a [`DirGrant`] preopens one host directory at one guest path, read-only
//!   unless both sides said read-write;
//! - an [`EnvGrant`] sets one environment variable to the host's value;
//! - an HTTP host lets `wasi:http` requests reach that host (and port).

use super::capture::Capture;
use super::descriptors::Descriptors;
use crate::manifest::{Capabilities, DirAccess, Permission, Reach};
use crate::printable::printable;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};
use wasmtime_wasi_http::{WasiBody, WasiHttpHooks};

/// What the host's policy allows one plugin, as `toolhost.toml` says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowance {
    /// Guest path → the host directory behind it and the most access allowed.
    pub dirs: BTreeMap<String, (PathBuf, DirAccess)>,
    /// Environment variable names it may read.
    pub env: Vec<String>,
    /// HTTP hosts (`host` or `host:port`) it may reach.
    pub http_hosts: Vec<String>,
}

/// A directory a call sees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DirGrant {
    /// The path inside the sandbox.
    pub guest_path: String,
    /// The host directory behind it.
    pub host_path: PathBuf,
    /// The effective access: the lesser of what was asked and allowed.
    pub access: DirAccess,
}

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
        if self.dirs.iter().any(|d| d.access == DirAccess::ReadWrite) {
            Reach::Write
        } else if !self.dirs.is_empty() || !self.env.is_empty() || !self.http_hosts.is_empty() {
            Reach::Read
        } else {
            Reach::Compute
        }
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
        let writes = self.dirs.iter().filter(|d| d.access == DirAccess::ReadWrite).map(|d| format!("write {}", d.guest_path));
        let hosts = self.http_hosts.iter().map(|h| format!("http {h}"));
        let env = self.env.iter().map(|e| format!("env {}", e.name));
        writes.chain(hosts).chain(env).collect()
    }

    /// Intersect what a plugin asks for with what the policy allows.
    pub fn resolve(requested: &Capabilities, allowed: &Allowance) -> Self {
        let mut grants = Grants::none();
        for dir in &requested.directories {
            match allowed.dirs.get(&dir.guest_path) {
                Some((host_path, most)) => grants.dirs.push(DirGrant {
                    guest_path: dir.guest_path.clone(),
                    host_path: host_path.clone(),
                    access: dir.access.min(*most),
                }),
                None => grants.withheld.push(Withheld::Directory { guest_path: dir.guest_path.clone() }),
            }
        }
        for name in &requested.env {
            if !allowed.env.contains(name) {
                grants.withheld.push(Withheld::Env { name: name.clone(), reason: "not allowed by the policy".into() });
                continue;
            }
            match std::env::var(name) {
                Ok(value) => grants.env.push(EnvGrant { name: name.clone(), value }),
                Err(_) => {
                    grants.withheld.push(Withheld::Env { name: name.clone(), reason: "allowed, but not set on the host".into() })
                }
            }
        }
        for host in &requested.http_hosts {
            if allowed.http_hosts.iter().any(|a| a.eq_ignore_ascii_case(host)) {
                grants.http_hosts.push(host.to_ascii_lowercase());
            } else {
                grants.withheld.push(Withheld::HttpHost { host: host.clone() });
            }
        }
        grants
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
        for dir in &self.dirs {
            let perms = match dir.access {
                DirAccess::Read => FsPerms::ReadOnly,
                DirAccess::ReadWrite => FsPerms::ReadWrite,
            };
            builder.preopened_dir(&dir.host_path, &dir.guest_path, perms)?;
        }
        for env in &self.env {
            builder.env(&env.name, &env.value);
        }
        Ok(builder.build())
    }
}

/// Refused hosts one call remembers by name; more are only counted, so a
/// plugin cannot grow the list (or the outcome) without bound.
const DENIED_HOSTS_KEPT: usize = 4;
/// The longest host name kept for a refusal message.
const DENIED_HOST_BYTES: usize = 255;

/// The `wasi:http` gate of one call: requests to granted hosts go out,
/// others are refused and remembered so the outcome can name them.
pub(crate) struct HttpGate {
    allowed: Vec<String>,
    /// Refused hosts as the plugin wrote them, cut to a length.
    pub(crate) denied: Vec<String>,
    denied_more: usize,
    /// Requests the call may still send; each holds a connection.
    requests_left: usize,
    /// Whether a request was refused because none were left.
    pub(crate) out_of_requests: bool,
    /// The connections' share of the process's descriptors.
    descriptors: Descriptors,
}

impl HttpGate {
    pub(crate) fn new(allowed: Vec<String>, requests: usize) -> Self {
        HttpGate {
            allowed,
            denied: Vec::new(),
            denied_more: 0,
            requests_left: requests,
            out_of_requests: false,
            descriptors: Descriptors::default(),
        }
    }

    fn deny(&mut self, authority: &str) {
        let cut = &authority[..authority.floor_char_boundary(DENIED_HOST_BYTES)];
        if self.denied.iter().any(|d| d == cut) {
            return;
        }
        if self.denied.len() < DENIED_HOSTS_KEPT {
            self.denied.push(cut.to_owned());
        } else {
            self.denied_more += 1;
        }
    }

    /// The refused hosts for a message, escaped: the first few, then how
    /// many more.
    pub(crate) fn denied_hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = self.denied.iter().map(|h| printable(h).into_owned()).collect();
        if self.denied_more > 0 {
            hosts.push(format!("and {} more", self.denied_more));
        }
        hosts
    }

    fn admits(&self, uri: &http::Uri) -> bool {
        let Some(host) = uri.host() else { return false };
        let with_port = uri.port_u16().map(|port| format!("{host}:{port}"));
        self.allowed.iter().any(|allowed| {
            allowed.eq_ignore_ascii_case(host) || with_port.as_deref().is_some_and(|hp| allowed.eq_ignore_ascii_case(hp))
        })
    }
}

type SendResult =
    wasmtime_wasi_http::Result<(http::Response<WasiBody>, Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>)>;

impl WasiHttpHooks for HttpGate {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<wasmtime_wasi_http::RequestOptions>,
        _response_errors: Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
    ) -> Box<dyn Future<Output = SendResult> + Send> {
        if !self.admits(request.uri()) {
            let authority = request.uri().authority().map_or("", |a| a.as_str());
            self.deny(authority);
            return Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) });
        }
        if self.requests_left == 0 || self.descriptors.take().is_err() {
            self.out_of_requests = true;
            return Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) });
        }
        self.requests_left -= 1;
        Box::new(async move {
            use http_body_util::BodyExt;
            let (response, io) = wasmtime_wasi_http::default_send_request(request, options).await?;
            Ok((response.map(BodyExt::boxed_unsync), Box::new(io) as Box<dyn Future<Output = _> + Send>))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::DirRequest;

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
        let grant = EnvGrant { name: "API_TOKEN".into(), value: "s3cr3t-value".into() };
        let grants = Grants { env: vec![grant.clone()], ..Grants::none() };
        for shown in [format!("{grant:?}"), format!("{grants:?}"), format!("{grants:#?}")] {
            assert!(shown.contains("API_TOKEN"), "{shown}");
            assert!(!shown.contains("s3cr3t-value"), "{shown}");
        }
    }

    #[test]
    fn http_gate_matches_host_or_host_and_port() {
        let gate = HttpGate::new(vec!["example.com".to_string(), "127.0.0.1:8080".to_string()], 1);
        assert!(gate.admits(&"https://example.com/x".parse().unwrap()));
        assert!(gate.admits(&"http://EXAMPLE.com:81/".parse().unwrap()));
        assert!(gate.admits(&"http://127.0.0.1:8080/".parse().unwrap()));
        assert!(!gate.admits(&"http://127.0.0.1:9090/".parse().unwrap()));
        assert!(!gate.admits(&"https://example.com.evil.test/".parse().unwrap()));
    }
}
