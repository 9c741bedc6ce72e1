//! `POST /v1/a2a/push/{execution_id}`: a remote A2A agent's push
//! notifications, 1.0 and 0.3 bodies.
//!
//! No API token opens it: the push token minted for the task does
//! (`Authorization: Bearer <token>`, or `X-A2A-Notification-Token`, which
//! both SDKs send), checked against its stored hash and expiry. A token
//! reports its one task: a body naming another is a 403, and nothing else
//! (approvals, other executions, the policy) is reachable with it.
//!
//! Delivery is at least once and unordered across retries, so each push
//! is taken for what it adds: artifacts are gathered (compare-and-set, so
//! concurrent pushes do not lose one), and a state the execution does not
//! hold already is recorded through the one path every report takes
//! ([`record_status`]): a report after a terminal one is kept, not applied.
//! The answer is quick: nothing here calls the agent.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap};
use axum::Json;
use serde_json::{json, Value};
use uuid::Uuid;

use super::error::ApiError;
use super::executions::record_status;
use super::limits::max_result_bytes;
use super::tasks::token_sha256;
use super::AppState;
use crate::protocols::a2a::{self, Artifact, TaskUpdate};
use crate::protocols::{result, ProtocolError};
use crate::store::TaskRecord;

/// The header both A2A SDKs put the push token in.
const TOKEN_HEADER: &str = "x-a2a-notification-token";
/// Tries of the artifacts' compare-and-set before giving up with a 503.
const GATHER_TRIES: usize = 5;

/// Takes one push. 200 `{}` when it was taken or changed nothing (a
/// duplicate); 401 for a missing, wrong or expired token, and the same
/// for an unknown execution; 403 when the body names another task; 400
/// for a body of no A2A shape; 429 past the route's rate limits (see
/// `push_limit.rs`).
#[utoipa::path(post, path = "/v1/a2a/push/{execution_id}", tag = "tasks",
    params(("execution_id" = Uuid, Path, description = "The execution the task stands for"),
        ("X-A2A-Notification-Token" = Option<String>, Header,
            description = "The push token (instead of `Authorization: Bearer`)")),
    request_body(content = Object, description = "An A2A 1.0 `StreamResponse` \
        (`task`, `statusUpdate`, `artifactUpdate` or `message`) or an A2A 0.3 task or event",
        content_type = "application/a2a+json"),
    responses((status = 200, description = "Taken (or a duplicate): `{}`", body = Object),
        (status = 401, description = "The push token is missing, wrong or expired (the same \
            answer for an unknown execution)",
            body = crate::api::wire::Problem, content_type = "application/problem+json"),
        (status = 403, description = "The body names another task than the token's",
            body = crate::api::wire::Problem, content_type = "application/problem+json"),
        (status = 429, description = "Past `--push-rate` for this token or \
            `--push-rate-total` for the server (`rate-limited`); retry after `Retry-After`",
            headers(("Retry-After" = u64, description = "Seconds until a push is taken again")),
            body = crate::api::wire::Problem, content_type = "application/problem+json")),
    security(("push_token" = [])))]
pub(super) async fn receive_push(
    State(state): State<AppState>,
    execution_id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    // An unparsable id is answered as a wrong token: this route says
    // nothing of which executions exist.
    state.push_limiter.admit_any()?;
    let execution_id = execution_id
        .ok()
        .and_then(|p| Uuid::parse_str(&p.0).ok())
        .ok_or(ApiError::Unauthorized)?;
    let token = push_token(&headers).ok_or(ApiError::Unauthorized)?;
    let digest = token_sha256(token);
    let record = state
        .store
        .push_task(execution_id, &digest, state.clock.now())
        .await?
        .ok_or(ApiError::Unauthorized)?;
    state.push_limiter.admit_token(&digest)?;
    json_content(&headers)?;
    let body = state.caps.execution.take(body)?;
    let update = a2a::read_push(&body).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    if update.task_id != record.task_id {
        return Err(ApiError::Forbidden(
            ProtocolError::OtherTask {
                expected: record.task_id,
                named: update.task_id,
            }
            .to_string(),
        ));
    }
    apply(&state, record, update).await?;
    Ok(Json(json!({})))
}

/// The push token: `Authorization: Bearer <token>` or the A2A header.
fn push_token(headers: &HeaderMap) -> Option<&str> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let a2a = headers.get(TOKEN_HEADER).and_then(|v| v.to_str().ok());
    bearer.or(a2a).map(str::trim).filter(|t| !t.is_empty())
}

/// `application/json` or `application/a2a+json` (or none said).
fn json_content(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(kind) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let kind = kind.to_str().unwrap_or_default();
    let essence = kind.split(';').next().unwrap_or_default().trim();
    if essence.eq_ignore_ascii_case("application/json")
        || essence.eq_ignore_ascii_case("application/a2a+json")
    {
        Ok(())
    } else {
        Err(ApiError::BadRequest(format!(
            "content type {kind:?} is neither application/a2a+json nor application/json"
        )))
    }
}

/// Gathers the push's artifacts and records its state if the execution
/// does not hold it already.
pub(super) async fn apply(
    state: &AppState,
    record: TaskRecord,
    update: TaskUpdate,
) -> Result<(), ApiError> {
    let id = record.execution_id;
    let now = state.clock.now();
    let gathered = gather(state, record, &update).await?;
    let current = state.store.executions(&[id]).await?.pop();
    let status = match update.state.as_deref() {
        // A duplicate (or a repeat of a state already held) changes
        // nothing the execution holds; it is still word from the agent.
        Some(status) if current.is_some_and(|e| e.status == status) => None,
        status => status,
    };
    let Some(status) = status else {
        state.store.note_protocol(id, None, now).await?;
        return Ok(());
    };
    let max = max_result_bytes(state.policy.limits());
    let text = result::a2a_result(&update.message_text, &gathered, max);
    record_status(state, id, status, &text, &HeaderMap::new()).await?;
    state.store.note_protocol(id, Some(status), now).await?;
    Ok(())
}

/// The task's artifacts with the update's gathered in, kept by a
/// compare-and-set: a push that lost the race to another reads again.
async fn gather(
    state: &AppState,
    mut record: TaskRecord,
    update: &TaskUpdate,
) -> Result<Vec<Artifact>, ApiError> {
    let id = record.execution_id;
    for _ in 0..GATHER_TRIES {
        let kept = kept_artifacts(&record);
        let gathered = result::gather(kept.clone(), &update.artifacts, update.whole_task);
        if gathered == kept {
            return Ok(gathered);
        }
        let text = serde_json::to_string(&gathered)
            .map_err(|e| ApiError::Internal(format!("artifacts as JSON: {e}")))?;
        let seen = record.artifacts.as_deref();
        if state
            .store
            .gather_artifacts(id, seen, &text, state.clock.now())
            .await?
        {
            return Ok(gathered);
        }
        record = state
            .store
            .task_record(id)
            .await?
            .ok_or_else(|| ApiError::Internal(format!("the task of {id} vanished")))?;
    }
    Err(ApiError::Unavailable(format!(
        "the artifacts of {id} changed under {GATHER_TRIES} pushes at once"
    )))
}

/// The artifacts kept for the task; unreadable JSON (which only this
/// module writes) counts as none.
fn kept_artifacts(record: &TaskRecord) -> Vec<Artifact> {
    record
        .artifacts
        .as_deref()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default()
}
