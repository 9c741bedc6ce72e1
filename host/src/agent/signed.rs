//! One signed JSON `POST`, shared by the two webhooks the binary sends:
//! the agent runtime's (`--agent-webhook`) and the operator's
//! (`--notify-webhook`). Both carry the same Standard Webhooks headers, so a
//! receiver verifies either with the same library, and both classify the
//! answer through [`super::http`], so "retry" means one thing.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, SubsecRound, Utc};
use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use reqwest::{Client, Url};
use serde::Serialize;

use super::http;
use super::signature::{signature_header, WebhookSecret};
use super::{AdapterConfigError, AgentError};
use crate::clock::{Clock, SystemClock};

/// A client, an optional bearer token, the signing secrets and the clock
/// that stamps each request.
#[derive(Clone)]
pub(crate) struct SignedPost {
    client: Client,
    auth: Option<HeaderValue>,
    secrets: Vec<WebhookSecret>,
    clock: Arc<dyn Clock>,
}

// Written by hand: a clock has no `Debug`, the token is never shown, and
// the secrets only by their number.
impl std::fmt::Debug for SignedPost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignedPost")
            .field("auth", &self.auth.as_ref().map(|_| "<redacted>"))
            .field("secrets", &self.secrets.len())
            .finish_non_exhaustive()
    }
}

impl SignedPost {
    /// Checks the token and the time-out once; stamps with the system clock.
    pub(crate) fn new(
        timeout: Duration,
        token: Option<&str>,
        secrets: Vec<WebhookSecret>,
    ) -> Result<Self, AdapterConfigError> {
        Ok(Self {
            client: http::client(timeout)?,
            auth: token.map(http::bearer).transpose()?,
            secrets,
            clock: Arc::new(SystemClock),
        })
    }

    /// Stamps requests with `clock`.
    pub(crate) fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The moment a request is sent, in whole seconds: the header carries
    /// seconds, and a body's `timestamp` is then the same instant.
    pub(crate) fn now(&self) -> DateTime<Utc> {
        self.clock.now().trunc_subsecs(0)
    }

    /// Sends `body` as JSON to `url` under `key` (`Idempotency-Key` and
    /// `webhook-id`), signed, and classifies the answer.
    pub(crate) async fn post<B: Serialize + Sync>(
        &self,
        url: &Url,
        key: &str,
        sent_at: DateTime<Utc>,
        trace: http::Trace<'_>,
        body: &B,
    ) -> Result<(), AgentError> {
        let body = serde_json::to_vec(body)
            .map_err(|e| AgentError::Permanent(format!("cannot encode the body: {e}")))?;
        let key_value = http::idempotency_header(key)?;
        let timestamp = sent_at.timestamp();
        let mut request = self
            .client
            .post(url.clone())
            .header("Idempotency-Key", key_value.clone())
            .header("webhook-id", key_value)
            .header("webhook-timestamp", timestamp)
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(signature) = signature_header(&self.secrets, key, timestamp, &body) {
            request = request.header("webhook-signature", signature);
        }
        request = trace.apply(request);
        if let Some(auth) = &self.auth {
            request = request.header(AUTHORIZATION, auth.clone());
        }
        let response = request
            .body(body)
            .send()
            .await
            .map_err(|e| http::transport_error(url, &e))?;
        // The body of a 2xx is not part of the contract; it is not read.
        http::check_status(url, response).await.map(drop)
    }
}
