//! MCP over streamable HTTP at `/mcp` (axum): sessions per client, or
//! stateless for replicas behind a load balancer; loopback Host names
//! only unless more are allowed (DNS-rebinding protection); an optional
//! bearer token.

use super::bounds::{self, MAX_STREAMS_PER_SESSION, Places, SESSION_ID_HEADER, max_streams};
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
            let streams = Arc::new(Places::new(max_streams(), MAX_STREAMS_PER_SESSION));
            let ids = Arc::new(bounds::IdsInFlight::default());
            router
                .layer(axum::middleware::from_fn(move |request: Request, next: Next| {
                    let ids = ids.clone();
                    async move { bounds::one_request_per_id(&ids, request, next).await }
                }))
                .layer(axum::middleware::from_fn(move |request: Request, next: Next| {
                    let sessions = sessions.clone();
                    async move { session_statuses(&sessions, request, next).await }
                }))
                .layer(axum::middleware::from_fn(move |request: Request, next: Next| {
                    let streams = streams.clone();
                    async move { bounds::bound_streams(&streams, request, next).await }
                }))
        };
        // rmcp answers a session's DELETE with 202; clients (the official
        // Python one among them) take only 200 or 204 for "closed".
        let router = router
            .layer(axum::middleware::from_fn(closed_is_no_content))
            .layer(axum::middleware::from_fn(watch_client))
            .layer(axum::middleware::from_fn(malformed_is_bad_request));
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
        // Each request has its connection's address: stateless requests
        // count against `[mcp] max_calls_per_client` by it.
        let served = crate::http_server::serve(listener, router, shutdown).await;
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
    bounds::holding(response, gone.drop_guard())
}

/// A POST whose JSON body is no JSON, or no JSON-RPC message, is `400 Bad
/// Request` with the JSON-RPC error for it (`-32700`, `-32600`) and a
/// null id, as JSON-RPC and MCP ask (rmcp answered `415` and text). Its
/// body is already read and bounded ([`bounds::bound_request`]).
async fn malformed_is_bad_request(request: Request, next: Next) -> Response {
    let json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json")));
    if request.method() != axum::http::Method::POST || !json {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    if let Some((code, message)) = malformed(&bytes) {
        let error = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
        return (StatusCode::BAD_REQUEST, axum::Json(error)).into_response();
    }
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes))).await
}

/// The JSON-RPC error for a body that is no JSON-RPC message: not JSON
/// (`-32700`), or not an object with `"jsonrpc": "2.0"` and a `method`, or
/// an `id` with a `result` or an `error` (`-32600`).
fn malformed(body: &[u8]) -> Option<(i32, String)> {
    if let Err(error) = serde_json::from_slice::<serde::de::IgnoredAny>(body) {
        return Some((-32700, format!("Parse error: {error}")));
    }
    let shaped = super::shape::Shape::of(body).filter(|m| {
        let answers = m.result || m.error.as_ref().is_some_and(Option::is_some);
        m.jsonrpc.as_ref().is_some_and(|v| v == "2.0") && (m.method.is_some() || (m.id && answers))
    });
    match shaped {
        Some(_) => None,
        None => Some((
            -32600,
            "Invalid Request: one JSON-RPC 2.0 message is expected, an object with \"jsonrpc\": \"2.0\" and a \"method\" \
             (or an \"id\" and a \"result\" or \"error\")"
                .to_owned(),
        )),
    }
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

/// Statuses that say what happened to a session, where rmcp's do not (its
/// own checks, Host and Origin, answer first):
/// - a `DELETE` of a session the server does not have is `404 Not Found`,
///   as any other request naming it (rmcp closes any id it is given);
/// - a new session refused because `[mcp] max_sessions` are open is `503
///   Service Unavailable`, saying so (rmcp answered `500`).
async fn session_statuses(sessions: &BoundedSessions, request: Request, next: Next) -> Response {
    let named = request.headers().get(SESSION_ID_HEADER).and_then(|value| value.to_str().ok()).map(str::to_owned);
    let unknown = match &named {
        Some(id) if request.method() == axum::http::Method::DELETE => {
            !sessions.has_session(&id.clone().into()).await.unwrap_or(false)
        }
        _ => false,
    };
    let opening = named.is_none() && request.method() == axum::http::Method::POST;
    let response = next.run(request).await;
    if unknown && response.status().is_success() {
        return (StatusCode::NOT_FOUND, "no such MCP session\n").into_response();
    }
    if opening
        && response.status() == StatusCode::INTERNAL_SERVER_ERROR
        && let Some(full) = sessions.full().await
    {
        let mut refused = (StatusCode::SERVICE_UNAVAILABLE, format!("{full}\n")).into_response();
        refused.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        return refused;
    }
    response
}

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
    fn malformed_bodies_get_their_json_rpc_error() {
        for (body, code) in [
            ("not json", Some(-32700)),
            ("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"", Some(-32700)),
            ("{\"jsonrpc\": \"2.0\", \"id\": 1}", Some(-32600)),
            ("{\"id\": 1, \"method\": \"ping\"}", Some(-32600)),
            ("{\"jsonrpc\": \"1.0\", \"id\": 1, \"method\": \"ping\"}", Some(-32600)),
            ("[{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"}]", Some(-32600)),
            ("3", Some(-32600)),
            ("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"}", None),
            ("{\"jsonrpc\": \"2.0\", \"method\": \"notifications/initialized\"}", None),
            ("{\"jsonrpc\": \"2.0\", \"id\": 7, \"result\": {}}", None),
            ("{\"jsonrpc\": \"2.0\", \"id\": 7, \"error\": {\"code\": 1, \"message\": \"no\"}}", None),
            ("{\"jsonrpc\": \"2.0\", \"id\": null, \"error\": {\"code\": 1, \"message\": \"no\"}}", None),
            ("{\"jsonrpc\": \"2.0\", \"id\": 7, \"result\": null}", None),
        ] {
            assert_eq!(malformed(body.as_bytes()).map(|(code, _)| code), code, "{body}");
        }
    }

    #[test]
    fn the_token_never_shows_in_debug_output() {
        let options = HttpOptions { token: Some("s3cret-token".into()), ..HttpOptions::default() };
        let shown = format!("{options:?}");
        assert!(!shown.contains("s3cret-token"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }
}
