//! A plugin's outbound HTTP request, sent to an address the host checked.
//!
//! A grant names a host; DNS decides where the name points, and a name a
//! plugin's author controls can point at the host's own network (loopback,
//! a private range, a cloud's link-local metadata address). So the name is
//! resolved here, every address it gives is checked — only public unicast
//! addresses pass, unless the grant names the address itself (`127.0.0.1:8080`)
//! — and the connection is made to a checked address, never by resolving
//! the name again (which a rebinding name could answer differently). TLS
//! still verifies the certificate against the name.

use http::uri::Scheme;
use http_body_util::BodyExt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody};

/// How long resolving and connecting may take when the request does not say.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Refused hosts one call remembers by name; more are only counted, so a
/// plugin cannot grow the list (or the outcome) without bound.
pub(super) const DENIED_HOSTS_KEPT: usize = 4;

/// What the gate refused and why, beyond the host: addresses a granted
/// name resolved to, noted as the request is sent, off the gate.
#[derive(Default)]
pub(super) struct Refusals {
    why: Mutex<Vec<String>>,
}

impl Refusals {
    pub(super) fn note(&self, why: String) {
        let mut noted = self.why.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if noted.len() < DENIED_HOSTS_KEPT && !noted.contains(&why) {
            noted.push(why);
        }
    }

    pub(super) fn taken(&self) -> Vec<String> {
        self.why.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

/// Where a request may go: the name (or address) and port its URI names,
/// and whether its grant names that address itself.
pub(super) struct Destination {
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) https: bool,
    /// The grant is this very address: it may be any address.
    pub(super) address_granted: bool,
}

impl Destination {
    /// The destination of `uri`'s authority.
    pub(super) fn of(uri: &http::Uri, address_granted: bool) -> Option<Self> {
        let https = uri.scheme() == Some(&Scheme::HTTPS);
        let host = uri.host()?.trim_start_matches('[').trim_end_matches(']').to_owned();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        Some(Destination { host, port, https, address_granted })
    }
}

/// Whether `ip` is a public unicast address: not loopback, private,
/// link-local, shared (CGNAT), unspecified, multicast, broadcast,
/// documentation or benchmarking space, nor an IPv6 address that embeds
/// one of those (mapped or NAT64) or is unique-local.
pub(super) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return public_v4(v4);
            }
            let segments = v6.segments();
            // 64:ff9b::/96, NAT64: the IPv4 address in its last 32 bits.
            if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                return public_v4(Ipv4Addr::from(u128::from(v6) as u32));
            }
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (segments[0] & 0xfe00) == 0xfc00 // unique local, fc00::/7
                || (segments[0] & 0xffc0) == 0xfe80 // link-local, fe80::/10
                || (segments[0] & 0xffc0) == 0xfec0 // site-local, fec0::/10 (deprecated)
                || segments[..2] == [0x2001, 0xdb8] // documentation
                || v6 == Ipv6Addr::from([0, 0, 0, 0, 0, 0, 0, 1]))
        }
    }
}

fn public_v4(v4: Ipv4Addr) -> bool {
    let [a, b, ..] = v4.octets();
    !(v4.is_loopback()
        || v4.is_private()
        || v4.is_link_local()
        || v4.is_unspecified()
        || v4.is_multicast()
        || v4.is_broadcast()
        || v4.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // shared address space, 100.64.0.0/10
        || (a == 198 && (b == 18 || b == 19)) // benchmarking, 198.18.0.0/15
        || a >= 240) // reserved
}

/// Why an address was not used, for the outcome: `loopback 127.0.0.1`.
fn kind(ip: IpAddr) -> &'static str {
    match ip {
        IpAddr::V4(v4) if v4.is_loopback() => "a loopback address",
        IpAddr::V6(v6) if v6.is_loopback() => "a loopback address",
        IpAddr::V4(v4) if v4.is_private() => "a private address",
        IpAddr::V4(v4) if v4.is_link_local() => "a link-local address",
        _ => "not a public address",
    }
}

pub(super) type Sent =
    wasmtime_wasi_http::Result<(http::Response<WasiBody>, Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>)>;

/// Send `request` to `to`: resolved, checked, connected to a checked
/// address, over TLS for `https`. A refusal is noted in `refusals` for the
/// call's outcome.
pub(super) async fn send(
    mut request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
    to: Destination,
    refusals: Arc<Refusals>,
) -> Sent {
    let connect_timeout = options.as_ref().and_then(|o| o.connect_timeout).unwrap_or(CONNECT_TIMEOUT);
    let first_byte_timeout = options.as_ref().and_then(|o| o.first_byte_timeout);
    let resolved: Vec<SocketAddr> = match to.host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, to.port)],
        Err(_) => match tokio::time::timeout(connect_timeout, tokio::net::lookup_host((to.host.as_str(), to.port))).await {
            Ok(Ok(found)) => found.collect(),
            Ok(Err(_)) => return Err(Error::DnsError { rcode: None, info_code: None }),
            Err(_) => return Err(Error::ConnectionTimeout),
        },
    };
    let (usable, refused): (Vec<SocketAddr>, Vec<SocketAddr>) =
        resolved.into_iter().partition(|address| to.address_granted || is_public(address.ip()));
    if usable.is_empty() {
        if let Some(address) = refused.first() {
            refusals.note(format!(
                "{} (it resolves to {}, {}, which its grant does not name; grant the address itself to reach it)",
                to.host,
                address.ip(),
                kind(address.ip())
            ));
        }
        return Err(Error::DestinationIpProhibited);
    }
    let stream = connect(&usable, connect_timeout).await?;
    let io: Box<dyn Stream> = if to.https {
        let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.into() };
        let config = rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth();
        let name = rustls::pki_types::ServerName::try_from(to.host.clone()).map_err(|_| Error::HttpRequestUriInvalid)?;
        let tls = tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, stream).await.map_err(Error::Tls)?;
        Box::new(tls)
    } else {
        Box::new(stream)
    };
    let (mut sender, connection) =
        tokio::time::timeout(connect_timeout, hyper::client::conn::http1::handshake(wasmtime_wasi_http::io::TokioIo::new(io)))
            .await
            .map_err(|_| Error::ConnectionTimeout)??;
    // The connection is driven beside the request; its end is reported to
    // the request's maker.
    let driven = tokio::spawn(connection);
    // Sent to the server itself: only the path goes on the request line.
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str()).to_owned();
    *request.uri_mut() = http::Uri::builder().path_and_query(path).build().map_err(|_| Error::HttpRequestUriInvalid)?;
    let sending = sender.send_request(request);
    let response = match first_byte_timeout {
        Some(wait) => tokio::time::timeout(wait, sending).await.map_err(|_| Error::ConnectionReadTimeout)??,
        None => sending.await?,
    };
    let ended = async move {
        match driven.await {
            Ok(result) => result.map_err(Error::from),
            Err(_) => Ok(()),
        }
    };
    let response = response.map(|body| body.map_err(Error::from).boxed_unsync());
    Ok((response, Box::new(ended)))
}

/// What TLS and plain connections have in common here.
trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static> Stream for T {}

/// A connection to the first of `addresses` that answers.
async fn connect(addresses: &[SocketAddr], timeout: Duration) -> Result<tokio::net::TcpStream, Error> {
    let mut last = None;
    for address in addresses {
        match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(address)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(error)) => last = Some(Error::Connect(error)),
            Err(_) => last = Some(Error::ConnectionTimeout),
        }
    }
    Err(last.unwrap_or(Error::ConnectionTimeout))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_unicast_addresses_are_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "198.18.0.1",
            "240.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
            "2001:db8::1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }
}
