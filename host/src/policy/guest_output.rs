//! A policy's own error output, kept so a failure can say what the guest
//! said about it.
//!
//! An interpreted policy reports an uncaught exception (a Python
//! traceback, a JavaScript error) on stderr and then traps; without the text
//! the host could only report "unreachable". The sandbox grants no real
//! stdio, so stderr goes here: a buffer that keeps the last
//! [`KEPT_BYTES`], where the exception's own line is. Writes always succeed,
//! so a chatty guest is never failed for writing, and never grows the
//! host's memory past the bound.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// Bytes of a guest's stderr kept (the tail).
pub const KEPT_BYTES: usize = 4096;

/// Bytes of it a failure message carries, on one line.
const REPORTED_BYTES: usize = 1024;

/// The tail of one sandbox's stderr. Clones share the buffer.
#[derive(Clone, Default)]
pub(crate) struct GuestOutput {
    tail: Arc<Mutex<VecDeque<u8>>>,
}

impl GuestOutput {
    fn push(&self, bytes: &[u8]) {
        let mut tail = self.tail.lock().unwrap_or_else(|p| p.into_inner());
        let bytes = &bytes[bytes.len().saturating_sub(KEPT_BYTES)..];
        let overflow = (tail.len() + bytes.len()).saturating_sub(KEPT_BYTES);
        tail.drain(..overflow);
        tail.extend(bytes);
    }

    /// What the guest wrote last, on one line (line breaks shown as ` | `),
    /// at most [`REPORTED_BYTES`]; `None` if it wrote nothing.
    pub(crate) fn last_words(&self) -> Option<String> {
        let tail = self.tail.lock().unwrap_or_else(|p| p.into_inner());
        let bytes: Vec<u8> = tail.iter().copied().collect();
        drop(tail);
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.is_empty())
            .collect();
        let joined = lines.join(" | ");
        if joined.is_empty() {
            return None;
        }
        let mut start = joined.len().saturating_sub(REPORTED_BYTES);
        while !joined.is_char_boundary(start) {
            start += 1;
        }
        Some(if start > 0 {
            format!("…{}", &joined[start..])
        } else {
            joined
        })
    }
}

impl IsTerminal for GuestOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for GuestOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[async_trait::async_trait]
impl OutputStream for GuestOutput {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        // Any amount: what does not fit pushes the oldest bytes out.
        Ok(64 * 1024)
    }
}

#[async_trait::async_trait]
impl Pollable for GuestOutput {
    async fn ready(&mut self) {}
}

impl AsyncWrite for GuestOutput {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.push(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_tail_on_one_line() {
        let out = GuestOutput::default();
        assert_eq!(out.last_words(), None);
        out.push(b"Traceback (most recent call last):\n  File \"app.py\", line 3\n");
        out.push(b"ValueError: bad status\n");
        assert_eq!(
            out.last_words().as_deref(),
            Some("Traceback (most recent call last): |   File \"app.py\", line 3 | ValueError: bad status")
        );
    }

    #[test]
    fn a_flood_is_bounded_and_the_last_words_survive() {
        let out = GuestOutput::default();
        for _ in 0..10_000 {
            out.push(b"noise noise noise noise\n");
        }
        out.push(b"Error: the last word\n");
        assert!(out.tail.lock().map(|t| t.len()).unwrap_or(0) <= KEPT_BYTES);
        let words = out.last_words().unwrap_or_default();
        assert!(words.len() <= REPORTED_BYTES + "…".len(), "{}", words.len());
        assert!(words.ends_with("Error: the last word"), "{words}");
        out.push(&vec![b'x'; 3 * KEPT_BYTES]);
        assert!(out.tail.lock().map(|t| t.len()).unwrap_or(0) <= KEPT_BYTES);
    }
}
