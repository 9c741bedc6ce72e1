//! `POST /v1/mcp/tasks`: what the runtime's MCP client got about a task
//! (MCP has no webhook: updates reach only the client, which forwards
//! them here).
//!
//! Bodies of both versions, bare or in their JSON-RPC envelope: `tasks/get`
//! answers (2026: with the result or error inline), `tasks/result` answers,
//! status notifications, and a task-creating `tools/call` answer; the
//! intake (`intake::mcp`) decides what each records.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;

use super::error::ApiError;
use super::wire::{Execution, McpTaskRecorded};
use super::AppState;
use crate::telemetry::TraceContext;

/// `?task_id=`: the task a body is about, when the body does not say (a
/// `tasks/result` answer without `_meta`).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct McpTaskQuery {
    /// The task's id; must match the one the body names, if it names one.
    task_id: Option<String>,
}

/// Records an MCP task update. Answers like `PUT /v1/executions/{id}`,
/// plus the execution id the task stands for. Idempotent by nature: the
/// same update again changes nothing.
#[utoipa::path(post, path = "/v1/mcp/tasks", tag = "tasks",
    params(McpTaskQuery, super::request::TraceHeaders),
    request_body(content = Object, description = "An MCP task object, `CreateTaskResult`, \
        `tasks/result` answer (a `CallToolResult`) or task status notification, bare or in \
        its JSON-RPC envelope"),
    responses((status = 200, description = "What the update did", body = McpTaskRecorded)))]
pub(super) async fn record_mcp_task(
    State(state): State<AppState>,
    query: Result<Query<McpTaskQuery>, QueryRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<McpTaskRecorded>, ApiError> {
    let query = query.map_err(|e| ApiError::BadRequest(e.body_text()))?.0;
    let body = state.caps.execution.take(body)?;
    let trace = TraceContext::from_headers(&headers);
    let recorded = (state.intake)
        .record_mcp(&body, query.task_id.as_deref(), trace.as_ref())
        .await?;
    Ok(Json(McpTaskRecorded {
        execution_id: recorded.execution_id,
        execution: recorded.execution.map(Execution::from),
        applied: recorded.applied,
        note: recorded.note,
    }))
}
