//! The webhooks' bodies, as the receiver reads them (`docs/webhooks.md`
//! describes them for integrators): the agent runtime's two, and the
//! operator channel's notice.
//!
//! Why types of their own rather than [`Continuation`] and [`Notice`]
//! serialised as they are: those are what an embedding runtime gets through
//! the [`super::Agent`] trait and may grow for it; these are a versioned
//! wire contract, which changes only by a new `type`. Why `Deserialize` and
//! `ToSchema` too: the OpenAPI document's `webhooks` section is generated
//! from these same types, and a receiver written in Rust (the demo's, the
//! tests') decodes exactly what is sent.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{Continuation, ExecutionReport, Notice};

/// The `type` of a [`ContinuationEvent`]. One value per version of the
/// body, so a receiver can refuse a version it does not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum ContinuationEventType {
    /// The first version: `data` is a [`ContinuationData`].
    #[serde(rename = "continuation.v1")]
    V1,
}

/// The `type` of a [`NoticeEvent`], versioned like
/// [`ContinuationEventType`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum NoticeEventType {
    /// The first version: `data` is a [`NoticeData`].
    #[serde(rename = "notice.v1")]
    V1,
}

/// Re-invoke the agent of `data.session_id` with `data.note`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ContinuationEvent {
    /// Always `continuation.v1` for this shape.
    #[serde(rename = "type")]
    pub event_type: ContinuationEventType,
    /// When this attempt was sent, in whole seconds: the instant the
    /// `webhook-timestamp` header carries. A retry has a later one.
    pub timestamp: DateTime<Utc>,
    /// What to re-invoke the agent with.
    pub data: ContinuationData,
}

/// The fields of a continuation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ContinuationData {
    /// The chat session whose agent is re-invoked.
    pub session_id: Uuid,
    /// The same on every redelivery of this continuation, and equal to the
    /// `webhook-id` and `Idempotency-Key` headers: accept a key once.
    pub idempotency_key: String,
    /// The finished executions folded into this continuation, at least one.
    pub executions: Vec<ExecutionReport>,
    /// The policy's note for the agent: inject it after the session's
    /// history, as context, not as a turn the operator typed.
    pub note: String,
    /// The policy's SOUL text, for the agent's system prompt.
    pub soul: String,
}

/// Show `data.notice` to the operator of `data.session_id`; do not run the
/// agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct NoticeEvent {
    /// Always `notice.v1` for this shape.
    #[serde(rename = "type")]
    pub event_type: NoticeEventType,
    /// When this attempt was sent, in whole seconds: the instant the
    /// `webhook-timestamp` header carries. A retry has a later one.
    pub timestamp: DateTime<Utc>,
    /// What to show.
    pub data: NoticeData,
}

/// The fields of a notice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct NoticeData {
    /// The chat session the notice is about.
    pub session_id: Uuid,
    /// Stable across redeliveries, like a continuation's, and equal to the
    /// `webhook-id` and `Idempotency-Key` headers.
    pub idempotency_key: String,
    /// What the operator is told, in one paragraph (for example that an
    /// execution finished after the assent window closed).
    pub notice: String,
}

/// The `type` of an [`OperatorNoticeEvent`], versioned like
/// [`ContinuationEventType`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum OperatorNoticeEventType {
    /// The first version: `data` is an [`OperatorNoticeData`].
    #[serde(rename = "operator_notice.v1")]
    V1,
}

/// A notice for a person, POSTed to the operator's channel
/// (`--notify-webhook`, format `json`), apart from the agent: it says what
/// happened and whether the agent's copy of the same notice got through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct OperatorNoticeEvent {
    /// Always `operator_notice.v1` for this shape.
    #[serde(rename = "type")]
    pub event_type: OperatorNoticeEventType,
    /// When this attempt was sent, in whole seconds (the
    /// `webhook-timestamp` header's instant).
    pub timestamp: DateTime<Utc>,
    /// The notice.
    pub data: OperatorNoticeData,
}

/// The fields of an operator notice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct OperatorNoticeData {
    /// The notice's ledger id (`GET /v1/deliveries/{id}`).
    pub notice_id: Uuid,
    /// The chat session the notice is about.
    pub session_id: Uuid,
    /// The notice's key, the same on the agent's channel; equal to the
    /// `webhook-id` header.
    pub idempotency_key: String,
    /// What the operator is told, in one paragraph.
    pub notice: String,
    /// The executions concerned.
    pub execution_ids: Vec<Uuid>,
    /// When the notice was written.
    pub created_at: DateTime<Utc>,
    /// The agent's delivery of the same notice when this was sent:
    /// `pending`, `delivered`, `failed` or `dropped`.
    pub agent_state: String,
    /// The agent's last error for it, if any (for example that its
    /// endpoint answered 500).
    pub agent_error: Option<String>,
}

/// Either body, for a receiver that takes both on one URL: decoding picks
/// the shape by its `type`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum WebhookEvent {
    /// A `continuation.v1`.
    Continuation(ContinuationEvent),
    /// A `notice.v1`.
    Notice(NoticeEvent),
}

impl WebhookEvent {
    /// The idempotency key of either shape.
    pub fn idempotency_key(&self) -> &str {
        match self {
            Self::Continuation(event) => &event.data.idempotency_key,
            Self::Notice(event) => &event.data.idempotency_key,
        }
    }

    /// The session of either shape.
    #[cfg(feature = "test-support")]
    pub fn session_id(&self) -> Uuid {
        match self {
            Self::Continuation(event) => event.data.session_id,
            Self::Notice(event) => event.data.session_id,
        }
    }
}

impl ContinuationEvent {
    /// The body for `continuation`, sent at `timestamp`.
    pub fn new(continuation: &Continuation, timestamp: DateTime<Utc>) -> Self {
        Self {
            event_type: ContinuationEventType::V1,
            timestamp,
            data: ContinuationData {
                session_id: continuation.session_id,
                idempotency_key: continuation.idempotency_key.clone(),
                executions: continuation.executions.clone(),
                note: continuation.note.clone(),
                soul: continuation.soul.clone(),
            },
        }
    }
}

impl NoticeEvent {
    /// The body for `notice`, sent at `timestamp`.
    pub fn new(notice: &Notice, timestamp: DateTime<Utc>) -> Self {
        Self {
            event_type: NoticeEventType::V1,
            timestamp,
            data: NoticeData {
                session_id: notice.session_id,
                idempotency_key: notice.idempotency_key.clone(),
                notice: notice.message.clone(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).expect("in range")
    }

    #[test]
    fn a_notice_is_an_envelope_with_its_type_and_the_data() {
        let notice = Notice {
            session_id: Uuid::from_u128(7),
            idempotency_key: "notice-1".into(),
            message: "too late".into(),
            ..Notice::default()
        };
        let body = serde_json::to_value(NoticeEvent::new(&notice, at())).expect("serialises");
        assert_eq!(
            body,
            serde_json::json!({
                "type": "notice.v1",
                "timestamp": "2027-01-15T08:00:00Z",
                "data": {
                    "session_id": Uuid::from_u128(7),
                    "idempotency_key": "notice-1",
                    "notice": "too late",
                },
            })
        );
    }

    #[test]
    fn either_shape_decodes_by_its_type_and_an_unknown_version_does_not() {
        let continuation = Continuation {
            session_id: Uuid::from_u128(1),
            idempotency_key: "cont-1".into(),
            executions: Vec::new(),
            note: "n".into(),
            soul: "s".into(),
            ..Continuation::default()
        };
        let sent = ContinuationEvent::new(&continuation, at());
        let text = serde_json::to_string(&sent).expect("serialises");
        let decoded: Result<WebhookEvent, _> = serde_json::from_str(&text);
        assert_eq!(decoded.ok(), Some(WebhookEvent::Continuation(sent)));
        let later = text.replace("continuation.v1", "continuation.v2");
        assert!(serde_json::from_str::<WebhookEvent>(&later).is_err());
    }
}
