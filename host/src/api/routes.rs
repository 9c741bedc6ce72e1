//! The handlers. Each parses its input into typed values (a bad one is a
//! 400), does one thing through the store or the policy, and answers JSON.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use super::error::{extraction_failed, parse_id, parse_json, storable, task_failed, ApiError};
use super::limits::{cap_text, max_result_bytes, MAX_STATUS_BYTES, MAX_TURN_BYTES};
use super::AppState;
use crate::classes::{ClassError, StatusClasses};
use crate::metrics::{render_backlog, render_shadow};
use crate::policy::types::null_as_empty;
use crate::policy::PolicyHandle;
use crate::store::{ReportOutcome, Role, Route, MAX_WINDOW};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ToolResult {
    text: String,
}

/// Links every execution the tool result names to the session, and wakes
/// the worker when something was newly linked: the execution may have
/// reported already, and then the link is what makes it ready.
pub(super) async fn link_tool_result(
    State(state): State<AppState>,
    session_id: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let session_id = parse_id("session id", &session_id?.0)?;
    let ToolResult { text } = parse_json(&state.caps.tool_result.take(body)?)?;
    cap_text("text", &text, state.policy.limits().max_text_bytes)?;
    let evaluated = PolicyHandle::from(&state.policy)
        .extract_ids(text)
        .await
        .map_err(task_failed)?;
    let ids = evaluated.value.map_err(extraction_failed)?;
    let ids: Vec<Uuid> = ids
        .iter()
        .map(|id| parse_id("execution id", id))
        .collect::<Result<_, _>>()?;
    let outcome = state
        .store
        .link(session_id, &ids, state.clock.now())
        .await?;
    if !outcome.linked.is_empty() {
        state.wake.notify_one();
    }
    Ok(Json(json!({
        "linked": outcome.linked,
        "already_linked": outcome.already_linked,
        "linked_elsewhere": outcome.already_linked_elsewhere.iter()
            .map(|(execution, session)| json!({"execution_id": execution, "session_id": session}))
            .collect::<Vec<_>>(),
        "policy_revision": evaluated.revision.0,
    })))
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum ApprovalDecision {
    Approve,
    Deny,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Approval {
    decision: ApprovalDecision,
    #[serde(default)]
    route: Option<String>,
    /// Minutes the window stays open, at most 30 (the default).
    #[serde(default)]
    minutes: Option<i64>,
}

/// Approve by any route opens or extends the window; deny closes it.
pub(super) async fn decide_approval(
    State(state): State<AppState>,
    session_id: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let session_id = parse_id("session id", &session_id?.0)?;
    let approval: Approval = parse_json(&state.caps.small.take(body)?)?;
    let now = state.clock.now();
    match approval.decision {
        ApprovalDecision::Approve => {
            let route: Route = approval.route.as_deref().unwrap_or("api").parse()?;
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
            Ok(Json(json!({ "window": window })))
        }
        ApprovalDecision::Deny => {
            state.store.deny(session_id, now).await?;
            Ok(Json(json!({ "window": null })))
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ExecutionState {
    status: String,
    /// `null` (an execution with no output yet) is the empty result, as in
    /// the policy's decision input.
    #[serde(default, deserialize_with = "null_as_empty")]
    result: String,
}

/// Records an execution's state and wakes the worker.
pub(super) async fn record_execution(
    State(state): State<AppState>,
    execution_id: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let execution_id = parse_id("execution id", &execution_id?.0)?;
    let ExecutionState { status, result } = parse_json(&state.caps.execution.take(body)?)?;
    if status.trim().is_empty() {
        return Err(ApiError::BadRequest("status must not be empty".into()));
    }
    cap_text("status", &status, MAX_STATUS_BYTES)?;
    cap_text("result", &result, max_result_bytes(state.policy.limits()))?;
    storable("status", &status)?;
    storable("result", &result)?;
    let classes = StatusClasses::new(
        state.store.clone(),
        PolicyHandle::from(&state.policy),
        state.clock.clone(),
    );
    let finished = match classes.class(&status).await {
        Ok(class) => class.is_terminal(),
        Err(ClassError::Store(e)) => return Err(e.into()),
        Err(ClassError::PolicyTask(e)) => return Err(task_failed(e)),
    };
    let ReportOutcome { execution, applied } = state
        .store
        .upsert_execution_status(execution_id, &status, &result, state.clock.now(), finished)
        .await?;
    // "terminal" is the stored state, which a late report does not change.
    let mut answer = json!({
        "execution": execution,
        "terminal": execution.finished_at.is_some(),
        "applied": applied,
    });
    if applied {
        state.wake.notify_one();
    } else {
        answer["note"] = json!(format!(
            "terminal is final: execution {execution_id} already reported '{}'; \
             this report was recorded, not applied",
            execution.status
        ));
    }
    Ok(Json(answer))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TurnBody {
    role: String,
    content: String,
}

/// Records a turn of the session's chat as it happened (the operator's
/// message, the agent's reply, the system prompt), so the built-in
/// `chatWith` has a history to replay. A runtime with its own agent (the
/// webhook) need not call this.
pub(super) async fn record_turn(
    State(state): State<AppState>,
    session_id: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let session_id = parse_id("session id", &session_id?.0)?;
    let TurnBody { role, content } = parse_json(&state.caps.turn.take(body)?)?;
    let role: Role = role.parse()?;
    if content.trim().is_empty() {
        return Err(ApiError::BadRequest("content must not be empty".into()));
    }
    cap_text("content", &content, MAX_TURN_BYTES)?;
    storable("content", &content)?;
    let turn = state
        .store
        .append_turn(session_id, role, &content, state.clock.now())
        .await?;
    Ok(Json(json!({ "turn": turn })))
}

pub(super) async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// The process's counters, and the database-wide backlog gauges. A
/// database that cannot answer leaves the gauges out (logged) rather than
/// failing the scrape: the counters are still worth having.
pub(super) async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    let mut text = state
        .metrics
        .render(&state.policy.stats(), &state.policy.active_revision().0);
    text.push_str(&render_shadow(&state.policy.shadow().stats()));
    match state.store.backlog().await {
        Ok(backlog) => {
            let age = backlog.oldest_finished_at.map(|at| state.clock.now() - at);
            text.push_str(&render_backlog(backlog.finished, age));
        }
        Err(e) => tracing::warn!("metrics: backlog gauges left out: {e}"),
    }
    ([(CONTENT_TYPE, "text/plain; version=0.0.4")], text)
}

pub(super) async fn not_found() -> ApiError {
    ApiError::NotFound("no such route".into())
}

pub(super) async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
