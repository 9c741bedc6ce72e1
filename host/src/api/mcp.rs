//! `POST /v1/mcp/tasks`: what the runtime's MCP client got about a task
//! (MCP has no webhook: updates reach only the client, which forwards
//! them here).
//!
//! Bodies of both versions, bare or in their JSON-RPC envelope
//! ([`crate::protocols::mcp`]): `tasks/get` answers (2026: with the result
//! or error inline), `tasks/result` answers, status notifications, and a
//! task-creating `tools/call` answer. A `completed` or `failed` status
//! without its payload waits for it, so that the note carries the tool's
//! result; a tool result with `isError: true` is recorded `failed`.
//! Everything recorded goes through the one path every report takes
//! ([`record_status`]).

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;

use super::error::ApiError;
use super::executions::record_status;
use super::limits::max_result_bytes;
use super::wire::{Execution, McpTaskRecorded};
use super::AppState;
use crate::protocols::mcp::{self, McpUpdate};
use crate::protocols::result::capped;
use crate::store::{task_execution_id, LinkTask, TaskSource};

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
    let update = mcp::read(&body, query.task_id.as_deref())
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    if update.task_id.len() > 1024 {
        return Err(ApiError::BadRequest("task id over 1024 bytes".into()));
    }
    let now = state.clock.now();
    let execution_id = task_execution_id(TaskSource::Mcp, &update.task_id);
    let task = LinkTask {
        source: TaskSource::Mcp,
        task_id: update.task_id.clone(),
    };
    state.store.keep_tasks(&[(execution_id, task)], now).await?;
    let record = state.store.task_record(execution_id).await?;
    let wait = record.and_then(|r| r.result_wait.map(|s| (s, r.result_wait_message)));
    let Some((status, result)) = to_record(&update, wait.as_ref(), &state) else {
        // A completed or failed status whose payload has not come yet.
        let status = update.status.as_deref().unwrap_or_default();
        let waiting = Some((status, update.status_message.as_str()));
        state
            .store
            .set_result_wait(execution_id, waiting, now)
            .await?;
        state
            .store
            .note_protocol(execution_id, Some(status), now)
            .await?;
        let execution = state.store.executions(&[execution_id]).await?.pop();
        return Ok(Json(McpTaskRecorded {
            execution_id,
            execution: execution.map(Execution::from),
            applied: false,
            note: Some(format!(
                "task {:?} is {status}: kept, waiting for its result (tasks/result)",
                update.task_id
            )),
        }));
    };
    let current = state.store.executions(&[execution_id]).await?.pop();
    if let Some(current) = current.filter(|e| e.status == status && e.result == result) {
        state
            .store
            .note_protocol(execution_id, update.status.as_deref(), now)
            .await?;
        return Ok(Json(McpTaskRecorded {
            execution_id,
            execution: Some(current.into()),
            applied: false,
            note: Some("a duplicate: the execution holds this status and result already".into()),
        }));
    }
    let recorded = record_status(&state, execution_id, &status, &result, &headers).await?;
    if update.result.is_some() {
        state.store.set_result_wait(execution_id, None, now).await?;
    }
    state
        .store
        .note_protocol(execution_id, update.status.as_deref(), now)
        .await?;
    Ok(Json(McpTaskRecorded {
        execution_id,
        execution: Some(recorded.execution),
        applied: recorded.applied,
        note: recorded.note,
    }))
}

/// The status and result to record for `update`, or `None` when its
/// status waits for the payload. A result alone (a `tasks/result` answer)
/// ends the task with the status that waited for it (`completed` when
/// none did: the answer comes only once the task is terminal); a result
/// without text takes the status message's.
fn to_record(
    update: &McpUpdate,
    wait: Option<&(String, Option<String>)>,
    state: &AppState,
) -> Option<(String, String)> {
    let max = max_result_bytes(state.policy.limits());
    match (&update.status, &update.result) {
        (Some(status), None) if mcp::waits_for_result(status) => None,
        (Some(status), None) => Some((status.clone(), capped(&update.status_message, max))),
        (status, Some(outcome)) => {
            let waited = wait.map(|(s, _)| s.as_str());
            let ended = status.as_deref().or(waited).unwrap_or("completed");
            let waited_message = wait.and_then(|(_, m)| m.as_deref()).unwrap_or_default();
            let text = [
                outcome.text.as_str(),
                update.status_message.as_str(),
                waited_message,
            ]
            .into_iter()
            .find(|t| !t.is_empty())
            .unwrap_or_default();
            Some((
                mcp::recorded_status(ended, Some(outcome)),
                capped(text, max),
            ))
        }
        (None, None) => Some(("completed".into(), String::new())),
    }
}
