//! Outbound HTTP: a plugin declares the hosts it calls (`http_hosts`),
//! `[plugins.NAME] http_hosts = ["example.com"]` allows them, and a call
//! granted one gets working `wasi:http` (without, its functions are stubs
//! that refuse, `linking`) behind a gate that lets requests reach granted
//! hosts only, and at most `http_requests` of them.
//!
//! The policy's entry decides the port: `host` is the scheme's own (80 for
//! `http`, 443 for `https`), `host:8080` that port, `host:*` any. And it
//! decides the addresses: a name reaches public addresses only, checked
//! when the request is sent (`outbound`); an address granted as such
//! (`127.0.0.1:8080`, `[::1]:*`) is reached whatever it is.

use super::super::descriptors::Descriptors;
use super::outbound::{self, DENIED_HOSTS_KEPT, Destination, Refusals, Sent};
use super::{AskedFor, Capability, Unasked, Withheld};
use crate::manifest::{Capabilities, Reach};
use crate::printable::printable;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
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
            let asked = Entry::parse(host);
            match allowed.iter().map(|a| Entry::parse(a)).find(|a| a.host == asked.host && a.covers(asked.port)) {
                // The declaration's own port, where it names one; else the policy's.
                Some(entry) => grants.push(Entry { port: asked.port.or(entry.port), ..entry }.to_string()),
                None => withheld.push(Withheld::HttpHost { host: host.clone() }),
            }
        }
        grants
    }

    fn unasked(requested: &Capabilities, allowed: &Vec<String>) -> Vec<Unasked> {
        let asked = requested.http_hosts.clone();
        allowed
            .iter()
            .filter(|host| !asked.iter().any(|asked| Entry::parse(asked).host == Entry::parse(host).host))
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
        let granted = |host: &String| grants.iter().any(|h| Entry::parse(h).host == Entry::parse(host).host);
        requested
            .http_hosts
            .iter()
            .map(|host| AskedFor { kind: "http", item: host.clone(), access: None, granted: granted(host), how: None })
            .collect()
    }
}

/// A host as a declaration or a policy writes it: `example.com`,
/// `example.com:8080`, `example.com:*`, `127.0.0.1`, `[::1]:8080`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    /// Lowercase, an IPv6 address without its brackets.
    host: String,
    port: Option<PortSpec>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PortSpec {
    Port(u16),
    Any,
}

impl Entry {
    fn parse(text: &str) -> Entry {
        let text = text.trim().to_ascii_lowercase();
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            match rest.split_once(']') {
                Some((host, port)) => (host.to_owned(), port.strip_prefix(':').map(str::to_owned)),
                None => (rest.to_owned(), None),
            }
        } else if text.matches(':').count() == 1 {
            let (host, port) = text.split_once(':').expect("one colon");
            (host.to_owned(), Some(port.to_owned()))
        } else {
            (text, None)
        };
        let port = port.map(|port| match port.as_str() {
            "*" => PortSpec::Any,
            // A port that is not a number matches nothing (port 0).
            number => PortSpec::Port(number.parse().unwrap_or(0)),
        });
        Entry { host, port }
    }

    /// Whether this policy entry allows a declaration's `port`.
    fn covers(&self, port: Option<PortSpec>) -> bool {
        match (self.port, port) {
            (_, None) | (Some(PortSpec::Any), _) => true,
            (mine, theirs) => mine == theirs,
        }
    }

    /// Whether a request to `port` over `https` or not may use it.
    fn admits_port(&self, port: u16, https: bool) -> bool {
        match self.port {
            None => port == if https { 443 } else { 80 },
            Some(PortSpec::Port(granted)) => granted == port,
            Some(PortSpec::Any) => true,
        }
    }
}

impl std::fmt::Display for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        match self.port {
            None => f.write_str(&host),
            Some(PortSpec::Any) => write!(f, "{host}:*"),
            Some(PortSpec::Port(port)) => write!(f, "{host}:{port}"),
        }
    }
}

/// The longest host name kept for a refusal message.
const DENIED_HOST_BYTES: usize = 255;

/// The `wasi:http` gate of one call: requests to granted hosts go out,
/// others are refused and remembered so the outcome can name them.
pub(crate) struct HttpGate {
    allowed: Vec<Entry>,
    /// Why granted names' addresses were refused.
    refusals: Arc<Refusals>,
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
            allowed: allowed.iter().map(|host| Entry::parse(host)).collect(),
            refusals: Arc::default(),
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
    /// many more; then why addresses of granted names were refused.
    pub(crate) fn denied_hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = self.denied.iter().map(|h| printable(h).into_owned()).collect();
        if self.denied_more > 0 {
            hosts.push(format!("and {} more", self.denied_more));
        }
        hosts.extend(self.refusals.taken().iter().map(|why| printable(why).into_owned()));
        hosts
    }

    /// Whether the call had a request refused: a host or port not
    /// granted, or a granted name's address.
    pub(crate) fn refused(&self) -> bool {
        !self.denied.is_empty() || !self.refusals.taken().is_empty()
    }

    /// Where a request to `uri` may go, when a grant admits its host and
    /// port.
    fn admits(&self, uri: &http::Uri) -> Option<Destination> {
        let to = Destination::of(uri, false)?;
        let host = to.host.to_ascii_lowercase();
        let entry = self.allowed.iter().find(|entry| entry.host == host && entry.admits_port(to.port, to.https))?;
        Some(Destination { address_granted: entry.host.parse::<IpAddr>().is_ok(), ..to })
    }
}

impl WasiHttpHooks for HttpGate {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<wasmtime_wasi_http::RequestOptions>,
        _response_errors: Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
    ) -> Box<dyn Future<Output = Sent> + Send> {
        let Some(to) = self.admits(request.uri()) else {
            let authority = request.uri().authority().map_or("", |a| a.as_str());
            self.deny(authority);
            return Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) });
        };
        if self.requests_left == 0 || self.descriptors.take().is_err() {
            self.out_of_requests = true;
            return Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) });
        }
        self.requests_left -= 1;
        Box::new(outbound::send(request, options, to, self.refusals.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_admits_its_host_on_its_port_only() {
        let gate =
            HttpGate::new(vec!["example.com".into(), "127.0.0.1:8080".into(), "api.test:*".into(), "[::1]:9000".into()], 1);
        let admits = |uri: &str| gate.admits(&uri.parse().unwrap()).map(|to| (to.port, to.address_granted));
        assert_eq!(admits("https://example.com/x"), Some((443, false)));
        assert_eq!(admits("http://EXAMPLE.com/"), Some((80, false)));
        assert_eq!(admits("http://example.com:81/"), None, "no port granted: the scheme's own only");
        assert_eq!(admits("http://127.0.0.1:8080/"), Some((8080, true)), "an address granted as such");
        assert_eq!(admits("http://127.0.0.1:9090/"), None);
        assert_eq!(admits("http://api.test:31337/"), Some((31337, false)), "any port, explicitly");
        assert_eq!(admits("http://[::1]:9000/"), Some((9000, true)));
        assert_eq!(admits("https://example.com.evil.test/"), None);
    }

    #[test]
    fn a_declaration_is_granted_the_policys_port_or_its_own() {
        let requested =
            Capabilities { http_hosts: vec!["api.test".into(), "db.test:5984".into(), "x.test".into()], ..Default::default() };
        let allowed = vec!["API.test:*".to_owned(), "db.test:*".to_owned(), "x.test:81".to_owned(), "other.test".to_owned()];
        let mut withheld = Vec::new();
        assert_eq!(Http::resolve(&requested, &allowed, &mut withheld), ["api.test:*", "db.test:5984", "x.test:81"]);
        assert!(withheld.is_empty(), "{withheld:?}");
        let unasked = Http::unasked(&requested, &allowed);
        assert_eq!(unasked.iter().map(|u| u.item.as_str()).collect::<Vec<_>>(), ["other.test"]);
    }
}
