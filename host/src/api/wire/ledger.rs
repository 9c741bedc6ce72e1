//! Executions and deliveries: what a runtime reports, and what the engine
//! sent (or will send) to the agent.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::store;

/// How a linked execution was settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Settlement {
    /// Its result was fed back to the agent.
    Continued,
    /// Not fed back, on purpose (no open window, the loop guard, the
    /// policy); a notice says so.
    Dropped,
    /// Its continuation gave up after the retry budget; a notice says so.
    Failed,
}

impl From<store::Settlement> for Settlement {
    fn from(s: store::Settlement) -> Self {
        match s {
            store::Settlement::Continued => Self::Continued,
            store::Settlement::Dropped => Self::Dropped,
            store::Settlement::Failed => Self::Failed,
        }
    }
}

/// `PUT /v1/executions/{id}`: an execution's state as the runtime sees it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecutionReportRequest {
    /// The raw status (`running`, `completed`, `failed`, ...); the policy
    /// decides which statuses are terminal. Not blank.
    #[schema(pattern = r"\S")]
    pub status: String,
    /// The output or error so far; `null` or absent is the empty result.
    #[serde(default, deserialize_with = "crate::policy::types::null_as_empty")]
    #[schema(value_type = Option<String>)]
    pub result: String,
}

/// An execution as last reported.
#[derive(Debug, Serialize, ToSchema)]
pub struct Execution {
    /// The execution.
    pub id: Uuid,
    /// The last applied status.
    pub status: String,
    /// The last applied result.
    pub result: String,
    /// Whether the status is terminal: then it is final, and later reports
    /// are recorded but not applied.
    pub terminal: bool,
    /// When the last report was applied.
    pub updated_at: DateTime<Utc>,
    /// When the first terminal report was applied, or `null`.
    pub finished_at: Option<DateTime<Utc>>,
}

impl From<store::Execution> for Execution {
    fn from(e: store::Execution) -> Self {
        Self {
            id: e.id,
            terminal: e.finished_at.is_some(),
            status: e.status,
            result: e.result,
            updated_at: e.updated_at,
            finished_at: e.finished_at,
        }
    }
}

/// What a status report did.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExecutionRecorded {
    /// The execution as stored after the report.
    pub execution: Execution,
    /// `false` when the execution had already reported a terminal status:
    /// the report was recorded as a late report, not applied.
    pub applied: bool,
    /// Why the report was not applied, or `null`.
    pub note: Option<String>,
}

/// `GET /v1/executions/{id}`: an execution and the session it is linked to.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExecutionView {
    /// The execution as last reported, or `null` if it was linked but has
    /// not reported yet.
    pub execution: Option<Execution>,
    /// The session it is linked to, or `null` if no tool result named it.
    pub session_id: Option<Uuid>,
}

/// What a delivery carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryKind {
    /// Re-invokes the agent with a note about finished executions.
    Continuation,
    /// Tells the operator that results were not fed back, or that a
    /// continuation failed.
    Notice,
}

/// Where a delivery is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryState {
    /// Waiting to be sent, or to be sent again after a failed attempt.
    Pending,
    /// The agent accepted it; final.
    Delivered,
    /// Gave up after the retry budget; final, and a notice says so.
    Failed,
    /// A continuation whose window closed before it could be sent; never
    /// sent, final, and a notice says so.
    Dropped,
}

/// One delivery to the agent (a continuation or a notice).
#[derive(Debug, Serialize, ToSchema)]
pub struct Delivery {
    /// The delivery.
    pub id: Uuid,
    /// The session re-invoked or notified.
    pub session_id: Uuid,
    /// Continuation or notice.
    pub kind: DeliveryKind,
    /// Sent with every attempt (`webhook-id`), so the agent can drop a
    /// redelivery it has accepted already.
    pub idempotency_key: String,
    /// The executions it is about.
    pub execution_ids: Vec<Uuid>,
    /// The note the agent is given (continuation) or the operator is shown
    /// (notice).
    pub note: String,
    /// The policy revision that decided it.
    pub policy_revision: String,
    /// Where it is in its life.
    pub state: DeliveryState,
    /// Failed attempts so far: 0 on a delivery sent at its first attempt.
    pub failed_attempts: i32,
    /// Not sent again before this instant (a pending delivery only).
    pub next_attempt_at: DateTime<Utc>,
    /// The last failed attempt's error, or `null`.
    pub last_error: Option<String>,
    /// When it was planned.
    pub created_at: DateTime<Utc>,
    /// When the agent accepted it, or `null`.
    pub delivered_at: Option<DateTime<Utc>>,
    /// Its last change.
    pub updated_at: DateTime<Utc>,
}

impl From<store::Delivery> for Delivery {
    fn from(d: store::Delivery) -> Self {
        Self {
            id: d.id,
            session_id: d.session_id,
            kind: match d.kind {
                store::DeliveryKind::Continuation => DeliveryKind::Continuation,
                store::DeliveryKind::Notice => DeliveryKind::Notice,
            },
            idempotency_key: d.idempotency_key,
            execution_ids: d.execution_ids,
            note: d.note,
            policy_revision: d.policy_revision,
            state: match d.state {
                store::DeliveryState::Pending => DeliveryState::Pending,
                store::DeliveryState::Delivered => DeliveryState::Delivered,
                store::DeliveryState::Failed => DeliveryState::Failed,
                store::DeliveryState::Dropped => DeliveryState::Dropped,
            },
            failed_attempts: d.attempts,
            next_attempt_at: d.next_attempt_at,
            last_error: d.last_error,
            created_at: d.created_at,
            delivered_at: d.delivered_at,
            updated_at: d.updated_at,
        }
    }
}

/// A delivery sent again.
#[derive(Debug, Serialize, ToSchema)]
pub struct RetryResponse {
    /// The delivery, pending again with the same idempotency key.
    pub delivery: Delivery,
}

/// A pending delivery the operator dropped.
#[derive(Debug, Serialize, ToSchema)]
pub struct DropResponse {
    /// The delivery, now `dropped`: it is never sent.
    pub delivery: Delivery,
}
