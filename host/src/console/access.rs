//! Who may use the console: a request carries the token (the cookie the
//! printed URL sets, or `Authorization: Bearer`), names a Host the console
//! answers to (no DNS rebinding), and — when it changes anything — comes
//! from the console's own page, never another origin. Every answer forbids
//! framing, caching and loading from anywhere else.

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::net::SocketAddr;

/// The console's own origin, its token, and the cookie that carries it.
pub(super) struct Access {
    /// The token, hex.
    token: String,
    /// The token's digest: compared by digest, the time taken says nothing
    /// about the token.
    digest: [u8; 32],
    /// Named by port: consoles on other ports of the same host keep theirs.
    cookie: String,
    /// Host header values accepted.
    hosts: Vec<String>,
}

/// Random bytes in a token.
const TOKEN_BYTES: usize = 24;

/// What a page may load and where it may connect: only the console itself.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
     connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

impl Access {
    /// A fresh random token for a console listening on `addr`.
    pub(super) fn new(addr: SocketAddr) -> Self {
        let mut bytes = [0u8; TOKEN_BYTES];
        getrandom::fill(&mut bytes).expect("the operating system's random source");
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Self::with_token(addr, token)
    }

    pub(super) fn with_token(addr: SocketAddr, token: String) -> Self {
        let port = addr.port();
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "[::1]"].iter().map(|h| format!("{h}:{port}")).collect();
        // Listening beyond loopback: the address it was given is its name too.
        let own = match addr.ip() {
            std::net::IpAddr::V6(ip) => format!("[{ip}]:{port}"),
            std::net::IpAddr::V4(ip) => format!("{ip}:{port}"),
        };
        if !hosts.contains(&own) {
            hosts.push(own);
        }
        Access { digest: Sha256::digest(token.as_bytes()).into(), cookie: format!("toolhost_console_{port}"), token, hosts }
    }

    pub(super) fn token(&self) -> &str {
        &self.token
    }

    fn is_token(&self, given: &str) -> bool {
        Sha256::digest(given.as_bytes()).as_slice() == self.digest
    }

    /// Whether the request carries the token: in any cookie of the
    /// console's name (a page on another port of this host may plant a
    /// decoy of the same name, which must not lock the console out), or
    /// as a bearer header.
    fn carries_token(&self, headers: &HeaderMap) -> bool {
        let mut cookies = headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';'));
        let in_cookie = cookies
            .any(|pair| pair.trim().split_once('=').is_some_and(|(name, value)| name == self.cookie && self.is_token(value)));
        let bearer = || headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
        in_cookie || bearer().is_some_and(|given| self.is_token(given))
    }

    /// `?token=…` in the URL: the printed link's way in.
    fn in_query(request: &Request) -> Option<&str> {
        request.uri().query()?.split('&').find_map(|pair| pair.strip_prefix("token="))
    }

    /// The request's Host, if the console answers to it.
    fn host_ok(&self, headers: &HeaderMap) -> bool {
        headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|host| self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)))
    }

    /// A request that changes something must come from the console's own
    /// page: an `Origin` other than its own is refused, and so is a
    /// browser's cross-site fetch without one.
    fn same_origin(&self, headers: &HeaderMap) -> bool {
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            return origin.strip_prefix("http://").is_some_and(|host| self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)));
        }
        match headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
            Some(site) => site == "same-origin" || site == "none",
            // Not a browser (curl, a script holding the token).
            None => true,
        }
    }

    /// The guard every request passes.
    pub(super) async fn guard(&self, request: Request, next: Next) -> Response {
        if !self.host_ok(request.headers()) {
            return refused(StatusCode::MISDIRECTED_REQUEST, "this console answers only to its own address (localhost)\n");
        }
        let changes = !matches!(*request.method(), Method::GET | Method::HEAD);
        if changes && !self.same_origin(request.headers()) {
            return refused(StatusCode::FORBIDDEN, "a request from another origin may not change anything here\n");
        }
        if request.method() == Method::GET && Self::in_query(&request).is_some_and(|given| self.is_token(given)) {
            return self.enter(&request);
        }
        if !self.carries_token(request.headers()) {
            return refused(
                StatusCode::UNAUTHORIZED,
                "the console needs its token: open the URL `toolhost console` printed (it ends in ?token=…)\n",
            );
        }
        let mut response = next.run(request).await;
        secure(response.headers_mut());
        response
    }

    /// The printed link: set the cookie and go to the same page without
    /// the token in the address bar (or the history, or a Referer).
    fn enter(&self, request: &Request) -> Response {
        // Only a path of this console: `//host/…` would leave it.
        let path = match request.uri().path() {
            path if path.starts_with('/') && !path.starts_with("//") => path,
            _ => "/",
        };
        let cookie = format!("{}={}; Path=/; HttpOnly; SameSite=Strict", self.cookie, self.token);
        let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, path.to_owned())]).into_response();
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().insert(header::SET_COOKIE, value);
        }
        secure(response.headers_mut());
        response
    }
}

fn refused(status: StatusCode, message: &'static str) -> Response {
    let mut response = (status, message).into_response();
    secure(response.headers_mut());
    response
}

/// Headers on every answer: nothing framed, sniffed, cached or referred.
fn secure(headers: &mut HeaderMap) {
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}
