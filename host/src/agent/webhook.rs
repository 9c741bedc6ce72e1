//! The webhook adapter: delivers continuations and notices to the agent
//! runtime by HTTP `POST`, for the standalone binary (`--agent-webhook URL`).
//!
//! What a receiver gets and must answer (the two bodies, the headers, what
//! each status means, verification) is written once, for integrators, in
//! `docs/webhooks.md`; the bodies are the types of [`super::payload`].
//!
//! Why it is shaped this way: the runtime answers as soon as it has
//! *accepted* a request, so a slow agent turn never holds a lease; every
//! retry carries the same key, so a receiver that drops a key it has seen
//! makes redelivery after a crash harmless; and each request is signed the
//! Standard Webhooks way, so a receiver can check who sent it and when
//! without a secret ever crossing the network. Redirects are not followed:
//! a redirected `POST` may be replayed as a `GET` or to another host.
//! Every request also carries a W3C `traceparent` (and `tracestate`, if
//! any) naming the host's `deliver` span, so the runtime's trace goes on
//! across the gap this engine closes (`docs/tracing.md`).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::Url;

use super::http;
use super::payload::{ContinuationEvent, NoticeEvent};
use super::signature::WebhookSecret;
use super::signed::SignedPost;
use super::{AdapterConfigError, Agent, AgentError, Continuation, Notice};
use crate::clock::Clock;

/// The per-request time-out when none is configured. A webhook only has to
/// accept the request, not run the agent, so ten seconds is generous.
pub const DEFAULT_WEBHOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// Where and how to reach the runtime's webhook.
#[derive(Clone)]
pub struct WebhookConfig {
    /// Receives continuations (and notices, unless `notice_url` is set).
    pub url: String,
    /// A separate receiver for notices, for runtimes that route them apart;
    /// `None` sends them to `url` (the body's `type` tells them apart).
    pub notice_url: Option<String>,
    /// Sent as `Authorization: Bearer <token>` when present.
    pub token: Option<String>,
    /// Bounds each request as a whole: connect, send and read.
    pub timeout: Duration,
    /// Each signs every request (`webhook-signature`); two while one is
    /// rotated. None sends requests unsigned.
    pub secrets: Vec<WebhookSecret>,
}

impl WebhookConfig {
    /// A configuration with no token, no secret, one URL and the default
    /// time-out.
    pub fn new(url: impl Into<String>) -> Self {
        WebhookConfig {
            url: url.into(),
            notice_url: None,
            token: None,
            timeout: DEFAULT_WEBHOOK_TIMEOUT,
            secrets: Vec::new(),
        }
    }
}

// Written by hand so the token never reaches a log (the secrets redact
// themselves; only their number is worth showing).
impl std::fmt::Debug for WebhookConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookConfig")
            .field("url", &self.url)
            .field("notice_url", &self.notice_url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("secrets", &self.secrets.len())
            .finish()
    }
}

/// An [`Agent`] that POSTs to the runtime's webhook; see `docs/webhooks.md`
/// for what it sends.
#[derive(Clone, Debug)]
pub struct WebhookAgent {
    sender: SignedPost,
    url: Url,
    notice_url: Url,
}

impl WebhookAgent {
    /// Checks the configuration (URLs, token, time-out) once, so that a
    /// mistake shows at start-up rather than as a failed delivery. Requests
    /// are stamped by the system clock unless [`Self::with_clock`] says
    /// otherwise.
    pub fn new(config: WebhookConfig) -> Result<Self, AdapterConfigError> {
        let url = http::parse_url("webhook url", &config.url)?;
        let notice_url = match &config.notice_url {
            Some(raw) => http::parse_url("webhook notice url", raw)?,
            None => url.clone(),
        };
        Ok(WebhookAgent {
            sender: SignedPost::new(config.timeout, config.token.as_deref(), config.secrets)?,
            url,
            notice_url,
        })
    }

    /// Stamps requests with `clock`: the process's one clock in `serve`,
    /// and a clock a test moves by hand.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.sender = self.sender.with_clock(clock);
        self
    }
}

#[async_trait]
impl Agent for WebhookAgent {
    async fn continue_session(&self, continuation: &Continuation) -> Result<(), AgentError> {
        let sent_at = self.sender.now();
        let body = ContinuationEvent::new(continuation, sent_at);
        let trace = http::Trace::of(&continuation.traceparent, &continuation.tracestate);
        self.sender
            .post(
                &self.url,
                &continuation.idempotency_key,
                sent_at,
                trace,
                &body,
            )
            .await
    }

    async fn notify(&self, notice: &Notice) -> Result<(), AgentError> {
        let sent_at = self.sender.now();
        let body = NoticeEvent::new(notice, sent_at);
        let trace = http::Trace::of(&notice.traceparent, &notice.tracestate);
        self.sender
            .post(
                &self.notice_url,
                &notice.idempotency_key,
                sent_at,
                trace,
                &body,
            )
            .await
    }
}
