//! [`LineTransport`]: a stdio client's JSON-RPC messages, one a line, read
//! as rmcp's own line transport reads them, but a `tools/call` request is
//! parsed straight as one.
//!
//! rmcp's `ClientRequest` is an untagged enum: serde buffers the message,
//! then tries its 22 kinds in turn and builds an error, with its message,
//! for each that fails; `tools/call` is the fourteenth. That parse was 11%
//! of the stdio thread's time a call (`perf`, docs/PERFORMANCE.md). Here
//! the message's shape and method are read first, and a `tools/call`
//! request is parsed as that kind alone. Any other message, and a
//! `tools/call` that does not parse so (bad params), goes through rmcp's
//! parse, so that what each message means stays rmcp's. One difference:
//! a notification that cannot be read is never answered, as JSON-RPC
//! says (rmcp answered `-32600` to one of a standard method). Answers are
//! written by rmcp's transport. (Dispatching on the method is a change
//! rmcp itself could make: its requests are tagged by it.)

use super::shape::{self, Shape};
use crate::log_throttle::warn_throttled;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, ErrorData, JsonRpcMessage, JsonRpcRequest,
    RequestId, ServerJsonRpcMessage,
};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use serde::de::IgnoredAny;
use std::borrow::Cow;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};
use toolhost_support::json_text;

/// What a line may start with before its JSON.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// An answer being written, resumed if reading is dropped meanwhile.
type Sending = Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>>;

/// Messages read from `R` a line each, answers written to `W`.
pub(super) struct LineTransport<R, W: AsyncWrite + Send + Unpin + 'static> {
    read: BufReader<R>,
    /// The line being read; kept when reading it is dropped half-way (rmcp
    /// polls `receive` in a `select!`).
    line: Vec<u8>,
    /// In a line that ran past [`DEFAULT_MAX_LINE_LENGTH`]: its rest is
    /// dropped, to its line break.
    discarding: bool,
    write: AsyncRwTransport<RoleServer, tokio::io::Empty, W>,
    /// The answer to a message of the wrong shape, owed before reading on.
    refusing: Option<Sending>,
}

impl<R: AsyncRead + Send + Unpin, W: AsyncWrite + Send + Unpin + 'static> LineTransport<R, W> {
    pub(super) fn new(read: R, write: W) -> Self {
        LineTransport {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            write: AsyncRwTransport::new_server(tokio::io::empty(), write),
            refusing: None,
        }
    }

    /// Until a whole line is in `self.line`; false at the input's end, or
    /// when it cannot be read (what is left of an unended line is no
    /// message).
    async fn read_line(&mut self) -> bool {
        loop {
            let (taken, ended) = {
                let available = match self.read.fill_buf().await {
                    Ok(available) => available,
                    Err(error) => {
                        tracing::error!("reading the MCP client's input failed: {error}");
                        return false;
                    }
                };
                if available.is_empty() {
                    return false;
                }
                let newline = available.iter().position(|&byte| byte == b'\n');
                let taken = newline.map_or(available.len(), |at| at + 1);
                let ended = newline.is_some();
                if self.discarding {
                    self.discarding = !ended;
                } else if self.line.len().saturating_add(taken) > DEFAULT_MAX_LINE_LENGTH {
                    warn_throttled!("an MCP message passed {DEFAULT_MAX_LINE_LENGTH} bytes; it is dropped");
                    self.line.clear();
                    self.discarding = !ended;
                } else {
                    self.line.extend_from_slice(&available[..taken]);
                }
                // A line dropped is empty: reading goes on to the next.
                (taken, ended && !self.line.is_empty())
            };
            self.read.consume(taken);
            if ended {
                return true;
            }
        }
    }
}

/// A line of JSON that is no message rmcp reads, or a request refused
/// before rmcp reads it: answered with `error`, under its id where it can
/// be read (a request whose params do not fit its method, or whose JSON
/// serde_json cannot hold), else without one.
#[derive(Debug)]
struct WrongShape {
    id: Option<RequestId>,
    /// Boxed: an `ErrorData` is most of a `Result` it would be returned in.
    error: Box<ErrorData>,
}

/// The longest id a request may have. Every answer echoes its request's
/// id, and the server holds the answers it owes a client that does not
/// read them ([`super::stdio_guard`]), so ids as long as a line (16 MiB)
/// made that bound one of gigabytes. Clients use numbers or short strings.
pub(super) const MAX_ID_BYTES: usize = 1 << 10;
/// The longest method a request may name: an unknown one is echoed in
/// its answer, as an id is.
const MAX_METHOD_BYTES: usize = 256;

/// Where `text`, shown in an answer, is cut.
const SHOWN_BYTES: usize = 200;

impl WrongShape {
    fn invalid_request(id: Option<RequestId>) -> Self {
        WrongShape { id, error: Box::new(ErrorData::invalid_request("Invalid request", None)) }
    }
}

/// The message `line` holds; `None` when there is nothing to answer: not
/// JSON (answering could start an error storm with a peer that echoes it,
/// so the official SDKs do not), a notification, or an empty line. A lone
/// surrogate escaped in it reads as U+FFFD ([`json_text`]): a request
/// holding one is answered, not dropped.
fn read_message(line: &[u8]) -> Result<Option<ClientJsonRpcMessage>, WrongShape> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(UTF8_BOM).unwrap_or(line);
    if line.is_empty() {
        return Ok(None);
    }
    let line = &*json_text::lone_surrogates_replaced(line);
    if let Some(call) = tools_call(line) {
        return bounded(call).map(Some);
    }
    match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(message) => bounded(message).map(Some),
        Err(error) => {
            let shape = Shape::of(line);
            let notification = is_notification(shape.as_ref(), line);
            let request = shape.as_ref().is_some_and(|s| s.method.is_some() && s.id && !s.result && s.error.is_none());
            let version_2_0 = shape.as_ref().is_some_and(|s| s.jsonrpc.as_ref().is_some_and(|v| v == "2.0"));
            match error.classify() {
                // A request of JSON-RPC 2.0 whose id reads: its params do
                // not fit its method. Answered under its id, or its client
                // would wait for ever.
                serde_json::error::Category::Data
                    if request
                        && version_2_0
                        && let Some(id) = id_of(line).filter(|id| !too_long(id)) =>
                {
                    tracing::debug!("an MCP request whose params do not fit: {error}");
                    let method = shape.as_ref().and_then(|s| s.method.as_deref()).unwrap_or_default();
                    let why = format!("Invalid params for {}: {}", cut(method), cut(&error.to_string()));
                    Err(WrongShape { id: Some(id), error: Box::new(ErrorData::invalid_params(why, None)) })
                }
                serde_json::error::Category::Data | serde_json::error::Category::Io if !notification => {
                    tracing::debug!("an MCP message of the wrong shape: {error}");
                    Err(WrongShape::invalid_request(None))
                }
                // JSON whose shape reads, but which serde_json cannot hold
                // (a number past f64's range, nesting past 128 levels): a
                // request is answered, its client waiting on it.
                serde_json::error::Category::Syntax if request => {
                    tracing::debug!("an MCP request that cannot be read: {error}");
                    Err(WrongShape::invalid_request(id_of(line).filter(|id| !too_long(id))))
                }
                _ => {
                    tracing::debug!("an MCP message that cannot be read is ignored: {error}");
                    Ok(None)
                }
            }
        }
    }
}

/// `message`, unless it is a request whose id, or whose unknown method,
/// is longer than an answer should echo ([`MAX_ID_BYTES`],
/// [`MAX_METHOD_BYTES`]).
fn bounded(message: ClientJsonRpcMessage) -> Result<ClientJsonRpcMessage, WrongShape> {
    let JsonRpcMessage::Request(request) = &message else { return Ok(message) };
    if too_long(&request.id) {
        let why = format!("a request's id may be at most {MAX_ID_BYTES} bytes");
        return Err(WrongShape { id: None, error: Box::new(ErrorData::invalid_request(why, None)) });
    }
    match &request.request {
        ClientRequest::CustomRequest(custom) if custom.method.len() > MAX_METHOD_BYTES => {
            let why = format!("Method not found: {}… ({} bytes)", cut(&custom.method), custom.method.len());
            Err(WrongShape {
                id: Some(request.id.clone()),
                error: Box::new(ErrorData::new(rmcp::model::ErrorCode::METHOD_NOT_FOUND, why, None)),
            })
        }
        _ => Ok(message),
    }
}

/// Whether `id` is longer than [`MAX_ID_BYTES`].
fn too_long(id: &RequestId) -> bool {
    matches!(id, RequestId::String(id) if id.len() > MAX_ID_BYTES)
}

/// `text`, cut to at most [`SHOWN_BYTES`] at a character's edge.
fn cut(text: &str) -> &str {
    let mut end = text.len().min(SHOWN_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Whether `line`, of shape `shape`, is a notification: a `method` and no
/// `id`. Where its shape does not read, as when a member is given twice
/// (which JSON allows and serde's derive refuses), its members are read
/// as a map, the last of a name counting.
fn is_notification(shape: Option<&Shape<'_>>, line: &[u8]) -> bool {
    match shape {
        Some(shape) => shape.method.is_some() && !shape.id,
        None => serde_json::from_slice::<HashMap<String, IgnoredAny>>(line)
            .is_ok_and(|members| members.contains_key("method") && !members.contains_key("id")),
    }
}

/// The id of the request `line`, read alone.
fn id_of(line: &[u8]) -> Option<RequestId> {
    #[derive(serde::Deserialize)]
    struct Id {
        id: RequestId,
    }
    serde_json::from_slice::<Id>(line).ok().map(|Id { id }| id)
}

/// A `tools/call` request, parsed as that alone; `None` for any other
/// message, or one that does not parse so.
fn tools_call(line: &[u8]) -> Option<ClientJsonRpcMessage> {
    let CallLine { id, method, mut params, result, error, .. } = serde_json::from_slice(line).ok()?;
    if method != "tools/call" || result || error {
        return None;
    }
    // rmcp keeps a request's `_meta` beside its params, as an extension.
    let mut request = CallToolRequest::new(CallToolRequestParams::new(""));
    if let Some(meta) = params.meta.take() {
        request.extensions.insert(meta);
    }
    request.params = params;
    Some(JsonRpcMessage::Request(JsonRpcRequest::new(id, ClientRequest::CallToolRequest(request))))
}

/// A `tools/call` request's members, read in one pass, its params read
/// straight: rmcp's own reading flattens both the request into its
/// envelope and the params beside their `_meta`, and serde buffers a
/// flattened value whole before reading it (twice here).
#[derive(serde::Deserialize)]
struct CallLine<'a> {
    #[serde(rename = "jsonrpc")]
    _jsonrpc: rmcp::model::JsonRpcVersion2_0,
    id: RequestId,
    #[serde(borrow)]
    method: Cow<'a, str>,
    params: CallToolRequestParams,
    /// An answer's members, which a request has none of (`null` or not).
    #[serde(default, deserialize_with = "shape::present")]
    result: bool,
    #[serde(default, deserialize_with = "shape::present")]
    error: bool,
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(&mut self, item: ServerJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.write.send(item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            if let Some(refusing) = self.refusing.as_mut() {
                let sent = refusing.await;
                self.refusing = None;
                sent.ok()?;
            }
            if !self.read_line().await {
                return None;
            }
            let read = read_message(&self.line);
            self.line.clear();
            match read {
                Ok(Some(message)) => return Some(message),
                Ok(None) => {}
                Err(WrongShape { id, error }) => {
                    self.refusing = Some(Box::pin(self.write.send(JsonRpcMessage::error(*error, id))));
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // A refusal still being written holds the writer, which closing
        // waits for: serving has ended, so it is dropped.
        self.refusing = None;
        self.write.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// rmcp's own reading of `line`.
    fn rmcp_reads(line: &str) -> Option<ClientJsonRpcMessage> {
        serde_json::from_str(line).ok()
    }

    fn message(read: Result<Option<ClientJsonRpcMessage>, WrongShape>) -> ClientJsonRpcMessage {
        read.expect("read as the wrong shape").expect("read as nothing")
    }

    #[test]
    fn a_tools_call_reads_as_rmcp_reads_it_without_trying_every_kind() {
        for line in [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"calculate","arguments":{"expression":"6*7"}}}"#,
            r#"{"method":"tools/call","params":{"name":"calculate","arguments":{},"_meta":{"progressToken":"p1","io.modelcontextprotocol/protocolVersion":"2026-07-28"}},"id":"s-1","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":8,"method":"tools\/call","params":{"name":"\u00e9t\u00e9"}}"#,
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"calculate","_meta":null,"arguments":null}}"#,
            r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","extra":[1],"params":{"name":"c","requestState":"s","inputResponses":{"q1":{"action":"accept","content":{"ok":true}}},"unknown":1,"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"}}}}"#,
        ] {
            let fast = tools_call(line.as_bytes()).unwrap_or_else(|| panic!("not read as a tools/call: {line}"));
            assert!(matches!(&fast, JsonRpcMessage::Request(r) if matches!(r.request, ClientRequest::CallToolRequest(_))));
            assert_eq!(format!("{fast:?}"), format!("{:?}", rmcp_reads(line).unwrap()), "{line}");
            assert_eq!(format!("{:?}", message(read_message(line.as_bytes()))), format!("{fast:?}"));
        }
    }

    #[test]
    fn anything_else_is_read_by_rmcp() {
        for line in [
            // Not a tools/call, or one whose params are not a call's.
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        ] {
            assert!(tools_call(line.as_bytes()).is_none(), "{line}");
            let expected = rmcp_reads(line).unwrap();
            assert_eq!(format!("{:?}", message(read_message(line.as_bytes()))), format!("{expected:?}"), "{line}");
        }
        // A tools/call that is also an answer, or has no id, is no request.
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"result":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"error":null}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a"}}"#,
        ] {
            assert!(tools_call(line.as_bytes()).is_none(), "{line}");
        }
    }

    #[test]
    fn lines_that_hold_no_message() {
        for (line, invalid) in [
            ("not json", false),
            ("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ", false),
            ("", false),
            ("\r\n", false),
            ("{\"jsonrpc\":\"2.0\",\"id\":1}", true),
            ("[1, 2]", true),
            ("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", true),
            // A notification is never answered, a member given twice or not.
            ("{\"jsonrpc\":\"1.0\",\"method\":\"notifications/initialized\"}", false),
            ("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\",\"method\":\"notifications/y\"}", false),
            ("{\"jsonrpc\":\"2.0\",\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":5}", false),
            // A request with a member given twice is still refused.
            ("{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":5}", true),
        ] {
            match read_message(line.as_bytes()) {
                Ok(None) => assert!(!invalid, "{line:?} is an invalid request"),
                Err(WrongShape { id: None, .. }) => assert!(invalid, "{line:?} is to be ignored"),
                Err(WrongShape { id: Some(id), .. }) => panic!("{line:?} refused as request {id:?}"),
                Ok(Some(message)) => panic!("{line:?} read as {message:?}"),
            }
        }
        // Valid JSON serde_json cannot hold: a request is refused under
        // its id, a notification ignored.
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        for params in [r#"{"name":"calculate","arguments":{"n":1e400}}"#.to_owned(), format!(r#"{{"x":{deep}}}"#)] {
            let request = format!(r#"{{"jsonrpc":"2.0","id":"r-7","method":"tools/call","params":{params}}}"#);
            let Err(WrongShape { id, .. }) = read_message(request.as_bytes()) else { panic!("{request:.80} was not refused") };
            assert_eq!(id, Some(RequestId::String("r-7".into())), "{request:.80}");
            let notification = format!(r#"{{"jsonrpc":"2.0","method":"notifications/x","params":{params}}}"#);
            assert!(matches!(read_message(notification.as_bytes()), Ok(None)), "{notification:.80}");
        }
        let marked = "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n";
        assert!(matches!(read_message(marked.as_bytes()), Ok(Some(_))), "a byte-order mark and CR LF are read past");
    }

    #[test]
    fn a_request_whose_params_do_not_fit_is_answered_under_its_id() {
        for (line, method) in [
            (r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":[]}"#, "tools/call"),
            (r#"{"jsonrpc":"2.0","id":31,"method":"ping","params":"x"}"#, "ping"),
            (r#"{"jsonrpc":"2.0","id":34,"method":"tools/call","params":{"name":"c","arguments":{},"_meta":[]}}"#, "tools/call"),
        ] {
            let Err(WrongShape { id: Some(_), error }) = read_message(line.as_bytes()) else {
                panic!("{line} not refused under its id")
            };
            assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS, "{line}");
            assert!(error.message.contains(method), "{line}: {}", error.message);
        }
    }

    #[test]
    fn an_id_or_a_method_longer_than_an_answer_should_echo_is_refused() {
        let id = "i".repeat(MAX_ID_BYTES + 1);
        let long_id = format!(r#"{{"jsonrpc":"2.0","id":"{id}","method":"ping"}}"#);
        let Err(WrongShape { id: None, error }) = read_message(long_id.as_bytes()) else { panic!("a long id was read") };
        assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_REQUEST);
        let call = format!(r#"{{"jsonrpc":"2.0","id":"{id}","method":"tools/call","params":{{"name":"c"}}}}"#);
        assert!(matches!(read_message(call.as_bytes()), Err(WrongShape { id: None, .. })), "the fast path too");
        let method = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{}"}}"#, "m".repeat(1 << 20));
        let Err(WrongShape { id: Some(_), error }) = read_message(method.as_bytes()) else { panic!("a long method was read") };
        assert_eq!(error.code, rmcp::model::ErrorCode::METHOD_NOT_FOUND);
        assert!(error.message.len() < 400, "the method is not echoed whole: {} bytes", error.message.len());
        let wrong_params = format!(r#"{{"jsonrpc":"2.0","id":"{id}","method":"ping","params":"x"}}"#);
        assert!(matches!(read_message(wrong_params.as_bytes()), Err(WrongShape { id: None, .. })), "nor params that do not fit");
        let fits = format!(r#"{{"jsonrpc":"2.0","id":"{}","method":"ping"}}"#, "i".repeat(MAX_ID_BYTES));
        assert!(matches!(read_message(fits.as_bytes()), Ok(Some(_))));
    }

    #[tokio::test]
    async fn an_overlong_line_is_dropped_a_wrong_one_refused_and_the_next_read() {
        let (mut client, server_input) = tokio::io::duplex(1 << 16);
        let (server_output, mut answers) = tokio::io::duplex(1 << 16);
        let mut transport = LineTransport::new(server_input, server_output);
        let writing = tokio::spawn(async move {
            let long = vec![b' '; DEFAULT_MAX_LINE_LENGTH + 10];
            client.write_all(&long).await.unwrap();
            client.write_all(b"\n{\"jsonrpc\":\"2.0\",\"id\":1}\n").await.unwrap();
            client
                .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":3,")
                .await
                .unwrap();
        });
        let next = transport.receive().await.expect("the ping after the long line");
        assert!(matches!(&next, JsonRpcMessage::Request(r) if r.id == rmcp::model::RequestId::Number(2)), "{next:?}");
        writing.await.unwrap();
        // The line the input ends inside is no message.
        assert!(transport.receive().await.is_none());
        drop(transport);
        let mut written = String::new();
        answers.read_to_string(&mut written).await.unwrap();
        let refusal: serde_json::Value = serde_json::from_str(written.trim()).unwrap();
        assert_eq!(refusal["error"]["code"], -32600, "{refusal}");
        // MCP 2026-07-28 leaves out an id that cannot be read.
        assert!(refusal.get("id").is_none(), "{refusal}");
    }
}
