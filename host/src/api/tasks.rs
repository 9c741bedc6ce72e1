//! `POST /v1/sessions/{id}/tasks`: a runtime says "this session's
//! protocol task; where do its pushes go". The intake (`intake::tasks`)
//! links it and mints its push configuration. `POST
//! /v1/sessions/{id}/push-configs`: the same for every task the session's
//! agent will create, minted before the message is sent
//! (`intake::session_push`).

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::Json;
use chrono::Duration;

use super::error::{parse_id, parse_json, ApiError};
use super::wire::{
    A2aVersion, PushAuthentication, PushConfiguration, SessionPushConfiguration,
    SessionPushRequest, TaskProtocolName, TaskRegistered, TaskRequest,
};
use super::AppState;
use crate::intake::{TaskRegistration, MAX_SESSION_TASKS};

/// The longest `ttl_seconds` taken as given (7 days; the intake caps the
/// token's life there too).
const MAX_TTL_SECONDS: i64 = 7 * 24 * 3600;

/// Links the task to the session, keeps its id, and for an A2A task mints
/// its push configuration (minting again replaces the token). Linking is
/// idempotent; the token is new on every call.
#[utoipa::path(post, path = "/v1/sessions/{session_id}/tasks", tag = "tasks",
    params(("session_id" = Uuid, Path, description = "The chat session")),
    request_body = TaskRequest,
    responses((status = 200, description = "The task's execution and its push configuration",
            body = TaskRegistered),
        (status = 409, description = "The task is linked to another session",
            body = crate::api::wire::Problem, content_type = "application/problem+json")))]
pub(super) async fn register_task(
    State(state): State<AppState>,
    session_id: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<TaskRegistered>, ApiError> {
    let session_id = parse_id("session id", &session_id?.0)?;
    let request: TaskRequest = parse_json(&state.caps.small.take(body)?)?;
    let mut task = match request.protocol {
        TaskProtocolName::Mcp => TaskRegistration::mcp(request.task_id),
        TaskProtocolName::A2a => TaskRegistration::a2a(request.task_id),
    };
    if let Some(agent) = request.agent {
        let version = match agent.version {
            A2aVersion::V1 => "1.0",
            A2aVersion::V03 => "0.3",
        };
        task = task.with_agent(agent.url, version);
    }
    if let Some(ttl) = ttl(request.ttl_seconds)? {
        task = task.with_ttl(ttl);
    }
    let registered = state.intake.register_task(session_id, task).await?;
    Ok(Json(TaskRegistered {
        execution_id: registered.execution_id,
        linked: registered.linked,
        push: registered.push.map(|push| PushConfiguration {
            url: push.url,
            authentication: PushAuthentication {
                scheme: "Bearer".into(),
                credentials: push.token.clone(),
            },
            token: push.token,
            expires_at: push.expires_at,
        }),
    }))
}

/// Mints a push configuration for every task the session's agent creates:
/// the runtime hands it to its A2A client (in the message's
/// configuration), and the first push of a task links it to the session.
/// It links new tasks until the session's window ends (or for
/// `ttl_seconds`); a task it linked keeps reporting after. Minting again
/// adds another configuration and leaves this one valid.
#[utoipa::path(post, path = "/v1/sessions/{session_id}/push-configs", tag = "tasks",
    params(("session_id" = Uuid, Path, description = "The chat session")),
    request_body(content = SessionPushRequest, description = "Optional; `{}` or no body: \
        until the window ends"),
    responses((status = 200, description = "The session's push configuration",
            body = SessionPushConfiguration),
        (status = 409, description = "No `ttl_seconds` and the session has no open window",
            body = crate::api::wire::Problem, content_type = "application/problem+json")))]
pub(super) async fn mint_session_push(
    State(state): State<AppState>,
    session_id: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<SessionPushConfiguration>, ApiError> {
    let session_id = parse_id("session id", &session_id?.0)?;
    let body = state.caps.small.take(body)?;
    let request: SessionPushRequest = if body.iter().all(u8::is_ascii_whitespace) {
        SessionPushRequest::default()
    } else {
        parse_json(&body)?
    };
    let ttl = ttl(request.ttl_seconds)?;
    let minted = state.intake.mint_session_push(session_id, ttl).await?;
    Ok(Json(SessionPushConfiguration {
        url: minted.url,
        authentication: PushAuthentication {
            scheme: "Bearer".into(),
            credentials: minted.token.clone(),
        },
        token: minted.token,
        links_until: minted.links_until,
        max_tasks: MAX_SESSION_TASKS,
    }))
}

/// `ttl_seconds` as a duration, at most 7 days; below 1 is refused.
fn ttl(seconds: Option<i64>) -> Result<Option<Duration>, ApiError> {
    match seconds {
        None => Ok(None),
        // Bounded before `Duration::seconds`, which panics on overflow.
        Some(s) if s >= 1 => Ok(Some(Duration::seconds(s.min(MAX_TTL_SECONDS)))),
        Some(s) => Err(ApiError::BadRequest(format!(
            "ttl_seconds must be at least 1, got {s}"
        ))),
    }
}
