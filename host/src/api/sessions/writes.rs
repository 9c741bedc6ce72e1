//! What a runtime writes to a session: a tool result (whose execution ids
//! and protocol tasks are linked), an approval (the assent window) and a chat turn.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::Json;

use crate::api::error::{parse_id, parse_json, ApiError};
use crate::api::idempotency;
use crate::api::wire::{
    ApprovalDecision, ApprovalRequest, ApprovalResponse, ApprovalRoute, LinkResponse,
    LinkedElsewhere, LinkedTask, ToolResultRequest, TurnRequest, TurnResponse, Window,
};
use crate::api::AppState;
use crate::intake::Linked;
use crate::store::Route;
use crate::telemetry::TraceContext;

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
    let ToolResultRequest { text } = parse_json(&state.caps.tool_result.take(body)?)?;
    let trace = TraceContext::from_headers(&headers);
    let Linked {
        outcome,
        tasks,
        revision,
        ..
    } = (state.intake)
        .link_tool_result(session_id, text, trace.as_ref())
        .await?;
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
        policy_revision: revision.0,
    }))
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
    match approval.decision {
        ApprovalDecision::Approve => {
            let route = approval.route.map_or(Route::Api, ApprovalRoute::stored);
            let window = (state.intake)
                .approve(session_id, route, approval.minutes)
                .await?;
            Ok(Json(ApprovalResponse {
                window: Some(Window::at(window, state.clock.now())),
            }))
        }
        ApprovalDecision::Deny => {
            state.intake.deny(session_id).await?;
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
    let request = idempotency::Request::new("turns", &session_id.to_string(), &body, &headers)?;
    idempotency::once(&state, request, || async {
        let turn = (state.intake)
            .record_turn(session_id, role.stored(), &content)
            .await?;
        Ok(TurnResponse { turn: turn.into() })
    })
    .await
}
