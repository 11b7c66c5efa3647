//! MCP over streamable HTTP at `/mcp` (axum): sessions per client, or
//! stateless for replicas behind a load balancer; loopback Host names
//! only unless more are allowed (DNS-rebinding protection); an optional
//! bearer token.

use super::bounds;
use super::session::{ClientGone, Session};
use super::sessions::{BoundedSessions, session_idle_limit};
use super::{LOOPBACK_HOSTS, McpError, McpServer};
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Browser origins accepted by default: pages served from this machine.
const LOOPBACK_ORIGINS: &[&str] = &["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

/// The path the server answers at.
pub(crate) const MCP_PATH: &str = "/mcp";

/// How the HTTP server runs, beyond `[mcp]`.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct HttpOptions {
    /// No server-side sessions: every request stands alone, so replicas
    /// behind a load balancer can serve one URL. A handshake-era client
    /// cannot be asked to approve anything then (`[mcp] unattended`
    /// decides); a 2026-07-28 client with elicitation is asked through
    /// `input_required`, its answer finished by whichever replica gets it.
    /// No client is told when the tools change.
    pub stateless: bool,
    /// A request without `Authorization: Bearer TOKEN` gets 401.
    pub token: Option<String>,
    /// Host names accepted besides loopback and `[mcp] allowed_hosts`.
    pub allowed_hosts: Vec<String>,
}

impl std::fmt::Debug for HttpOptions {
    /// The token is a secret: shown only as there or not.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("stateless", &self.stateless)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("allowed_hosts", &self.allowed_hosts)
            .finish()
    }
}

impl McpServer {
    /// The axum router serving MCP at `/mcp`, until `shutdown` fires.
    pub fn http_router(&self, options: &HttpOptions, shutdown: &CancellationToken) -> axum::Router {
        let config = &self.shared.config;
        let hosts = LOOPBACK_HOSTS.iter().map(|host| host.to_string()).chain(config.allowed_hosts.iter().cloned());
        let http = StreamableHttpServerConfig::default()
            .with_max_request_body_bytes(config.max_request_bytes)
            .with_allowed_hosts(hosts.chain(options.allowed_hosts.iter().cloned()))
            .with_legacy_session_mode(!options.stateless)
            .with_json_response(options.stateless)
            .with_cancellation_token(shutdown.child_token());
        // A browser page may call only from a loopback origin or one
        // `[mcp] allowed_origins` names; requests without an Origin (every
        // client that is not a browser) pass.
        let origins = LOOPBACK_ORIGINS.iter().map(|origin| origin.to_string()).chain(config.allowed_origins.iter().cloned());
        let http = http.with_allowed_origins(origins).enforce_origin_validation();
        let shared = self.shared.clone();
        let can_ask = !options.stateless;
        let factory = move || Ok(Session::new(shared.clone(), can_ask));
        let router = if options.stateless {
            axum::Router::new()
                .nest_service(MCP_PATH, StreamableHttpService::new(factory, Arc::new(NeverSessionManager::default()), http))
        } else {
            let call_timeout = std::time::Duration::from_millis(config.agent_settings.timeout_ms);
            let idle_limit = session_idle_limit(config.approval_timeout, call_timeout);
            let sessions = Arc::new(BoundedSessions::new(config.max_sessions, idle_limit));
            let router = axum::Router::new().nest_service(MCP_PATH, StreamableHttpService::new(factory, sessions.clone(), http));
            // rmcp closes any id it is given; closing one it does not have is 404.
            router.layer(axum::middleware::from_fn(move |request: Request, next: Next| {
                let sessions = sessions.clone();
                async move { unknown_session_not_found(&sessions, request, next).await }
            }))
        };
        // rmcp answers a session's DELETE with 202; clients (the official
        // Python one among them) take only 200 or 204 for "closed".
        let router = router.layer(axum::middleware::from_fn(closed_is_no_content)).layer(axum::middleware::from_fn(watch_client));
        // Inside the token check: a client without it is not read at all.
        let max_bytes = config.max_request_bytes;
        let router = router.layer(axum::middleware::from_fn(move |request: Request, next: Next| {
            bounds::bound_request(max_bytes, request, next)
        }));
        match &options.token {
            Some(token) => {
                let expected = Arc::new(Sha256::digest(token.as_bytes()));
                router.layer(axum::middleware::from_fn(move |request: Request, next: Next| {
                    let expected = expected.clone();
                    async move { require_token(&expected, request, next).await }
                }))
            }
            None => router,
        }
    }

    /// Serve MCP over HTTP on `listener` until `shutdown` fires; the
    /// registry's changes are told to every client with a session.
    ///
    /// # Errors
    ///
    /// [`McpError::Transport`] when serving the listener fails.
    pub async fn serve_http(
        &self,
        listener: tokio::net::TcpListener,
        options: &HttpOptions,
        shutdown: CancellationToken,
    ) -> Result<(), McpError> {
        let notifier = self.notify_tool_changes(shutdown.clone());
        let router = self.http_router(options, &shutdown);
        // With each connection's address: stateless requests count against
        // `[mcp] max_calls_per_client` by it.
        let service = router.into_make_service_with_connect_info::<std::net::SocketAddr>();
        let served = axum::serve(listener, service).with_graceful_shutdown(shutdown.cancelled_owned()).await;
        notifier.abort();
        Ok(served?)
    }
}

/// Give each request a [`ClientGone`], cancelled when its response body
/// is dropped: a call whose client vanished without a cancel is then
/// cancelled, and its questions withdrawn from every approver.
async fn watch_client(mut request: Request, next: Next) -> Response {
    let gone = CancellationToken::new();
    request.extensions_mut().insert(ClientGone(gone.clone()));
    let response = next.run(request).await;
    let guard = gone.drop_guard();
    response.map(|body| {
        let stream = futures::StreamExt::map(body.into_data_stream(), move |chunk| {
            let _held = &guard;
            chunk
        });
        axum::body::Body::from_stream(stream)
    })
}

/// A session closed by `DELETE` is `204 No Content`.
async fn closed_is_no_content(request: Request, next: Next) -> Response {
    let closing = request.method() == axum::http::Method::DELETE;
    let mut response = next.run(request).await;
    if closing && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}

/// A `DELETE` of a session the server does not have is `404 Not Found`,
/// as for any other request naming it; rmcp's own checks (Host, Origin)
/// answer first.
async fn unknown_session_not_found(sessions: &BoundedSessions, request: Request, next: Next) -> Response {
    let unknown = match request.headers().get(SESSION_ID_HEADER).and_then(|value| value.to_str().ok()) {
        Some(id) if request.method() == axum::http::Method::DELETE => {
            !sessions.has_session(&id.to_owned().into()).await.unwrap_or(false)
        }
        _ => false,
    };
    let response = next.run(request).await;
    if unknown && response.status().is_success() {
        return (StatusCode::NOT_FOUND, "no such MCP session\n").into_response();
    }
    response
}

/// The header that names a session.
const SESSION_ID_HEADER: &str = "mcp-session-id";

/// Pass the request on only with `Authorization: Bearer TOKEN` (the
/// scheme in any case, as HTTP has it); the token compared by digest, so
/// the time taken says nothing about it.
async fn require_token(expected: &[u8], request: Request, next: Next) -> Response {
    // On bytes: a token need not be ASCII.
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| {
            let bytes = value.as_bytes();
            bytes.iter().position(|&b| b == b' ').map(|space| (&bytes[..space], &bytes[space + 1..]))
        })
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case(b"bearer"))
        .map(|(_, token)| Sha256::digest(token.trim_ascii_start()));
    if given.is_some_and(|given| given.as_slice() == expected) {
        return next.run(request).await;
    }
    let mut response = (StatusCode::UNAUTHORIZED, "a bearer token is required: Authorization: Bearer TOKEN\n").into_response();
    response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_never_shows_in_debug_output() {
        let options = HttpOptions { token: Some("s3cret-token".into()), ..HttpOptions::default() };
        let shown = format!("{options:?}");
        assert!(!shown.contains("s3cret-token"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }
}
