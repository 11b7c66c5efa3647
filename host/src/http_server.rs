//! Serving an axum router over HTTP/1.1 with the limits `axum::serve`
//! leaves out, for the doors that listen (MCP over HTTP, the console):
//! a client must send a request's headers within [`READ_TIMEOUT`] of
//! connecting or of its last response, and its body within as long after
//! them, so connections that send nothing, or half a request, are closed
//! rather than held; at most
//! [`MAX_CONNECTIONS`] are served at once, the rest waiting to be
//! accepted; and replies are not held back by Nagle's algorithm, which
//! with delayed acknowledgements cost a keep-alive request 40 ms.

use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// How long a client may take to send a request's headers, from the
/// connection's start or the end of its last response; and its body, from
/// the end of its headers.
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// The most connections one door serves at once: each holds a file
/// descriptor, so that clients which open connections and hold them
/// cannot take the process's last ones.
pub(crate) const MAX_CONNECTIONS: usize = 512;
/// The share of the process's descriptors the connections of every door
/// together may hold: plugin calls may hold 75%
/// ([`toolhost_runtime::sandbox::open_file_limit`]), and the host keeps the
/// rest for its own files.
const SHARE_FOR_CONNECTIONS_PERCENT: usize = 20;
/// The fewest connections served at once, however low the process's limit.
const MIN_CONNECTIONS: usize = 16;

/// The most connections one door serves at once on this process: at most
/// [`MAX_CONNECTIONS`], and no more than every door may hold together.
pub(crate) fn connections_per_door() -> usize {
    MAX_CONNECTIONS.min(connections_in_all(toolhost_runtime::sandbox::open_file_limit()))
}

/// The most connections every door together serves at once under a
/// descriptor limit of `open_file_limit`.
fn connections_in_all(open_file_limit: usize) -> usize {
    // Bounded, so that the product fits 32 bits and the count a
    // semaphore's permits.
    (open_file_limit.min(1 << 26) * SHARE_FOR_CONNECTIONS_PERCENT / 100).max(MIN_CONNECTIONS)
}

/// The places every door's connections take, one each, across the process.
fn places_in_all() -> Arc<Semaphore> {
    static PLACES: std::sync::OnceLock<Arc<Semaphore>> = std::sync::OnceLock::new();
    PLACES.get_or_init(|| Arc::new(Semaphore::new(connections_in_all(toolhost_runtime::sandbox::open_file_limit())))).clone()
}

/// How long a reply may wait to be written, its client reading none of it:
/// past it the connection is closed (a client that sends requests and
/// never reads the answers would else hold its connection for ever).
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long connections are given to finish once serving stops; then the
/// rest are closed.
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Serve `router` on `listener` until `shutdown` fires, then give the
/// connections open [`SHUTDOWN_GRACE`] to finish their requests. Each
/// request carries its peer's [`ConnectInfo`].
pub(crate) async fn serve(listener: TcpListener, router: axum::Router, shutdown: CancellationToken) -> std::io::Result<()> {
    let limits = Limits { read: READ_TIMEOUT, write: WRITE_TIMEOUT, connections: connections_per_door(), grace: SHUTDOWN_GRACE };
    serve_with(listener, router, shutdown, places_in_all(), limits).await
}

/// What [`serve`] holds a connection to.
#[derive(Debug, Clone, Copy)]
struct Limits {
    read: Duration,
    write: Duration,
    connections: usize,
    grace: Duration,
}

/// [`serve`], each connection taking a place of `in_all` too.
async fn serve_with(
    listener: TcpListener,
    router: axum::Router,
    shutdown: CancellationToken,
    in_all: Arc<Semaphore>,
    limits: Limits,
) -> std::io::Result<()> {
    let router = router.layer(axum::middleware::from_fn(one_host));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(limits.read);
    let open = Arc::new(Semaphore::new(limits.connections));
    let graceful = GracefulShutdown::new();
    let mut connections = tokio::task::JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let place = tokio::select! {
            () = shutdown.cancelled() => break,
            places = async {
                let door = open.clone().acquire_owned().await.expect("the semaphore is never closed");
                (door, in_all.clone().acquire_owned().await.expect("the semaphore is never closed"))
            } => places,
        };
        let (stream, peer) = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    pause_after(&error).await;
                    continue;
                }
            },
        };
        // A reply written in pieces is sent at once.
        let _ = stream.set_nodelay(true);
        let service = router.clone().map_request(move |request: axum::extract::Request<hyper::body::Incoming>| {
            let (mut parts, body) = request.into_parts();
            parts.extensions.insert(ConnectInfo(peer));
            axum::extract::Request::from_parts(parts, axum::body::Body::new(WithDeadline::new(body, limits.read)))
        });
        let stream = TokioIo::new(StalledWrites::new(stream, limits.write));
        let connection = graceful.watch(http.serve_connection(stream, TowerToHyperService::new(service)));
        connections.spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%peer, %error, "HTTP connection ended");
            }
            drop(place);
        });
    }
    drop(listener);
    // A connection that does not finish in time (its client reads no
    // answer, or sends half a request) is closed: else it held the end of
    // serving, and the process, for as long as its client liked.
    if tokio::time::timeout(limits.grace, graceful.shutdown()).await.is_err() {
        tracing::debug!("closing {} HTTP connections that did not finish", connections.len());
    }
    connections.shutdown().await;
    Ok(())
}

/// A connection whose writes fail with [`std::io::ErrorKind::TimedOut`]
/// once one has waited `timeout` without a byte taken.
struct StalledWrites<S> {
    inner: S,
    timeout: Duration,
    /// Running while a write waits.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> StalledWrites<S> {
    fn new(inner: S, timeout: Duration) -> Self {
        StalledWrites { inner, timeout, stalled: None }
    }

    /// `written` as it is, unless it waits and has waited too long.
    fn watch<T>(&mut self, cx: &mut Context<'_>, written: Poll<std::io::Result<T>>) -> Poll<std::io::Result<T>> {
        if written.is_ready() {
            self.stalled = None;
            return written;
        }
        let timeout = self.timeout;
        let stalled = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => {
                Poll::Ready(Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "the client read no answer in time")))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for StalledWrites<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for StalledWrites<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, written)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, written)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let flushed = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, flushed)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A request that names its host twice (two `Host` headers, or a target
/// whose authority is not its `Host`) is `400 Bad Request`, as HTTP/1.1
/// asks: the doors' checks of the host name read the `Host` header alone.
async fn one_host(request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    use axum::response::IntoResponse;
    let mut hosts = request.headers().get_all(axum::http::header::HOST).iter();
    let (host, another) = (hosts.next(), hosts.next());
    let other_target = request
        .uri()
        .authority()
        .is_some_and(|target| host.is_none_or(|host| !host.as_bytes().eq_ignore_ascii_case(target.as_str().as_bytes())));
    if another.is_some() || other_target {
        return (axum::http::StatusCode::BAD_REQUEST, "the request names more than one host\n").into_response();
    }
    next.run(request).await
}

/// After a failed accept: none for an error of that one connection; a
/// moment for the process's (out of file descriptors), which would else
/// fail again at once in a busy loop.
async fn pause_after(error: &std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(error.kind(), ConnectionAborted | ConnectionRefused | ConnectionReset) {
        return;
    }
    tracing::warn!(%error, "accepting an HTTP connection failed");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// A request's body, failing with [`std::io::ErrorKind::TimedOut`] if it
/// is not all read within its deadline (a client that sends a body byte by
/// byte would else hold its connection for as long as it likes). Its size
/// is told as the request's, so that a body announced too large is refused
/// before it is waited for.
struct WithDeadline<B> {
    inner: B,
    deadline: Pin<Box<tokio::time::Sleep>>,
}

impl<B> WithDeadline<B> {
    fn new(inner: B, read_timeout: Duration) -> Self {
        WithDeadline { inner, deadline: Box::pin(tokio::time::sleep(read_timeout)) }
    }
}

impl<B> hyper::body::Body for WithDeadline<B>
where
    B: hyper::body::Body<Data = axum::body::Bytes> + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = axum::body::Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the request's body was not sent in time",
            ))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// Whether `request` announces a body larger than `max` bytes: refused
/// at once, rather than read up to the limit or waited for.
pub(crate) fn announced_past(request: &axum::extract::Request, max: usize) -> bool {
    let length = request.headers().get(axum::http::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    length.is_some_and(|length| length > max as u64)
}

/// Why reading a body (through `axum::body::to_bytes`, or an extractor)
/// failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unread {
    /// Longer than the limit.
    TooLarge,
    /// Not all sent within [`READ_TIMEOUT`].
    TooSlow,
    /// Not HTTP's (a bad chunk), or the connection failed.
    Malformed,
}

/// Why `error`, of reading a body, or any error it came from, happened.
pub(crate) fn why_unread(error: &(dyn std::error::Error + 'static)) -> Unread {
    let mut source = Some(error);
    while let Some(error) = source {
        if error.is::<http_body_util::LengthLimitError>() {
            return Unread::TooLarge;
        }
        if error.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::TimedOut) {
            return Unread::TooSlow;
        }
        source = error.source();
    }
    Unread::Malformed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    async fn start(read_timeout: Duration, max_connections: usize) -> (SocketAddr, CancellationToken) {
        let limits = Limits {
            read: read_timeout,
            write: Duration::from_secs(30),
            connections: max_connections,
            grace: Duration::from_secs(1),
        };
        let (address, shutdown, _) = start_with(limits).await;
        (address, shutdown)
    }

    /// A server of `/` (the peer's address) and `/big` (1 MiB) under
    /// `limits`: its address, its shutdown, and its end.
    async fn start_with(limits: Limits) -> (SocketAddr, CancellationToken, tokio::task::JoinHandle<std::io::Result<()>>) {
        start_sharing(limits, Arc::new(Semaphore::new(1024))).await
    }

    /// [`start_with`], its connections taking places of `in_all` too.
    async fn start_sharing(
        limits: Limits,
        in_all: Arc<Semaphore>,
    ) -> (SocketAddr, CancellationToken, tokio::task::JoinHandle<std::io::Result<()>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let router = axum::Router::new()
            .route("/", axum::routing::get(|ConnectInfo(peer): ConnectInfo<SocketAddr>| async move { peer.ip().to_string() }))
            .route("/big", axum::routing::get(|| async { "x".repeat(1 << 20) }))
            .route("/limited", axum::routing::post(|body: axum::body::Bytes| async move { body.len().to_string() }))
            .layer(axum::middleware::from_fn(|request: axum::extract::Request, next: axum::middleware::Next| async move {
                use axum::response::IntoResponse;
                if announced_past(&request, 1 << 20) {
                    return axum::http::StatusCode::PAYLOAD_TOO_LARGE.into_response();
                }
                next.run(request).await
            }));
        let shutdown = CancellationToken::new();
        let served = tokio::spawn(serve_with(listener, router, shutdown.clone(), in_all, limits));
        (address, shutdown, served)
    }

    /// A client that asks for 64 MiB of answers and reads none.
    async fn never_reading(address: SocketAddr) -> TcpStream {
        let mut stream = TcpStream::connect(address).await.unwrap();
        let requests = "GET /big HTTP/1.1\r\nHost: localhost\r\n\r\n".repeat(64);
        stream.write_all(requests.as_bytes()).await.unwrap();
        stream
    }

    #[tokio::test]
    async fn a_client_that_reads_no_answer_loses_its_connection_to_the_next() {
        let limits = Limits {
            read: Duration::from_secs(30),
            write: Duration::from_millis(500),
            connections: 1,
            grace: Duration::from_secs(1),
        };
        let (address, _shutdown, _) = start_with(limits).await;
        let _stalled = never_reading(address).await;
        let mut next = TcpStream::connect(address).await.unwrap();
        next.write_all(REQUEST).await.unwrap();
        let answer = read_to_close(&mut next).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }

    #[test]
    fn connections_take_a_fifth_of_the_descriptors_and_a_door_at_most_512() {
        assert_eq!(connections_in_all(1_024), 204, "beside 75% for plugin calls, 5% for the host");
        assert_eq!(connections_in_all(1_048_576), 209_715);
        assert_eq!(connections_in_all(usize::MAX), (1 << 26) / 5, "within a semaphore's permits");
        assert_eq!(connections_in_all(40), MIN_CONNECTIONS);
        assert!(connections_per_door() <= MAX_CONNECTIONS);
    }

    #[tokio::test]
    async fn two_doors_hold_no_more_connections_together_than_the_process_allows() {
        let limits = Limits {
            read: Duration::from_secs(30),
            write: Duration::from_secs(30),
            connections: 8,
            grace: Duration::from_secs(1),
        };
        let in_all = Arc::new(Semaphore::new(2));
        let (first, _, _) = start_sharing(limits, in_all.clone()).await;
        let (second, _, _) = start_sharing(limits, in_all).await;
        // An idle connection to each door takes the process's two places.
        let held = [TcpStream::connect(first).await.unwrap(), TcpStream::connect(second).await.unwrap()];
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut waiting = TcpStream::connect(second).await.unwrap();
        waiting.write_all(REQUEST).await.unwrap();
        let mut answer = Vec::new();
        let early = tokio::time::timeout(Duration::from_millis(300), waiting.read_to_end(&mut answer)).await;
        assert!(early.is_err(), "served past the places in all: {}", String::from_utf8_lossy(&answer));
        // Given back, the second door serves it.
        drop(held);
        let answer = read_to_close(&mut waiting).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }

    #[tokio::test]
    async fn shutdown_closes_what_does_not_finish_after_the_grace() {
        let limits = Limits {
            read: Duration::from_secs(30),
            write: Duration::from_secs(30),
            connections: 8,
            grace: Duration::from_millis(500),
        };
        let (address, shutdown, served) = start_with(limits).await;
        let _stalled = never_reading(address).await;
        let mut half = TcpStream::connect(address).await.unwrap();
        half.write_all(b"GET / HTTP/1.1\r\nHost: loc").await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        shutdown.cancel();
        let ended = tokio::time::timeout(Duration::from_secs(5), served).await;
        assert!(matches!(ended, Ok(Ok(Ok(())))), "serving did not end: {ended:?}");
    }

    /// What the server sends on `stream` until it closes it, within 10 s.
    async fn read_to_close(stream: &mut TcpStream) -> String {
        let mut answer = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
            .await
            .expect("the server closes the connection")
            .unwrap();
        String::from_utf8_lossy(&answer).into_owned()
    }

    #[tokio::test]
    async fn a_request_that_names_two_hosts_is_refused() {
        let (address, _shutdown) = start(Duration::from_secs(30), 8).await;
        for (request, status) in [
            ("GET / HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\nConnection: close\r\n\r\n", "400"),
            ("GET http://evil.example/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", "400"),
            ("GET http://localhost/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", "200"),
            ("GET http://LOCALHOST/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", "200"),
            ("GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", "200"),
        ] {
            let mut stream = TcpStream::connect(address).await.unwrap();
            stream.write_all(request.as_bytes()).await.unwrap();
            let answer = read_to_close(&mut stream).await;
            assert_eq!(answer.get(9..12), Some(status), "{request:?}: {answer}");
        }
    }

    #[tokio::test]
    async fn a_body_sent_too_slowly_fails_as_timed_out() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let router = axum::Router::new().route(
            "/",
            axum::routing::post(|body: axum::body::Body| async move {
                match axum::body::to_bytes(body, 1 << 20).await {
                    Ok(bytes) => format!("read {}", bytes.len()),
                    Err(error) => format!("unread: {:?}", why_unread(&error)),
                }
            }),
        );
        let limits = Limits {
            read: Duration::from_millis(300),
            write: Duration::from_secs(30),
            connections: 64,
            grace: Duration::from_secs(1),
        };
        tokio::spawn(serve_with(listener, router, CancellationToken::new(), Arc::new(Semaphore::new(64)), limits));
        for (sent, expected) in [("0123456789", "read 10"), ("01234", "unread: TooSlow")] {
            let mut stream = TcpStream::connect(address).await.unwrap();
            let head = "POST / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: 10\r\n\r\n";
            stream.write_all(format!("{head}{sent}").as_bytes()).await.unwrap();
            let answer = read_to_close(&mut stream).await;
            assert!(answer.ends_with(expected), "{answer}");
        }
    }

    #[tokio::test]
    async fn a_body_announced_past_a_limit_is_refused_before_it_is_waited_for() {
        let (address, _shutdown, _) = start_with(Limits {
            read: Duration::from_secs(30),
            write: Duration::from_secs(30),
            connections: 8,
            grace: Duration::from_secs(1),
        })
        .await;
        let mut stream = TcpStream::connect(address).await.unwrap();
        let head = "POST /limited HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: 2147483648\r\n\r\nab";
        stream.write_all(head.as_bytes()).await.unwrap();
        let started = std::time::Instant::now();
        let answer = read_to_close(&mut stream).await;
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    }

    const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";

    #[tokio::test]
    async fn half_sent_headers_and_silent_connections_are_closed_in_time() {
        let (address, _shutdown) = start(Duration::from_millis(300), 64).await;
        let mut half = TcpStream::connect(address).await.unwrap();
        half.write_all(b"GET / HTTP/1.1\r\nHost: loc").await.unwrap();
        let mut silent = TcpStream::connect(address).await.unwrap();
        let started = std::time::Instant::now();
        assert_eq!(read_to_close(&mut half).await, "");
        assert_eq!(read_to_close(&mut silent).await, "");
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        // An idle keep-alive connection too, after its answer.
        let mut kept = TcpStream::connect(address).await.unwrap();
        kept.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n").await.unwrap();
        let answer = read_to_close(&mut kept).await;
        assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("127.0.0.1"), "{answer}");
    }

    #[tokio::test]
    async fn connections_past_the_cap_wait_until_one_closes() {
        let (address, _shutdown) = start(Duration::from_secs(30), 2).await;
        let held = [TcpStream::connect(address).await.unwrap(), TcpStream::connect(address).await.unwrap()];
        let mut third = TcpStream::connect(address).await.unwrap();
        third.write_all(REQUEST).await.unwrap();
        let mut answer = [0u8; 1];
        let waited = tokio::time::timeout(Duration::from_millis(500), third.read(&mut answer)).await;
        assert!(waited.is_err(), "served past the cap: {waited:?}");
        drop(held);
        let answer = read_to_close(&mut third).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }

    #[tokio::test]
    async fn shutdown_stops_accepting_and_lets_answers_finish() {
        let (address, shutdown) = start(Duration::from_secs(30), 64).await;
        let mut before = TcpStream::connect(address).await.unwrap();
        before.write_all(REQUEST).await.unwrap();
        assert!(read_to_close(&mut before).await.starts_with("HTTP/1.1 200"));
        shutdown.cancel();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(TcpStream::connect(address).await.is_err(), "still accepting after shutdown");
    }
}
