//! `POST /v1/a2a/push/{execution_id}` and `POST
//! /v1/a2a/sessions/{session_id}/push`: a remote A2A agent's push
//! notifications, 1.0 and 0.3 bodies, under a task's configuration or a
//! session's.
//!
//! No API token opens them: the push token minted for the task (or the
//! session) does (`Authorization: Bearer <token>`, or
//! `X-A2A-Notification-Token`, which both SDKs send), checked against its
//! stored hash. A task's token reports its one task, a session's the tasks
//! of its session: a body naming another is a 403, and nothing else
//! (approvals, reads, other sessions, the policy) is reachable with either.
//!
//! What a push adds is taken by the intake (`intake::a2a`): artifacts
//! gathered, a new state recorded through the one path every report
//! takes. The answer is quick: nothing here calls the agent.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap};
use axum::Json;
use serde_json::{json, Value};
use uuid::Uuid;

use super::error::ApiError;
use super::AppState;
use crate::intake::token_sha256;
use crate::protocols::a2a::{self, TaskUpdate};

/// The header both A2A SDKs put the push token in.
const TOKEN_HEADER: &str = "x-a2a-notification-token";

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
    let (execution_id, token) = door(&state, execution_id, &headers)?;
    let record = state.intake.push_record(execution_id, token).await?;
    let update = opened(&state, &headers, token, body)?;
    state.intake.take_update(record, update).await?;
    Ok(Json(json!({})))
}

/// Takes one push under a session's push configuration
/// (`POST /v1/sessions/{id}/push-configs`): the first push of a task
/// nobody linked links it to the session. 200 `{}` when taken or a
/// duplicate; 401 for a missing or wrong token (or another session's);
/// 403 when the task is another session's, or new after the configuration
/// stopped linking; 429 `session-task-limit` past the session's bound of
/// tasks, or `rate-limited` past the route's rate limits.
#[utoipa::path(post, path = "/v1/a2a/sessions/{session_id}/push", tag = "tasks",
    params(("session_id" = Uuid, Path, description = "The chat session the configuration is for"),
        ("X-A2A-Notification-Token" = Option<String>, Header,
            description = "The push token (instead of `Authorization: Bearer`)")),
    request_body(content = Object, description = "An A2A 1.0 `StreamResponse` \
        (`task`, `statusUpdate`, `artifactUpdate` or `message`) or an A2A 0.3 task or event",
        content_type = "application/a2a+json"),
    responses((status = 200, description = "Taken (or a duplicate): `{}`", body = Object),
        (status = 401, description = "The push token is missing or wrong, or another session's",
            body = crate::api::wire::Problem, content_type = "application/problem+json"),
        (status = 403, description = "The task is another session's, or new after the \
            configuration stopped linking new tasks",
            body = crate::api::wire::Problem, content_type = "application/problem+json"),
        (status = 429, description = "The session linked its most tasks through its push \
            configurations (`session-task-limit`, no `Retry-After`: register further tasks one \
            by one); or past `--push-rate` or `--push-rate-total` (`rate-limited`, with \
            `Retry-After`)",
            body = crate::api::wire::Problem, content_type = "application/problem+json")),
    security(("push_token" = [])))]
pub(super) async fn receive_session_push(
    State(state): State<AppState>,
    session_id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let (session_id, token) = door(&state, session_id, &headers)?;
    let config = state.intake.session_push_of(session_id, token).await?;
    let update = opened(&state, &headers, token, body)?;
    let digest = token_sha256(token);
    state
        .intake
        .take_session_update(&config, &digest, update)
        .await?;
    Ok(Json(json!({})))
}

/// What every push passes before its token is checked: the server's
/// rate limit, the path's id (an unparsable one is a wrong token: the
/// routes say nothing of what exists) and the token from the headers.
fn door<'h>(
    state: &AppState,
    id: Result<Path<String>, PathRejection>,
    headers: &'h HeaderMap,
) -> Result<(Uuid, &'h str), ApiError> {
    state.push_limiter.admit_any()?;
    let id = (id.ok())
        .and_then(|p| Uuid::parse_str(&p.0).ok())
        .ok_or(ApiError::Unauthorized)?;
    let token = push_token(headers).ok_or(ApiError::Unauthorized)?;
    Ok((id, token))
}

/// What a push passes once its token opened a door: the token's own rate
/// limit (counted only now, so a wrong token spends nothing of a real
/// one's allowance), the content type, the body read as an A2A update.
fn opened(
    state: &AppState,
    headers: &HeaderMap,
    token: &str,
    body: Result<Bytes, BytesRejection>,
) -> Result<TaskUpdate, ApiError> {
    state.push_limiter.admit_token(&token_sha256(token))?;
    json_content(headers)?;
    let body = state.caps.execution.take(body)?;
    a2a::read_push(&body).map_err(|e| ApiError::BadRequest(e.to_string()))
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
