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
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// How long a client may take to send a request's headers, from the
/// connection's start or the end of its last response; and its body, from
/// the end of its headers.
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// The most connections served at once: each holds a file descriptor, so
/// that clients which open connections and hold them cannot take the
/// process's last ones.
pub(crate) const MAX_CONNECTIONS: usize = 512;

/// Serve `router` on `listener` until `shutdown` fires, then wait for the
/// connections open to finish their requests. Each request carries its
/// peer's [`ConnectInfo`].
pub(crate) async fn serve(listener: TcpListener, router: axum::Router, shutdown: CancellationToken) -> std::io::Result<()> {
    serve_with(listener, router, shutdown, READ_TIMEOUT, MAX_CONNECTIONS).await
}

async fn serve_with(
    listener: TcpListener,
    router: axum::Router,
    shutdown: CancellationToken,
    read_timeout: Duration,
    max_connections: usize,
) -> std::io::Result<()> {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(read_timeout);
    let open = Arc::new(Semaphore::new(max_connections));
    let graceful = GracefulShutdown::new();
    loop {
        let place = tokio::select! {
            () = shutdown.cancelled() => break,
            place = open.clone().acquire_owned() => place.expect("the semaphore is never closed"),
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
            axum::extract::Request::from_parts(parts, with_deadline(axum::body::Body::new(body), read_timeout))
        });
        let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service)));
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%peer, %error, "HTTP connection ended");
            }
            drop(place);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
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

/// `body`, failing with [`std::io::ErrorKind::TimedOut`] if it is not all
/// read within [`READ_TIMEOUT`] (a client that sends a body byte by byte
/// would else hold its connection for as long as it likes).
fn with_deadline(body: axum::body::Body, read_timeout: Duration) -> axum::body::Body {
    let deadline = tokio::time::Instant::now() + read_timeout;
    let chunks = futures::stream::unfold(Some(body.into_data_stream()), move |chunks| async move {
        let mut chunks = chunks?;
        match tokio::time::timeout_at(deadline, futures::StreamExt::next(&mut chunks)).await {
            Ok(next) => next.map(|chunk| (chunk.map_err(std::io::Error::other), Some(chunks))),
            Err(_) => {
                Some((Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "the request's body was not sent in time")), None))
            }
        }
    });
    axum::body::Body::from_stream(chunks)
}

/// Whether reading a body failed because it was not sent in time. (The
/// console's extractors answer such a body as any unreadable one.)
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub(crate) fn is_read_timeout(error: &axum::Error) -> bool {
    let mut source = std::error::Error::source(error);
    while let Some(error) = source {
        if error.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::TimedOut) {
            return true;
        }
        source = error.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    async fn start(read_timeout: Duration, max_connections: usize) -> (SocketAddr, CancellationToken) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let router = axum::Router::new()
            .route("/", axum::routing::get(|ConnectInfo(peer): ConnectInfo<SocketAddr>| async move { peer.ip().to_string() }));
        let shutdown = CancellationToken::new();
        tokio::spawn(serve_with(listener, router, shutdown.clone(), read_timeout, max_connections));
        (address, shutdown)
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
    async fn a_body_sent_too_slowly_fails_as_timed_out() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let router = axum::Router::new().route(
            "/",
            axum::routing::post(|body: axum::body::Body| async move {
                match axum::body::to_bytes(body, 1 << 20).await {
                    Ok(bytes) => format!("read {}", bytes.len()),
                    Err(error) => format!("timed out: {}", is_read_timeout(&error)),
                }
            }),
        );
        tokio::spawn(serve_with(listener, router, CancellationToken::new(), Duration::from_millis(300), 64));
        for (sent, expected) in [("0123456789", "read 10"), ("01234", "timed out: true")] {
            let mut stream = TcpStream::connect(address).await.unwrap();
            let head = "POST / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: 10\r\n\r\n";
            stream.write_all(format!("{head}{sent}").as_bytes()).await.unwrap();
            let answer = read_to_close(&mut stream).await;
            assert!(answer.ends_with(expected), "{answer}");
        }
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
