//! A real HTTP server on loopback that records every request and answers
//! from a script, for testing whatever the host sends over HTTP (the agent
//! adapters, and end-to-end runs through the binary).
//!
//! Why a real server rather than a mock client: the adapters' behaviour on a
//! refused connection, a time-out or a 5xx is part of their contract, and
//! only a real socket exercises reqwest's classification of those failures.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use nomos_continue_tests::http::{RecordingServer, Reply, Script};
//! let (addr, server) = RecordingServer::start(Script::statuses([500, 200])).await?;
//! // ... point the code under test at format!("http://{addr}/hook") ...
//! let seen = server.wait_for_requests(2).await;
//! assert_eq!(seen[0].method, "POST");
//! # Ok(()) }
//! ```

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The most body bytes the server accepts per request.
const BODY_LIMIT: usize = 16 * 1024 * 1024;

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// `POST`, `GET`, ...
    pub method: String,
    /// The path and query, such as `/v1/chat/completions`.
    pub path: String,
    /// Every header in arrival order, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The body, verbatim.
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// The first value of a header (name matched case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON, if it is JSON.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// What the server does with one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Answer with this status, content type and body.
    Respond {
        /// The HTTP status code.
        status: u16,
        /// The `Content-Type`, if any.
        content_type: Option<String>,
        /// The body.
        body: Vec<u8>,
        /// Further headers, such as `Retry-After`.
        headers: Vec<(String, String)>,
    },
    /// Never answer (until the server is dropped): for time-out tests,
    /// without any sleep in the test.
    Hang,
    /// Answer 200 after this long: a slow agent for benchmarks (the fake
    /// agent's behaviour, never a test's timing).
    SlowOk(std::time::Duration),
    /// Answer 200 once the test opens the gate
    /// ([`RecordingServer::open_gate`]): a call kept in flight for exactly
    /// as long as a test needs, without a sleep.
    Held,
}

impl Reply {
    /// A status with an empty body.
    pub fn status(status: u16) -> Self {
        Reply::Respond {
            status,
            content_type: None,
            body: Vec::new(),
            headers: Vec::new(),
        }
    }

    /// A status with a JSON body.
    pub fn json(status: u16, body: &serde_json::Value) -> Self {
        Reply::Respond {
            status,
            content_type: Some("application/json".to_string()),
            body: body.to_string().into_bytes(),
            headers: Vec::new(),
        }
    }

    /// A status with a plain-text body.
    pub fn text(status: u16, body: impl Into<String>) -> Self {
        Reply::Respond {
            status,
            content_type: Some("text/plain; charset=utf-8".to_string()),
            body: body.into().into_bytes(),
            headers: Vec::new(),
        }
    }

    /// The same reply with one more header.
    pub fn with_header(self, name: &str, value: &str) -> Self {
        match self {
            Reply::Respond {
                status,
                content_type,
                body,
                mut headers,
            } => {
                headers.push((name.to_string(), value.to_string()));
                Reply::Respond {
                    status,
                    content_type,
                    body,
                    headers,
                }
            }
            other => other,
        }
    }

    /// A reply that never comes.
    pub fn hang() -> Self {
        Reply::Hang
    }
}

type Responder = dyn Fn(&RecordedRequest, usize) -> Reply + Send + Sync;

/// How the server answers: a function of the request and its index
/// (0 for the first request the server received).
#[derive(Clone)]
pub struct Script(Arc<Responder>);

impl Script {
    /// The same reply to every request.
    pub fn always(reply: Reply) -> Self {
        Script(Arc::new(move |_, _| reply.clone()))
    }

    /// The replies in order, then `then` for every later request.
    pub fn queue(replies: impl IntoIterator<Item = Reply>, then: Reply) -> Self {
        let queue = Mutex::new(replies.into_iter().collect::<VecDeque<_>>());
        Script(Arc::new(move |_, _| {
            queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop_front()
                .unwrap_or_else(|| then.clone())
        }))
    }

    /// These statuses with empty bodies in order, then `200` forever.
    pub fn statuses(statuses: impl IntoIterator<Item = u16>) -> Self {
        Self::queue(statuses.into_iter().map(Reply::status), Reply::status(200))
    }

    /// Any logic, such as a fake server speaking a real protocol.
    pub fn from_fn(f: impl Fn(&RecordedRequest, usize) -> Reply + Send + Sync + 'static) -> Self {
        Script(Arc::new(f))
    }
}

struct Shared {
    script: Script,
    requests: Mutex<Vec<RecordedRequest>>,
    count: watch::Sender<usize>,
    release: watch::Receiver<bool>,
    gate: watch::Sender<bool>,
}

/// The running server. Dropping it stops accepting connections and lets
/// every hanging reply finish.
pub struct RecordingServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    release: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl RecordingServer {
    /// Binds `127.0.0.1:0` and serves `script` until dropped. Returns the
    /// address as well as the handle, as most tests need it at once.
    pub async fn start(script: Script) -> std::io::Result<(SocketAddr, RecordingServer)> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (release, release_rx) = watch::channel(false);
        let shared = Arc::new(Shared {
            script,
            requests: Mutex::new(Vec::new()),
            count: watch::channel(0).0,
            release: release_rx,
            gate: watch::channel(false).0,
        });
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let task = tokio::spawn(async move {
            // An accept error ends the server; the test then fails on what
            // it did not receive, which is the useful symptom.
            let _ = axum::serve(listener, app).await;
        });
        let server = RecordingServer {
            addr,
            shared,
            release,
            task,
        };
        Ok((addr, server))
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Lets every [`Reply::Held`] answer, those waiting and those to come.
    pub fn open_gate(&self) {
        self.shared.gate.send_replace(true);
    }

    /// Waits until at least `n` requests have arrived and returns them all:
    /// a deterministic signal for tests where something else sends them.
    /// Wrap it in a generous `tokio::time::timeout` as a guard against a
    /// hung test, never as the thing being measured.
    pub async fn wait_for_requests(&self, n: usize) -> Vec<RecordedRequest> {
        let mut count = self.shared.count.subscribe();
        // The sender lives in `self.shared`, so the channel cannot close.
        let _ = count.wait_for(|c| *c >= n).await;
        self.requests()
    }
}

impl Drop for RecordingServer {
    fn drop(&mut self) {
        let _ = self.release.send(true);
        self.task.abort();
    }
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = match axum::body::to_bytes(body, BODY_LIMIT).await {
        Ok(bytes) => bytes.to_vec(),
        Err(_) => return StatusCode::PAYLOAD_TOO_LARGE.into_response(),
    };
    let recorded = RecordedRequest {
        method: parts.method.to_string(),
        path: parts.uri.path_and_query().map_or_else(
            || parts.uri.path().to_string(),
            |pq| pq.as_str().to_string(),
        ),
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body,
    };
    let index = {
        let mut requests = shared
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        requests.push(recorded.clone());
        requests.len() - 1
    };
    shared.count.send_modify(|c| *c += 1);
    match (shared.script.0)(&recorded, index) {
        Reply::Respond {
            status,
            content_type,
            body,
            headers,
        } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = Response::new(Body::from(body));
            *response.status_mut() = status;
            if let Some(value) = content_type.and_then(|c| c.parse().ok()) {
                response.headers_mut().insert(header::CONTENT_TYPE, value);
            }
            for (name, value) in headers {
                if let (Ok(name), Ok(value)) = (
                    header::HeaderName::try_from(name.as_str()),
                    header::HeaderValue::try_from(value.as_str()),
                ) {
                    response.headers_mut().insert(name, value);
                }
            }
            response
        }
        Reply::Hang => {
            let mut release = shared.release.clone();
            let _ = release.wait_for(|released| *released).await;
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
        Reply::Held => {
            let mut gate = shared.gate.subscribe();
            let _ = gate.wait_for(|open| *open).await;
            StatusCode::OK.into_response()
        }
        Reply::SlowOk(delay) => {
            tokio::time::sleep(delay).await;
            StatusCode::OK.into_response()
        }
    }
}
