//! What one MCP client can make the server hold: calls in flight (per
//! client and in all, [`InFlight`]) and, over HTTP, the size and shape of
//! each request ([`bound_request`]), so that a few hostile clients cannot
//! exhaust the host's memory with requests that parse into much more than
//! their bytes, or with sessions that keep a huge `initialize`.

use super::config::McpConfig;
use crate::http_server::Unread;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use toolhost_support::json_text;

/// The most JSON values (objects, arrays, strings, numbers…) one request
/// may hold: parsed, each costs far more than its bytes (an empty object,
/// two bytes, is some hundred), so bytes alone do not bound memory.
pub const MAX_REQUEST_VALUES: usize = 100_000;
/// The largest `initialize` request: a session keeps it for its life, and
/// a real client's is a few hundred bytes.
pub const MAX_INITIALIZE_BYTES: usize = 16 << 10;
/// The most JSON values an `initialize` request may hold.
const MAX_INITIALIZE_VALUES: usize = 2_000;

/// Places held now, in all and by key (a client, a session), each cap
/// refusing one more.
pub(super) struct Places {
    counts: Mutex<Counts>,
    most: usize,
    per_key: usize,
}

#[derive(Default)]
struct Counts {
    all: usize,
    by_key: HashMap<String, usize>,
}

/// Which cap [`Places::take`] met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Full {
    All,
    Key,
}

impl Places {
    pub(super) fn new(most: usize, per_key: usize) -> Self {
        Places { counts: Mutex::new(Counts::default()), most, per_key }
    }

    /// One more place for `key`, held until the [`Place`] is dropped.
    pub(super) fn take(self: &Arc<Self>, key: &str) -> Result<Place, Full> {
        let mut counts = self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if counts.all >= self.most {
            return Err(Full::All);
        }
        let mine = counts.by_key.get(key).copied().unwrap_or(0);
        if mine >= self.per_key {
            return Err(Full::Key);
        }
        counts.all += 1;
        counts.by_key.insert(key.to_owned(), mine + 1);
        Ok(Place { places: self.clone(), key: key.to_owned() })
    }
}

/// One place in [`Places`].
pub(super) struct Place {
    places: Arc<Places>,
    key: String,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut counts = self.places.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        counts.all -= 1;
        if let Some(mine) = counts.by_key.get_mut(&self.key) {
            *mine -= 1;
            if *mine == 0 {
                counts.by_key.remove(&self.key);
            }
        }
    }
}

/// Calls running or waiting for a person now, and subscriptions open
/// (`subscriptions/listen`), each in all and by client: a subscription
/// lasts as long as its client keeps it, so it takes no call's place
/// (sixteen of them from one address took that address's calls for good).
pub(super) struct InFlight {
    places: Arc<Places>,
    listens: Arc<Places>,
}

/// Why a call was refused by [`InFlight::enter`]: words for the client,
/// naming the key that would let it in.
pub(super) struct Busy(pub(super) String);

impl InFlight {
    pub(super) fn new(config: &McpConfig) -> Self {
        InFlight {
            places: Arc::new(Places::new(config.max_calls, config.max_calls_per_client)),
            listens: Arc::new(Places::new(max_streams(), config.max_calls_per_client)),
        }
    }

    /// A place for one more subscription of `client`, held until it is
    /// dropped: at most `[mcp] max_calls_per_client` a client and, in all,
    /// as many as event streams ([`max_streams`]).
    pub(super) fn listen(&self, client: &str) -> Result<Place, Busy> {
        self.listens.take(client).map_err(|full| {
            Busy(match full {
                Full::All => {
                    format!("refused: this server keeps at most {} subscriptions open at once; try again later", self.listens.most)
                }
                Full::Key => format!(
                    "refused: a client may keep at most {} subscriptions open at once on this server ([mcp] max_calls_per_client)",
                    self.listens.per_key
                ),
            })
        })
    }

    /// A place for one more call of `client`, held until it is dropped;
    /// refused past either cap.
    pub(super) fn enter(&self, client: &str) -> Result<Place, Busy> {
        self.places.take(client).map_err(|full| {
            Busy(match full {
                Full::All => format!(
                    "refused: this server runs at most {} MCP calls at once ([mcp] max_calls); try again when one finishes",
                    self.places.most
                ),
                Full::Key => format!(
                    "refused: a client may have at most {} calls at once on this server ([mcp] max_calls_per_client); \
                     try again when one finishes",
                    self.places.per_key
                ),
            })
        })
    }
}

/// The event streams (`GET /mcp`) a session may hold open at once: rmcp
/// keeps up to 33 a session, each sent a keep-alive for ever, so that a
/// few sessions' streams took every connection the server serves.
pub(super) const MAX_STREAMS_PER_SESSION: usize = 2;
/// The event streams held open at once, in all: half the connections
/// served, so that requests always find one.
pub(super) fn max_streams() -> usize {
    crate::http_server::connections_per_door() / 2
}

/// Refuse, with `429`, an event stream past [`MAX_STREAMS_PER_SESSION`]
/// for its session or [`max_streams`] in all; hold a place in `streams`
/// for each one opened until it closes.
pub(super) async fn bound_streams(streams: &Arc<Places>, request: Request, next: Next) -> Response {
    let session = request.headers().get(SESSION_ID_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let (true, Some(session)) = (request.method() == axum::http::Method::GET, session) else { return next.run(request).await };
    let place = match streams.take(&session) {
        Ok(place) => place,
        Err(full) => {
            let why = match full {
                Full::All => format!("the server holds at most {} event streams open at once; try again later", max_streams()),
                Full::Key => format!("a session may hold at most {MAX_STREAMS_PER_SESSION} event streams open at once"),
            };
            tracing::debug!("refused an MCP event stream: {why}");
            return (StatusCode::TOO_MANY_REQUESTS, format!("{why}\n")).into_response();
        }
    };
    let response = next.run(request).await;
    if !response.status().is_success() {
        return response;
    }
    holding(response, place)
}

/// `response`, holding `held` until its body is dropped (finished, or its
/// client gone).
pub(super) fn holding<T: Send + Sync + 'static>(response: Response, held: T) -> Response {
    response.map(|body| {
        let stream = futures::StreamExt::map(body.into_data_stream(), move |chunk| {
            let _held = &held;
            chunk
        });
        Body::from_stream(stream)
    })
}

/// The ids of the requests each session has in flight over HTTP.
#[derive(Default)]
pub(super) struct IdsInFlight(Mutex<std::collections::HashSet<(String, String)>>);

/// One session's request id, in flight until dropped.
struct IdInFlight {
    ids: Arc<IdsInFlight>,
    key: (String, String),
}

impl Drop for IdInFlight {
    fn drop(&mut self) {
        self.ids.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&self.key);
    }
}

/// Refuse a request POSTed in a session while a request of that session
/// with the same id is in flight, as a JSON-RPC error under its id (`400`).
/// rmcp routes a session's answers by id: the second took the first's
/// route, the first's answer went astray, and its response, kept open by
/// keep-alives, never ended (one client so held every connection the
/// server takes). The id is in flight until its response's body is
/// dropped (finished, or its client gone). The body is already read and
/// bounded ([`bound_request`]).
pub(super) async fn one_request_per_id(ids: &Arc<IdsInFlight>, request: Request, next: Next) -> Response {
    let session = request.headers().get(SESSION_ID_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let (true, Some(session)) = (request.method() == axum::http::Method::POST, session) else { return next.run(request).await };
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    // The id as rmcp reads it, which routes by it: `1`, `1.0` and `1e0`
    // are one id there.
    #[derive(serde::Deserialize)]
    struct Head {
        id: Option<rmcp::model::RequestId>,
        method: Option<serde::de::IgnoredAny>,
    }
    let id = match serde_json::from_slice::<Head>(&bytes) {
        Ok(Head { id: Some(id), method: Some(_) }) => id,
        _ => return next.run(Request::from_parts(parts, Body::from(bytes))).await,
    };
    let key = (session, serde_json::to_string(&id).unwrap_or_default());
    if !ids.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(key.clone()) {
        let message = format!("the id {id} is already in use by a request in flight");
        let error = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32600, "message": message}});
        return (StatusCode::BAD_REQUEST, axum::Json(error)).into_response();
    }
    let held = IdInFlight { ids: ids.clone(), key };
    let response = next.run(Request::from_parts(parts, Body::from(bytes))).await;
    holding(response, held)
}

/// The header that names a session.
pub(super) const SESSION_ID_HEADER: &str = "mcp-session-id";

/// Refuse, with `413` and the limit's name, a request body larger than
/// `max_bytes` (`[mcp] max_request_kib`), one of more than
/// [`MAX_REQUEST_VALUES`] JSON values, or an `initialize` past
/// [`MAX_INITIALIZE_BYTES`]; pass the rest on. Only POSTs carry bodies.
pub(super) async fn bound_request(max_bytes: usize, request: Request, next: Next) -> Response {
    if request.method() != axum::http::Method::POST {
        return next.run(request).await;
    }
    let too_large_by_far = || too_large(format!("the request is larger than {} KiB ([mcp] max_request_kib)", max_bytes >> 10));
    if crate::http_server::announced_past(&request, max_bytes) {
        return too_large_by_far();
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, max_bytes).await {
        Ok(bytes) => bytes,
        Err(error) => {
            return match crate::http_server::why_unread(&error) {
                Unread::TooLarge => too_large_by_far(),
                Unread::TooSlow => (StatusCode::REQUEST_TIMEOUT, "the request's body was not sent in time\n").into_response(),
                Unread::Malformed => (StatusCode::BAD_REQUEST, "the request's body could not be read\n").into_response(),
            };
        }
    };
    // A lone surrogate escaped in it reads as U+FFFD, as over stdio; before
    // the checks, so that what they read is what rmcp reads (an
    // `initialize` whose key held one was not known for one, and rmcp
    // then read it past its limit).
    let bytes = match json_text::lone_surrogates_replaced(&bytes) {
        Cow::Borrowed(_) => bytes,
        Cow::Owned(replaced) => replaced.into(),
    };
    if let Err(why) = check_shape(&bytes) {
        return too_large(why);
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

/// Whether `body` is within the value limits (its own, or an
/// `initialize`'s). Malformed JSON passes: the MCP layer answers it.
fn check_shape(body: &Bytes) -> Result<(), String> {
    let values = count_values(body);
    if values > MAX_REQUEST_VALUES {
        return Err(format!("the request holds more than {MAX_REQUEST_VALUES} JSON values"));
    }
    #[derive(serde::Deserialize)]
    struct Method {
        method: Option<String>,
    }
    let initialize = body.len() > MAX_INITIALIZE_BYTES || values > MAX_INITIALIZE_VALUES;
    if initialize && serde_json::from_slice::<Method>(body).is_ok_and(|m| m.method.as_deref() == Some("initialize")) {
        return Err(format!(
            "an initialize request may be at most {} KiB and {MAX_INITIALIZE_VALUES} JSON values",
            MAX_INITIALIZE_BYTES >> 10
        ));
    }
    Ok(())
}

/// How many JSON values `body` holds, counted without parsing it
/// ([`ValueCount`]).
fn count_values(body: &[u8]) -> usize {
    let mut count = ValueCount::default();
    body.iter().for_each(|&byte| count.feed(byte));
    count.values
}

/// JSON values counted byte by byte, without parsing: each object, array,
/// string (keys too) and scalar where it starts. An overestimate for odd
/// input is fine: it only ever refuses.
#[derive(Debug, Default, Clone)]
pub(super) struct ValueCount {
    pub(super) values: usize,
    in_string: bool,
    escaped: bool,
    /// Inside a scalar, or after a value: a byte here starts none.
    after_value: bool,
}

impl ValueCount {
    pub(super) fn feed(&mut self, byte: u8) {
        if self.in_string {
            match byte {
                _ if self.escaped => self.escaped = false,
                b'\\' => self.escaped = true,
                b'"' => {
                    self.in_string = false;
                    self.after_value = true;
                }
                _ => {}
            }
            return;
        }
        match byte {
            b'"' => {
                self.in_string = true;
                self.values += 1;
            }
            b'{' | b'[' => {
                self.values += 1;
                self.after_value = false;
            }
            b',' | b':' => self.after_value = false,
            b']' | b'}' => self.after_value = true,
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ if !self.after_value => {
                self.values += 1;
                self.after_value = true;
            }
            _ => {}
        }
    }
}

fn too_large(why: String) -> Response {
    tracing::debug!("refused an MCP request: {why}");
    (StatusCode::PAYLOAD_TOO_LARGE, format!("{why}\n")).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_counted_outside_strings_only() {
        assert_eq!(count_values(br#"{"a":[1,2,{}]}"#), 6);
        assert_eq!(count_values(br#"{"text":"{[,,,]}\"[{"}"#), 3, "brackets in a string are text");
        // A separator is no value (a probe found strings counted twice).
        assert_eq!(count_values(br#"["a", "b",-12.5e3 ,true, null,[]]"#), 7);
        let many = format!("[{}]", vec!["{}"; MAX_REQUEST_VALUES + 1].join(","));
        assert!(check_shape(&Bytes::from(many)).is_err());
        let big_initialize = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"clientInfo":{{"name":"{}"}}}}}}"#,
            "x".repeat(MAX_INITIALIZE_BYTES)
        );
        let refused = check_shape(&Bytes::from(big_initialize)).unwrap_err();
        assert!(refused.contains("initialize"), "{refused}");
        let big_call = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"x":"{}"}}}}"#, "x".repeat(1 << 20));
        assert!(check_shape(&Bytes::from(big_call)).is_ok(), "a call may carry a large argument");
    }

    #[test]
    fn subscriptions_take_no_call_places() {
        let config = McpConfig { max_calls: 2, max_calls_per_client: 2, ..McpConfig::default() };
        let in_flight = InFlight::new(&config);
        let listening: Vec<Place> = (0..2).map(|_| in_flight.listen("a").ok().unwrap()).collect();
        let Err(Busy(why)) = in_flight.listen("a") else { panic!("a third subscription of one client") };
        assert!(why.contains("subscriptions") && why.contains("max_calls_per_client"), "{why}");
        assert!(in_flight.enter("a").is_ok() && in_flight.listen("b").is_ok(), "calls and other clients go on");
        drop(listening);
        assert!(in_flight.listen("a").is_ok(), "a closed subscription gives its place back");
    }

    #[test]
    fn each_cap_holds_and_a_place_is_given_back() {
        let config = McpConfig { max_calls: 3, max_calls_per_client: 2, ..McpConfig::default() };
        let in_flight = Arc::new(InFlight::new(&config));
        let a1 = in_flight.enter("a").ok().unwrap();
        let _a2 = in_flight.enter("a").ok().unwrap();
        let Err(Busy(why)) = in_flight.enter("a") else { panic!("a third call of one client") };
        assert!(why.contains("[mcp] max_calls_per_client"), "{why}");
        let _b1 = in_flight.enter("b").ok().unwrap();
        let Err(Busy(why)) = in_flight.enter("c") else { panic!("a fourth call") };
        assert!(why.contains("[mcp] max_calls)"), "{why}");
        drop(a1);
        assert!(in_flight.enter("c").is_ok(), "a finished call gives its place back");
    }
}
