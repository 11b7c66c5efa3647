//! A blocking HTTP GET over `wasi:http`, for plugins that ask for hosts with
//! [`Manifest::http_host`](crate::Manifest::http_host). Enabled by the
//! `http` feature.

use crate::ToolError;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, Method, OutgoingBody, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;

/// A response read up to a size cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status code.
    pub status: u16,
    /// The body, at most the cap given to [`get`].
    pub body: Vec<u8>,
    /// Whether the body was longer than the cap and was cut.
    pub truncated: bool,
}

/// GET `url` (`http://` or `https://`), reading at most `max_body` bytes of
/// the body. A host the plugin was not granted is refused by the host, and
/// the error says so.
pub fn get(url: &str, max_body: usize) -> Result<Response, ToolError> {
    let target = Target::parse(url)?;
    let request = OutgoingRequest::new(Fields::new());
    let fail = |what: &str| ToolError::failed(format!("could not set the request's {what}"));
    request.set_method(&Method::Get).map_err(|()| fail("method"))?;
    request.set_scheme(Some(&target.scheme)).map_err(|()| fail("scheme"))?;
    request.set_authority(Some(&target.authority)).map_err(|()| fail("authority"))?;
    request.set_path_with_query(Some(&target.path)).map_err(|()| fail("path"))?;
    let body = request.body().map_err(|()| fail("body"))?;

    let pending =
        outgoing_handler::handle(request, None).map_err(|code| ToolError::failed(format!("GET {url} refused: {code:?}")))?;
    OutgoingBody::finish(body, None).map_err(|code| ToolError::failed(format!("GET {url} failed: {code:?}")))?;
    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(code))) => return Err(ToolError::failed(format!("GET {url} failed: {code:?}"))),
        Some(Err(())) | None => return Err(ToolError::failed(format!("GET {url} got no response"))),
    };

    let status = response.status();
    let incoming = response.consume().map_err(|()| fail("response body"))?;
    let stream = incoming.stream().map_err(|()| fail("response stream"))?;
    let mut body = Vec::new();
    let mut truncated = false;
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                let room = max_body - body.len();
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    truncated = true;
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(error)) => {
                return Err(ToolError::failed(format!("reading the body of {url} failed: {}", error.to_debug_string())));
            }
        }
    }
    Ok(Response { status, body, truncated })
}

/// The parts of a URL a request needs.
struct Target {
    scheme: Scheme,
    authority: String,
    path: String,
}

impl Target {
    fn parse(url: &str) -> Result<Self, ToolError> {
        let (scheme, rest) = if let Some(rest) = url.strip_prefix("https://") {
            (Scheme::Https, rest)
        } else if let Some(rest) = url.strip_prefix("http://") {
            (Scheme::Http, rest)
        } else {
            return Err(ToolError::invalid_args(format!("`{url}` is not an http:// or https:// URL")));
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(at) if rest[at..].starts_with('?') => (&rest[..at], format!("/{}", &rest[at..])),
            Some(at) => (&rest[..at], rest[at..].to_owned()),
            None => (rest, "/".to_owned()),
        };
        if authority.is_empty() {
            return Err(ToolError::invalid_args(format!("`{url}` has no host")));
        }
        Ok(Target { scheme, authority: authority.to_owned(), path })
    }
}
