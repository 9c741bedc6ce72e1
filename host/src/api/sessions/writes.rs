//! What a runtime writes to a session: a tool result (whose execution ids
//! are linked), an approval (the assent window) and a chat turn.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::api::error::{extraction_failed, parse_id, parse_json, storable, task_failed, ApiError};
use crate::api::limits::{cap_text, MAX_TURN_BYTES};
use crate::api::AppState;
use crate::policy::PolicyHandle;
use crate::store::{Role, Route, MAX_WINDOW};
use crate::telemetry::LinkSpan;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(in crate::api) struct ToolResult {
    text: String,
}

/// Links every execution the tool result names to the session, and wakes
/// the worker when something was newly linked: the execution may have
/// reported already, and then the link is what makes it ready.
pub(in crate::api) async fn link_tool_result(
    State(state): State<AppState>,
    session_id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let session_id = parse_id("session id", &session_id?.0)?;
    let span = LinkSpan::start(&headers, session_id);
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
    span.linked(&state.store, &outcome, state.clock.now()).await;
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
pub(in crate::api) struct Approval {
    decision: ApprovalDecision,
    #[serde(default)]
    route: Option<String>,
    /// Minutes the window stays open, at most 30 (the default).
    #[serde(default)]
    minutes: Option<i64>,
}

/// Approve by any route opens or extends the window; deny closes it.
pub(in crate::api) async fn decide_approval(
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
pub(in crate::api) struct TurnBody {
    role: String,
    content: String,
}

/// Records a turn of the session's chat as it happened (the operator's
/// message, the agent's reply, the system prompt), so the built-in
/// `chatWith` has a history to replay. A runtime with its own agent (the
/// webhook) need not call this.
pub(in crate::api) async fn record_turn(
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
