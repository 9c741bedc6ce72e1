//! `POST /v1/sessions/{id}/tasks`: a runtime says "this session's
//! protocol task; where do its pushes go". The intake (`intake::tasks`)
//! links it and mints its push configuration.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::Json;
use chrono::Duration;

use super::error::{parse_id, parse_json, ApiError};
use super::wire::{
    A2aVersion, PushAuthentication, PushConfiguration, TaskProtocolName, TaskRegistered,
    TaskRequest,
};
use super::AppState;
use crate::intake::TaskRegistration;

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
    match request.ttl_seconds {
        None => {}
        // Bounded before `Duration::seconds`, which panics on overflow.
        Some(s) if s >= 1 => task = task.with_ttl(Duration::seconds(s.min(MAX_TTL_SECONDS))),
        Some(s) => {
            return Err(ApiError::BadRequest(format!(
                "ttl_seconds must be at least 1, got {s}"
            )))
        }
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
