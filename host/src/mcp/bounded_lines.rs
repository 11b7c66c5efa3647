//! [`BoundedLines`]: a stdio client's input, each line (one JSON-RPC
//! message) cut off past [`MAX_REQUEST_VALUES`] JSON values, before rmcp
//! parses it. rmcp bounds a line's bytes (16 MiB), not what it parses
//! into: a line of 16 MiB of `{}` took 917 MB. A line cut off ends where
//! its values passed the limit, inside its structure, so it is no JSON and
//! rmcp drops it, as it drops any unparsable line (with no answer, as the
//! other official SDKs do; the client learns of it from the log).

use super::bounds::{MAX_REQUEST_VALUES, ValueCount};
use crate::log_throttle::warn_throttled;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, ReadBuf};

/// `inner`, its lines passed on until their JSON values pass the most.
pub(super) struct BoundedLines<R> {
    inner: R,
    most: usize,
    /// The values of the line being read.
    line: ValueCount,
    /// In a line cut off: its rest is dropped, to its line break.
    dropping: bool,
}

impl<R> BoundedLines<R> {
    pub(super) fn new(inner: R) -> Self {
        Self::with_most(inner, MAX_REQUEST_VALUES)
    }

    fn with_most(inner: R, most: usize) -> Self {
        BoundedLines { inner, most, line: ValueCount::default(), dropping: false }
    }

    /// `bytes` as passed on, kept in place: a line past the most ends with
    /// a line break where its values passed it, and its rest is dropped.
    /// How many bytes are kept.
    fn bound(&mut self, bytes: &mut [u8]) -> usize {
        let mut kept = 0;
        for read in 0..bytes.len() {
            let byte = bytes[read];
            if self.dropping {
                if byte == b'\n' {
                    // Its line break was written when it was cut off.
                    self.dropping = false;
                }
                continue;
            }
            if byte == b'\n' {
                self.line = ValueCount::default();
            } else {
                self.line.feed(byte);
                if self.line.values > self.most {
                    warn_throttled!("an MCP request line holds more than {} JSON values; it is dropped", self.most);
                    self.line = ValueCount::default();
                    self.dropping = true;
                    bytes[kept] = b'\n';
                    kept += 1;
                    continue;
                }
            }
            bytes[kept] = byte;
            kept += 1;
        }
        kept
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        loop {
            let before = buf.filled().len();
            ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
            let read = buf.filled().len() - before;
            if read == 0 {
                return Poll::Ready(Ok(()));
            }
            let kept = this.bound(&mut buf.filled_mut()[before..]);
            buf.set_filled(before + kept);
            // Nothing kept is not the end of the input: read on.
            if kept > 0 {
                return Poll::Ready(Ok(()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn passed(input: &[u8], most: usize, chunk: usize) -> String {
        let (mut writer, reader) = tokio::io::duplex(chunk);
        let input = input.to_vec();
        let writing = tokio::spawn(async move {
            for piece in input.chunks(chunk) {
                tokio::io::AsyncWriteExt::write_all(&mut writer, piece).await.unwrap();
            }
        });
        let mut out = Vec::new();
        BoundedLines::with_most(reader, most).read_to_end(&mut out).await.unwrap();
        writing.await.unwrap();
        String::from_utf8(out).unwrap()
    }

    #[tokio::test]
    async fn a_line_past_the_most_is_cut_where_it_passed_and_the_next_passes_whole() {
        let lines = concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"x","params":{"a":[{},{},{},{},{},{},{}]}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
            "\n"
        );
        for chunk in [1, 3, 7, 4096] {
            let out = passed(lines.as_bytes(), 12, chunk).await;
            let out: Vec<&str> = out.lines().collect();
            assert_eq!(out.len(), 3, "chunk {chunk}: {out:?}");
            assert_eq!(out[0], r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
            assert!(out[1].starts_with(r#"{"jsonrpc":"2.0","id":2"#), "{}", out[1]);
            assert!(serde_json::from_str::<serde_json::Value>(out[1]).is_err(), "cut off, it is no JSON: {}", out[1]);
            assert_eq!(out[2], r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#);
        }
    }

    #[tokio::test]
    async fn values_in_strings_do_not_count_and_a_line_within_the_most_is_untouched() {
        let line = format!(
            "{}\n",
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"text": "{[,,,]}\"{".repeat(100)}})
        );
        assert_eq!(passed(line.as_bytes(), 20, 5).await, line);
    }

    #[tokio::test]
    async fn a_huge_line_is_dropped_while_it_streams() {
        let mut huge = b"[".to_vec();
        huge.extend(std::iter::repeat_n(&b"{},"[..], 1 << 20).flatten());
        huge.extend(b"{}]\n{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\n");
        let out = passed(&huge, 1_000, 64 << 10).await;
        assert!(out.len() < 4_000, "{} bytes passed", out.len());
        assert!(out.ends_with("\n{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\n"), "the next line passes");
    }
}
