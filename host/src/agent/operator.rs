//! The operator's channel: notices for a person, sent apart from the agent
//! (`--notify-webhook URL`), so that a notice saying the agent's endpoint
//! is down does not travel only through that endpoint.
//!
//! Two body formats: `json`, the versioned [`OperatorNoticeEvent`] (for an
//! alert router or a runtime's own inbox), and `slack`, a Slack-compatible
//! incoming-webhook body (`text` and one `mrkdwn` section), which Slack and
//! the many chat tools that accept its shape post as a message. Either is
//! signed the Standard Webhooks way with the channel's own secrets, and
//! carries the notice's key as `webhook-id`. This channel never carries a
//! continuation: it has no method for one.

use async_trait::async_trait;
use reqwest::Url;
use serde_json::{json, Value};

use super::http;
use super::payload::{OperatorNoticeData, OperatorNoticeEvent, OperatorNoticeEventType};
use super::signature::WebhookSecret;
use super::signed::SignedPost;
use super::webhook::DEFAULT_WEBHOOK_TIMEOUT;
use super::{AdapterConfigError, AgentError};
use crate::store::OperatorNotice;

/// Where a notice for a person goes; implemented by `OperatorWebhook`,
/// and by an embedding that pages its operators its own way.
#[async_trait]
pub trait Operator: Send + Sync {
    /// Tells a person about `notice`. `Ok` means the channel accepted it.
    async fn tell(&self, notice: &OperatorNotice) -> Result<(), AgentError>;
}

/// The body format of the operator's webhook.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NotifyFormat {
    /// The versioned `operator_notice.v1` JSON body.
    #[default]
    Json,
    /// A Slack-compatible incoming-webhook body.
    Slack,
}

impl std::str::FromStr for NotifyFormat {
    type Err = String;

    /// `json` or `slack`.
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "json" => Ok(Self::Json),
            "slack" => Ok(Self::Slack),
            other => Err(format!(
                "unknown notice format {other:?}: expected json or slack"
            )),
        }
    }
}

/// Where and how to reach the operator's webhook.
#[derive(Clone)]
pub struct OperatorConfig {
    /// The receiver.
    pub url: String,
    /// Its body format.
    pub format: NotifyFormat,
    /// Sent as `Authorization: Bearer <token>` when present.
    pub token: Option<String>,
    /// Bounds each request.
    pub timeout: std::time::Duration,
    /// Each signs every request; none sends them unsigned.
    pub secrets: Vec<WebhookSecret>,
}

impl OperatorConfig {
    /// A JSON channel at `url`, unsigned, with the webhook's time-out.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            format: NotifyFormat::Json,
            token: None,
            timeout: DEFAULT_WEBHOOK_TIMEOUT,
            secrets: Vec::new(),
        }
    }
}

// Written by hand so the token never reaches a log.
impl std::fmt::Debug for OperatorConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorConfig")
            .field("url", &self.url)
            .field("format", &self.format)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("secrets", &self.secrets.len())
            .finish()
    }
}

/// An [`Operator`] that POSTs each notice to a webhook.
#[derive(Clone, Debug)]
pub struct OperatorWebhook {
    sender: SignedPost,
    url: Url,
    format: NotifyFormat,
}

impl OperatorWebhook {
    /// Checks the configuration once, at start-up.
    pub fn new(config: OperatorConfig) -> Result<Self, AdapterConfigError> {
        Ok(Self {
            url: http::parse_url("notify webhook url", &config.url)?,
            sender: SignedPost::new(config.timeout, config.token.as_deref(), config.secrets)?,
            format: config.format,
        })
    }

    /// Stamps requests with `clock`.
    pub fn with_clock(mut self, clock: std::sync::Arc<dyn crate::clock::Clock>) -> Self {
        self.sender = self.sender.with_clock(clock);
        self
    }
}

#[async_trait]
impl Operator for OperatorWebhook {
    async fn tell(&self, notice: &OperatorNotice) -> Result<(), AgentError> {
        let sent_at = self.sender.now();
        let event = OperatorNoticeEvent {
            event_type: OperatorNoticeEventType::V1,
            timestamp: sent_at,
            data: OperatorNoticeData {
                notice_id: notice.claim.id,
                session_id: notice.session_id,
                idempotency_key: notice.idempotency_key.clone(),
                notice: notice.message.clone(),
                execution_ids: notice.execution_ids.clone(),
                created_at: notice.created_at,
                agent_state: notice.agent_state.as_str().to_owned(),
                agent_error: notice.agent_error.clone(),
            },
        };
        let key = &notice.idempotency_key;
        let trace = http::Trace::default();
        match self.format {
            NotifyFormat::Json => {
                self.sender
                    .post(&self.url, key, sent_at, trace, &event)
                    .await
            }
            NotifyFormat::Slack => {
                let body = slack_body(&event.data);
                self.sender
                    .post(&self.url, key, sent_at, trace, &body)
                    .await
            }
        }
    }
}

/// Slack's three reserved characters, escaped as its message format asks,
/// so a tool's output cannot form a link or a mention.
fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A Slack-compatible body: the plain `text` (the notification and the
/// fallback) and one `mrkdwn` section with the session and the agent's
/// side of it.
fn slack_body(data: &OperatorNoticeData) -> Value {
    let agent = match &data.agent_error {
        Some(error) => format!("{} ({})", data.agent_state, slack_escape(error)),
        None => data.agent_state.clone(),
    };
    let text = format!(
        "nomos-continue: {} (session {})",
        slack_escape(&data.notice),
        data.session_id
    );
    let section = format!(
        "*nomos-continue notice*\n{}\n*Session* `{}`\n*Agent's copy* {agent}",
        slack_escape(&data.notice),
        data.session_id
    );
    json!({
        "text": text,
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": section}}],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slack_text_cannot_mention_or_link() {
        assert_eq!(slack_escape("<!channel> a&b"), "&lt;!channel&gt; a&amp;b");
    }
}
