//! Guest stdout and stderr. The first bytes, up to a cap, are kept for the
//! host's log and for trap messages (a panic message is written there);
//! the rest is counted and dropped. A write never fails, because Rust's
//! `print!` panics when one does and a chatty tool should not die of it.

use bytes::Bytes;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// Room a guest is told it has per write; anything is accepted.
const WRITE_WINDOW: usize = 64 << 10;

/// A capped capture of one guest output stream, shared by its clones.
#[derive(Clone)]
pub(crate) struct Capture {
    kept: Arc<Mutex<Vec<u8>>>,
    dropped: Arc<AtomicUsize>,
    cap: usize,
}

impl Capture {
    pub(crate) fn new(cap: usize) -> Self {
        Capture { kept: Arc::default(), dropped: Arc::default(), cap }
    }

    /// The kept bytes.
    pub(crate) fn contents(&self) -> Vec<u8> {
        self.kept.lock().expect("capture lock").clone()
    }

    /// How many bytes went past the cap.
    pub(crate) fn dropped(&self) -> usize {
        self.dropped.load(Ordering::Relaxed)
    }

    fn take(&self, bytes: &[u8]) {
        let mut kept = self.kept.lock().expect("capture lock");
        let room = self.cap.saturating_sub(kept.len()).min(bytes.len());
        kept.extend_from_slice(&bytes[..room]);
        self.dropped.fetch_add(bytes.len() - room, Ordering::Relaxed);
    }
}

impl IsTerminal for Capture {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for Capture {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for Capture {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.take(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_WINDOW)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for Capture {
    async fn ready(&mut self) {}
}

impl AsyncWrite for Capture {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.take(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_up_to_the_cap_and_counts_the_rest() {
        let mut capture = Capture::new(5);
        capture.write(Bytes::from_static(b"abc")).unwrap();
        capture.write(Bytes::from_static(b"defgh")).unwrap();
        assert_eq!(capture.contents(), b"abcde");
        assert_eq!(capture.dropped(), 3);
        assert!(capture.check_write().unwrap() > 0, "a full capture still accepts writes");
    }
}
