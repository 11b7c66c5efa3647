//! What one MCP client can make the server hold: calls in flight (per
//! client and in all, [`InFlight`]) and, over HTTP, the size and shape of
//! each request ([`bound_request`]), so that a few hostile clients cannot
//! exhaust the host's memory with requests that parse into much more than
//! their bytes, or with sessions that keep a huge `initialize`.

use super::config::McpConfig;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The most JSON values (objects, arrays, strings, numbers…) one request
/// may hold: parsed, each costs far more than its bytes (an empty object,
/// two bytes, is some hundred), so bytes alone do not bound memory.
pub const MAX_REQUEST_VALUES: usize = 100_000;
/// The largest `initialize` request: a session keeps it for its life, and
/// a real client's is a few hundred bytes.
pub const MAX_INITIALIZE_BYTES: usize = 16 << 10;
/// The most JSON values an `initialize` request may hold.
const MAX_INITIALIZE_VALUES: usize = 2_000;

/// Calls running or waiting for a person now, in all and by client.
pub(super) struct InFlight {
    counts: Mutex<Counts>,
    max: usize,
    per_client: usize,
}

#[derive(Default)]
struct Counts {
    all: usize,
    by_client: HashMap<String, usize>,
}

/// Why a call was refused by [`InFlight::enter`]: words for the client,
/// naming the key that would let it in.
pub(super) struct Busy(pub(super) String);

impl InFlight {
    pub(super) fn new(config: &McpConfig) -> Self {
        InFlight { counts: Mutex::new(Counts::default()), max: config.max_calls, per_client: config.max_calls_per_client }
    }

    /// A place for one more call of `client`, held until the guard is
    /// dropped; refused past either cap.
    pub(super) fn enter(self: &Arc<Self>, client: &str) -> Result<InFlightGuard, Busy> {
        let mut counts = self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if counts.all >= self.max {
            return Err(Busy(format!(
                "refused: this server runs at most {} MCP calls at once ([mcp] max_calls); try again when one finishes",
                self.max
            )));
        }
        let mine = counts.by_client.get(client).copied().unwrap_or(0);
        if mine >= self.per_client {
            return Err(Busy(format!(
                "refused: a client may have at most {} calls at once on this server ([mcp] max_calls_per_client); \
                 try again when one finishes",
                self.per_client
            )));
        }
        counts.all += 1;
        counts.by_client.insert(client.to_owned(), mine + 1);
        Ok(InFlightGuard { in_flight: self.clone(), client: client.to_owned() })
    }
}

/// One call's place in [`InFlight`].
pub(super) struct InFlightGuard {
    in_flight: Arc<InFlight>,
    client: String,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        let mut counts = self.in_flight.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        counts.all -= 1;
        if let Some(mine) = counts.by_client.get_mut(&self.client) {
            *mine -= 1;
            if *mine == 0 {
                counts.by_client.remove(&self.client);
            }
        }
    }
}

/// Refuse, with `413` and the limit's name, a request body larger than
/// `max_bytes` (`[mcp] max_request_kib`), one of more than
/// [`MAX_REQUEST_VALUES`] JSON values, or an `initialize` past
/// [`MAX_INITIALIZE_BYTES`]; pass the rest on. Only POSTs carry bodies.
pub(super) async fn bound_request(max_bytes: usize, request: Request, next: Next) -> Response {
    if request.method() != axum::http::Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, max_bytes).await {
        Ok(bytes) => bytes,
        Err(error) if crate::http_server::is_read_timeout(&error) => {
            return (StatusCode::REQUEST_TIMEOUT, "the request's body was not sent in time\n").into_response();
        }
        Err(_) => {
            return too_large(format!("the request is larger than {} KiB ([mcp] max_request_kib)", max_bytes >> 10));
        }
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

/// JSON values counted byte by byte, without parsing: each object, array
/// and string, and each `,` (another value follows). An overestimate for
/// odd input is fine: it only ever refuses.
#[derive(Debug, Default, Clone)]
pub(super) struct ValueCount {
    pub(super) values: usize,
    in_string: bool,
    escaped: bool,
}

impl ValueCount {
    pub(super) fn feed(&mut self, byte: u8) {
        if self.in_string {
            match byte {
                _ if self.escaped => self.escaped = false,
                b'\\' => self.escaped = true,
                b'"' => self.in_string = false,
                _ => {}
            }
            return;
        }
        match byte {
            b'"' => {
                self.in_string = true;
                self.values += 1;
            }
            b'{' | b'[' | b',' => self.values += 1,
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
