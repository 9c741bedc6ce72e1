//! What a runtime writes to a session: a tool result (whose execution ids
//! and protocol tasks are linked), an approval (the assent window) and a chat turn.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::Json;
use uuid::Uuid;

use crate::api::error::{extraction_failed, parse_id, parse_json, storable, task_failed, ApiError};
use crate::api::idempotency;
use crate::api::limits::{cap_text, MAX_TURN_BYTES};
use crate::api::wire::{
    ApprovalDecision, ApprovalRequest, ApprovalResponse, LinkResponse, LinkedElsewhere, LinkedTask,
    ToolResultRequest, TurnRequest, TurnResponse, Window,
};
use crate::api::AppState;
use crate::policy::types::{LinkRef, TaskProtocol};
use crate::policy::PolicyHandle;
use crate::store::{task_execution_id, LinkTask, Route, TaskSource, MAX_WINDOW};
use crate::telemetry::LinkSpan;

/// Links every execution and protocol task the tool result names to the
/// session (a task under its name-based execution id, with the task kept
/// beside it), and wakes
/// the worker when something was newly linked: the execution may have
/// reported already, and then the link is what makes it ready. Idempotent
/// by nature: linking the same text again links nothing new.
#[utoipa::path(post, path = "/v1/sessions/{session_id}/tool-results", tag = "sessions",
    params(("session_id" = Uuid, Path, description = "The chat session"),
        crate::api::request::TraceHeaders),
    request_body = ToolResultRequest,
    responses((status = 200, description = "What was linked", body = LinkResponse)))]
pub(in crate::api) async fn link_tool_result(
    State(state): State<AppState>,
    session_id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<LinkResponse>, ApiError> {
    let session_id = parse_id("session id", &session_id?.0)?;
    let span = LinkSpan::start(&headers, session_id);
    let ToolResultRequest { text } = parse_json(&state.caps.tool_result.take(body)?)?;
    cap_text("text", &text, state.policy.limits().max_text_bytes)?;
    let evaluated = PolicyHandle::from(&state.policy)
        .extract_links(text)
        .await
        .map_err(task_failed)?;
    let links = evaluated.value.map_err(extraction_failed)?;
    let (ids, tasks) = link_ids(&links)?;
    state.store.keep_tasks(&tasks, state.clock.now()).await?;
    let outcome = state
        .store
        .link(session_id, &ids, state.clock.now())
        .await?;
    span.linked(&state.store, &outcome, state.clock.now()).await;
    if !outcome.linked.is_empty() {
        state.wake.notify_one();
    }
    Ok(Json(LinkResponse {
        linked: outcome.linked,
        already_linked: outcome.already_linked,
        linked_elsewhere: outcome
            .already_linked_elsewhere
            .into_iter()
            .map(|(execution_id, session_id)| LinkedElsewhere {
                execution_id,
                session_id,
            })
            .collect(),
        tasks: tasks
            .into_iter()
            .map(|(execution_id, task)| LinkedTask {
                execution_id,
                protocol: task.source.as_str().to_owned(),
                task_id: task.task_id,
            })
            .collect(),
        policy_revision: evaluated.revision.0,
    }))
}

/// The tasks a tool result named, each with the execution id it is linked
/// under.
type NamedTasks = Vec<(Uuid, LinkTask)>;

/// The execution ids to link, in the policy's order (duplicates out), and
/// the tasks among them: an execution as named, a task under
/// [`task_execution_id`].
fn link_ids(links: &[LinkRef]) -> Result<(Vec<Uuid>, NamedTasks), ApiError> {
    let mut ids = Vec::with_capacity(links.len());
    let mut tasks = Vec::new();
    for link in links {
        let id = match link {
            LinkRef::Execution(id) => parse_id("execution id", id)?,
            LinkRef::Task(task) => {
                let source = match task.protocol {
                    TaskProtocol::Mcp => TaskSource::Mcp,
                    TaskProtocol::A2a => TaskSource::A2a,
                };
                let id = task_execution_id(source, &task.id);
                if !tasks.iter().any(|(known, _)| *known == id) {
                    let task_id = task.id.clone();
                    tasks.push((id, LinkTask { source, task_id }));
                }
                id
            }
        };
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok((ids, tasks))
}

/// Approve by any route opens or extends the window; deny closes it.
/// Idempotent by nature: a repeated approval extends the window from now
/// (never beyond 30 minutes), a repeated denial closes a closed window.
#[utoipa::path(post, path = "/v1/sessions/{session_id}/approvals", tag = "sessions",
    params(("session_id" = Uuid, Path, description = "The chat session")),
    request_body = ApprovalRequest,
    responses((status = 200, description = "The window now", body = ApprovalResponse)))]
pub(in crate::api) async fn decide_approval(
    State(state): State<AppState>,
    session_id: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<ApprovalResponse>, ApiError> {
    let session_id = parse_id("session id", &session_id?.0)?;
    let approval: ApprovalRequest = parse_json(&state.caps.small.take(body)?)?;
    let now = state.clock.now();
    match approval.decision {
        ApprovalDecision::Approve => {
            let route: Route = approval.route.map(Into::into).unwrap_or(Route::Api);
            // Bounded here, before `Duration::minutes`, which panics on
            // overflow (`"minutes": 9223372036854775807`).
            let duration = match approval.minutes {
                None => MAX_WINDOW,
                Some(m) if (1..=MAX_WINDOW.num_minutes()).contains(&m) => {
                    chrono::Duration::minutes(m)
                }
                Some(m) => {
                    return Err(ApiError::BadRequest(format!(
                        "minutes must be between 1 and {}, got {m}",
                        MAX_WINDOW.num_minutes()
                    )))
                }
            };
            let window = state
                .store
                .approve(session_id, route, now, duration)
                .await?;
            Ok(Json(ApprovalResponse {
                window: Some(Window::at(window, now)),
            }))
        }
        ApprovalDecision::Deny => {
            state.store.deny(session_id, now).await?;
            Ok(Json(ApprovalResponse { window: None }))
        }
    }
}

/// Records a turn of the session's chat as it happened (the operator's
/// message, the agent's reply, the system prompt), so the built-in
/// `chatWith` has a history to replay. A runtime with its own agent (the
/// webhook) need not call this. Not idempotent by nature (the same words
/// may be said twice), so an `Idempotency-Key` makes a retry safe.
#[utoipa::path(post, path = "/v1/sessions/{session_id}/turns", tag = "sessions",
    params(("session_id" = Uuid, Path, description = "The chat session"), idempotency::KeyHeader),
    request_body = TurnRequest,
    responses((status = 200, description = "The turn as recorded", body = TurnResponse),
        (status = 409, description = "A request with this Idempotency-Key is still being handled",
            body = crate::api::wire::Problem, content_type = "application/problem+json"),
        (status = 422, description = "The Idempotency-Key was used with another request",
            body = crate::api::wire::Problem, content_type = "application/problem+json")))]
pub(in crate::api) async fn record_turn(
    State(state): State<AppState>,
    session_id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let session_id = parse_id("session id", &session_id?.0)?;
    let body = state.caps.turn.take(body)?;
    let TurnRequest { role, content } = parse_json(&body)?;
    if content.trim().is_empty() {
        return Err(ApiError::BadRequest("content must not be empty".into()));
    }
    cap_text("content", &content, MAX_TURN_BYTES)?;
    storable("content", &content)?;
    let request = idempotency::Request::new("turns", &session_id.to_string(), &body, &headers)?;
    idempotency::once(&state, request, || async {
        let turn = state
            .store
            .append_turn(session_id, role.into(), &content, state.clock.now())
            .await?;
        Ok(TurnResponse { turn: turn.into() })
    })
    .await
}
