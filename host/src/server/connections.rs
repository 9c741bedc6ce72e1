//! Connections held at once: past the cap, a new connection is answered
//! `503` with `Retry-After` and closed as it is accepted, before it is
//! handed to the HTTP server.
//!
//! Why at accept: admission (`api::admission`) refuses a request at once,
//! but a runtime that does not bound its requests keeps opening
//! connections while its refused requests wait out their `Retry-After`,
//! and every open connection costs the server its buffers and a task.
//! Measured (2,000 reports a second offered with no bound,
//! `BENCHMARKS.md`): about 30,000 connections open and 2.7 GB of RSS. A
//! connection refused here costs a write and a close.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::header;
use axum::response::IntoResponse;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::api::ApiError;
use crate::metrics::Metrics;

/// Connections `serve` holds open by default (`--max-connections`). A
/// runtime that bounds its requests needs about as many connections as it
/// has requests in flight, and the server handles 64 at once (admission);
/// each open connection costs tens of kilobytes.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// How long a refused connection is given to read its answer: the request
/// it sent is read and dropped meanwhile, so that closing a socket with
/// unread bytes does not reset it before the client reads the `503`.
const LINGER: Duration = Duration::from_secs(1);

/// A listener that holds at most `max` accepted connections at once.
pub struct CappedListener<L> {
    inner: L,
    permits: Arc<Semaphore>,
    refusal: Bytes,
    metrics: Arc<Metrics>,
}

impl<L> CappedListener<L> {
    /// Caps `inner` at `max` connections; refused ones answer the API's
    /// `overloaded` problem.
    pub async fn new(inner: L, max: usize, metrics: Arc<Metrics>) -> io::Result<Self> {
        Ok(Self {
            inner,
            permits: Arc::new(Semaphore::new(max)),
            refusal: refusal().await?,
            metrics,
        })
    }
}

/// The raw HTTP/1.1 answer to a refused connection: the same problem,
/// status and `Retry-After` as a request refused by admission, and
/// `Connection: close`.
async fn refusal() -> io::Result<Bytes> {
    let (parts, body) = ApiError::Overloaded.into_response().into_parts();
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .map_err(io::Error::other)?;
    let mut head = format!("HTTP/1.1 {}\r\n", parts.status);
    let framing = [header::CONTENT_LENGTH, header::CONNECTION];
    for (name, value) in parts.headers.iter().filter(|(n, _)| !framing.contains(n)) {
        let value = value.to_str().map_err(io::Error::other)?;
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    ));
    Ok([head.as_bytes(), &body].concat().into())
}

/// Answers a connection over the cap and closes it.
async fn refuse<Io>(mut io: Io, refusal: Bytes)
where
    Io: AsyncRead + AsyncWrite + Unpin,
{
    let answered = async {
        io.write_all(&refusal).await?;
        io.shutdown().await?;
        let mut sink = [0u8; 1024];
        while io.read(&mut sink).await? > 0 {}
        Ok::<_, io::Error>(())
    };
    // The peer may be gone or slow; either way the connection is dropped.
    let _ = tokio::time::timeout(LINGER, answered).await;
}

impl<L> axum::serve::Listener for CappedListener<L>
where
    L: axum::serve::Listener,
{
    type Io = Admitted<L::Io>;
    type Addr = L::Addr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (io, addr) = self.inner.accept().await;
            match Arc::clone(&self.permits).try_acquire_owned() {
                Ok(permit) => {
                    self.metrics.connection_opened();
                    let metrics = Arc::clone(&self.metrics);
                    return (
                        Admitted {
                            io,
                            _permit: permit,
                            metrics,
                        },
                        addr,
                    );
                }
                Err(_) => {
                    self.metrics.connection_refused();
                    tokio::spawn(refuse(io, self.refusal.clone()));
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// An admitted connection: holds its permit until the server drops it.
pub struct Admitted<Io> {
    io: Io,
    _permit: OwnedSemaphorePermit,
    metrics: Arc<Metrics>,
}

impl<Io> Drop for Admitted<Io> {
    fn drop(&mut self) {
        self.metrics.connection_closed();
    }
}

impl<Io: AsyncRead + Unpin> AsyncRead for Admitted<Io> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<Io: AsyncWrite + Unpin> AsyncWrite for Admitted<Io> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::routing::get;
    use axum::Router;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use tokio_util::sync::CancellationToken;

    use super::CappedListener;
    use crate::metrics::Metrics;

    /// A request that leaves its connection open.
    const KEEP_ALIVE_GET: &[u8] = b"GET / HTTP/1.1\r\nhost: x\r\n\r\n";

    /// Reads one HTTP/1.1 answer's head and body from `stream` to its end.
    async fn answer(stream: &mut TcpStream) -> String {
        let mut text = String::new();
        stream
            .read_to_string(&mut text)
            .await
            .expect("read the answer");
        text
    }

    /// With a cap of one, a second connection is answered `503` with
    /// `Retry-After` and the `overloaded` problem while the first is open,
    /// and once the first is closed the next connection is served.
    #[tokio::test]
    async fn refuses_a_connection_past_the_cap_and_serves_once_one_closes() {
        let tcp = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = tcp.local_addr().expect("address");
        let metrics = Arc::new(Metrics::new());
        let listener = CappedListener::new(tcp, 1, Arc::clone(&metrics))
            .await
            .expect("listener");
        let app = Router::new().route("/", get(|| async { "served" }));
        let shutdown = CancellationToken::new();
        let server = tokio::spawn(crate::server::serve_http(listener, app, shutdown.clone()));

        // The first connection is admitted and held open (keep-alive).
        let mut first = TcpStream::connect(addr).await.expect("connect");
        first.write_all(KEEP_ALIVE_GET).await.expect("send");
        let mut head = [0u8; 12];
        first.read_exact(&mut head).await.expect("first answer");
        assert_eq!(&head, b"HTTP/1.1 200");

        // The second is over the cap: refused whole, then closed.
        let mut second = TcpStream::connect(addr).await.expect("connect");
        second.write_all(KEEP_ALIVE_GET).await.expect("send");
        let refused = answer(&mut second).await;
        assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
        assert!(
            refused.to_ascii_lowercase().contains("retry-after: 1"),
            "{refused}"
        );
        assert!(refused.contains("overloaded"), "{refused}");
        assert!(!refused.contains("served"), "{refused}");

        // Once the first closes, its permit comes back.
        drop(first);
        let served = loop {
            let mut next = TcpStream::connect(addr).await.expect("connect");
            next.write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
                .await
                .expect("send");
            let text = answer(&mut next).await;
            // The server notices the first connection's close on its own
            // task; until then the cap still holds.
            if !text.starts_with("HTTP/1.1 503") {
                break text;
            }
            tokio::task::yield_now().await;
        };
        assert!(served.starts_with("HTTP/1.1 200"), "{served}");
        assert!(served.ends_with("served"), "{served}");
        let text = metrics.render(&Default::default());
        assert!(
            text.contains("nomos_continue_http_connections_refused_total"),
            "{text}"
        );
        shutdown.cancel();
        server.await.expect("join").expect("serve");
    }
}
