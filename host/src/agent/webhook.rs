//! The webhook adapter: delivers continuations and notices to the agent
//! runtime by HTTP `POST`, for the standalone binary (`--agent-webhook URL`).
//!
//! # The contract with the runtime
//!
//! Every request is a `POST` with a JSON body (`Content-Type:
//! application/json`), the header `Idempotency-Key: <key>` (the same key as
//! in the body) and, when a token is configured, `Authorization: Bearer
//! <token>`. The body's `kind` tells the receiver which of two shapes it got.
//!
//! Every request also carries a W3C `traceparent` (and `tracestate`, if any)
//! naming the host's `deliver` span, a child of the trace the runtime sent
//! with the tool result or status report (`docs/tracing.md`).
//!
//! A continuation (re-invoke the agent of `session_id` with `note`):
//!
//! ```json
//! { "kind": "continuation",
//!   "session_id": "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
//!   "idempotency_key": "…",
//!   "executions": [ { "id": "…", "status": "failed", "outcome": "failed",
//!                     "result": "ssh: connection refused" } ],
//!   "note": "execution … failed: ssh: connection refused\n…",
//!   "soul": "…" }
//! ```
//!
//! A notice (show `notice` to the operator; do not run the agent):
//!
//! ```json
//! { "kind": "notice", "session_id": "…", "idempotency_key": "…",
//!   "notice": "execution … finished after the assent window closed; not continued" }
//! ```
//!
//! The runtime answers any 2xx once it has *accepted* the request (it need
//! not wait for the agent's turn to finish). 408, 429, 5xx, a time-out or a
//! refused connection make the host retry later with the same key, so the
//! runtime must drop a key it has already accepted. Any other status is a
//! permanent failure: the host stops retrying and shows the failure. Redirects
//! are not followed.

use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{HeaderValue, AUTHORIZATION};
use reqwest::{Client, Url};
use serde::Serialize;
use uuid::Uuid;

use super::http;
use super::{AdapterConfigError, Agent, AgentError, Continuation, ExecutionReport, Notice};

/// The per-request time-out when none is configured. A webhook only has to
/// accept the request, not run the agent, so ten seconds is generous.
pub const DEFAULT_WEBHOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// Where and how to reach the runtime's webhook.
#[derive(Clone)]
pub struct WebhookConfig {
    /// Receives continuations (and notices, unless `notice_url` is set).
    pub url: String,
    /// A separate receiver for notices, for runtimes that route them apart;
    /// `None` sends them to `url` (the `kind` field tells them apart).
    pub notice_url: Option<String>,
    /// Sent as `Authorization: Bearer <token>` when present.
    pub token: Option<String>,
    /// Bounds each request as a whole: connect, send and read.
    pub timeout: Duration,
}

impl WebhookConfig {
    /// A configuration with no token, one URL and the default time-out.
    pub fn new(url: impl Into<String>) -> Self {
        WebhookConfig {
            url: url.into(),
            notice_url: None,
            token: None,
            timeout: DEFAULT_WEBHOOK_TIMEOUT,
        }
    }
}

// Written by hand so the token never reaches a log.
impl std::fmt::Debug for WebhookConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookConfig")
            .field("url", &self.url)
            .field("notice_url", &self.notice_url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// An [`Agent`] that POSTs to the runtime's webhook; see the module
/// documentation for the body it sends.
#[derive(Debug, Clone)]
pub struct WebhookAgent {
    client: Client,
    url: Url,
    notice_url: Url,
    auth: Option<HeaderValue>,
}

/// The continuation body; field names are the contract documented above.
#[derive(Serialize)]
struct ContinuationBody<'a> {
    kind: &'static str,
    session_id: Uuid,
    idempotency_key: &'a str,
    executions: &'a [ExecutionReport],
    note: &'a str,
    soul: &'a str,
}

/// The notice body; field names are the contract documented above.
#[derive(Serialize)]
struct NoticeBody<'a> {
    kind: &'static str,
    session_id: Uuid,
    idempotency_key: &'a str,
    notice: &'a str,
}

impl WebhookAgent {
    /// Checks the configuration (URLs, token, time-out) once, so that a
    /// mistake shows at start-up rather than as a failed delivery.
    pub fn new(config: WebhookConfig) -> Result<Self, AdapterConfigError> {
        let url = http::parse_url("webhook url", &config.url)?;
        let notice_url = match &config.notice_url {
            Some(raw) => http::parse_url("webhook notice url", raw)?,
            None => url.clone(),
        };
        let auth = config.token.as_deref().map(http::bearer).transpose()?;
        Ok(WebhookAgent {
            client: http::client(config.timeout)?,
            url,
            notice_url,
            auth,
        })
    }

    /// Sends one JSON body and classifies the outcome.
    async fn post<B: Serialize + Sync>(
        &self,
        url: &Url,
        key: &str,
        trace: http::Trace<'_>,
        body: &B,
    ) -> Result<(), AgentError> {
        let mut request = self
            .client
            .post(url.clone())
            .header("Idempotency-Key", http::idempotency_header(key)?)
            .json(body);
        request = trace.apply(request);
        if let Some(auth) = &self.auth {
            request = request.header(AUTHORIZATION, auth.clone());
        }
        let response = request
            .send()
            .await
            .map_err(|e| http::transport_error(url, &e))?;
        // The body of a 2xx is not part of the contract; it is not read.
        http::check_status(url, response).await.map(drop)
    }
}

#[async_trait]
impl Agent for WebhookAgent {
    async fn continue_session(&self, continuation: &Continuation) -> Result<(), AgentError> {
        let body = ContinuationBody {
            kind: "continuation",
            session_id: continuation.session_id,
            idempotency_key: &continuation.idempotency_key,
            executions: &continuation.executions,
            note: &continuation.note,
            soul: &continuation.soul,
        };
        let trace = http::Trace::of(&continuation.traceparent, &continuation.tracestate);
        self.post(&self.url, &continuation.idempotency_key, trace, &body)
            .await
    }

    async fn notify(&self, notice: &Notice) -> Result<(), AgentError> {
        let body = NoticeBody {
            kind: "notice",
            session_id: notice.session_id,
            idempotency_key: &notice.idempotency_key,
            notice: &notice.message,
        };
        let trace = http::Trace::of(&notice.traceparent, &notice.tracestate);
        self.post(&self.notice_url, &notice.idempotency_key, trace, &body)
            .await
    }
}
