//! Outbound HTTP: a plugin declares the hosts it calls (`http_hosts`),
//! `[plugins.NAME] http_hosts = ["example.com"]` allows them, and a call
//! granted one gets working `wasi:http` (without, its functions are stubs
//! that refuse, `linking`) behind a gate that lets requests reach granted
//! hosts only, and at most `http_requests` of them.

use super::super::descriptors::Descriptors;
use super::{AskedFor, Capability, Unasked, Withheld};
use crate::manifest::{Capabilities, Reach};
use crate::printable::printable;
use std::path::PathBuf;
use wasmtime_wasi_http::{WasiBody, WasiHttpHooks};

/// HTTP hosts as a `[plugins.NAME]` section allows them.
pub(crate) struct Http;

impl Capability for Http {
    type Section = Vec<String>;
    /// Hosts (`host` or `host:port`) a plugin may reach.
    type Allowed = Vec<String>;
    /// A host it may reach, lowercase.
    type Grant = String;

    fn allowed(section: Vec<String>, _: &dyn Fn(PathBuf) -> PathBuf) -> Vec<String> {
        section
    }

    fn resolve(requested: &Capabilities, allowed: &Vec<String>, withheld: &mut Vec<Withheld>) -> Vec<String> {
        let mut grants = Vec::new();
        for host in &requested.http_hosts {
            if allowed.iter().any(|a| a.eq_ignore_ascii_case(host)) {
                grants.push(host.to_ascii_lowercase());
            } else {
                withheld.push(Withheld::HttpHost { host: host.clone() });
            }
        }
        grants
    }

    fn unasked(requested: &Capabilities, allowed: &Vec<String>) -> Vec<Unasked> {
        let asked = requested.http_hosts.clone();
        allowed
            .iter()
            .filter(|host| !asked.iter().any(|asked| asked.eq_ignore_ascii_case(host)))
            .map(|host| Unasked { key: "http_hosts".to_owned(), what: "HTTP host", item: host.clone(), asked: asked.clone() })
            .collect()
    }

    fn reach(grants: &[String]) -> Reach {
        if grants.is_empty() { Reach::Compute } else { Reach::Read }
    }

    fn raising(grants: &[String]) -> Vec<String> {
        grants.iter().map(|h| format!("http {h}")).collect()
    }

    fn described(grants: &[String]) -> Vec<String> {
        Self::raising(grants)
    }

    fn asked(requested: &Capabilities, grants: &[String]) -> Vec<AskedFor> {
        let granted = |host: &String| grants.iter().any(|h| h.eq_ignore_ascii_case(host));
        requested
            .http_hosts
            .iter()
            .map(|host| AskedFor { kind: "http", item: host.clone(), access: None, granted: granted(host), how: None })
            .collect()
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
