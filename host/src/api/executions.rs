//! `PUT /v1/executions/{id}`: a runtime reports an execution's state;
//! `GET /v1/executions/{id}`: reads it back with the session it is linked to.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::Json;
use uuid::Uuid;

use super::error::{parse_id, parse_json, storable, task_failed, ApiError};
use super::limits::{cap_text, max_result_bytes, MAX_STATUS_BYTES};
use super::wire::{Execution, ExecutionRecorded, ExecutionReportRequest, ExecutionView};
use super::AppState;
use crate::classes::ClassError;
use crate::store::ReportOutcome;

/// How long a report waits for its status's class (a database read when
/// the status is new to this revision).
const CLASS_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);

/// Records an execution's state and wakes the worker. Idempotent by
/// nature: the same report again changes nothing, and once a terminal
/// status is applied later reports are recorded, not applied.
#[utoipa::path(put, path = "/v1/executions/{execution_id}", tag = "executions",
    params(("execution_id" = Uuid, Path, description = "The execution"),
        super::request::TraceHeaders),
    request_body = ExecutionReportRequest,
    responses((status = 200, description = "The report as recorded", body = ExecutionRecorded)))]
pub(super) async fn record_execution(
    State(state): State<AppState>,
    execution_id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<ExecutionRecorded>, ApiError> {
    let execution_id = parse_id("execution id", &execution_id?.0)?;
    let ExecutionReportRequest { status, result } = parse_json(&state.caps.execution.take(body)?)?;
    record_status(&state, execution_id, &status, &result, &headers)
        .await
        .map(Json)
}

/// Records one status report of `execution_id`, whoever made it (the
/// runtime's `PUT`, an A2A push, an MCP task update): the status's class
/// under the active revision, the upsert under the late-report rule (a
/// report after a terminal one is kept, not applied), the trace context of
/// `headers`, and the worker's wake-up. The one path every report takes.
/// `result` must be within [`max_result_bytes`] already (a receiver cuts
/// it, the `PUT` refuses it).
pub(super) async fn record_status(
    state: &AppState,
    execution_id: Uuid,
    status: &str,
    result: &str,
    headers: &HeaderMap,
) -> Result<ExecutionRecorded, ApiError> {
    if status.trim().is_empty() {
        return Err(ApiError::BadRequest("status must not be empty".into()));
    }
    cap_text("status", status, MAX_STATUS_BYTES)?;
    cap_text("result", result, max_result_bytes(state.policy.limits()))?;
    storable("status", status)?;
    storable("result", result)?;
    // Read through the request store, which waits briefly for a
    // connection (see `Store::for_requests`); the bound below is for a
    // slow policy.
    let classes = state.deployment.classes().through(state.store.clone());
    let finished = match tokio::time::timeout(CLASS_WITHIN, classes.class(status)).await {
        Ok(Ok(class)) => class.is_terminal(),
        Ok(Err(ClassError::Store(e))) => return Err(e.into()),
        Ok(Err(ClassError::PolicyTask(e))) => return Err(task_failed(e)),
        Err(_) => {
            return Err(ApiError::Unavailable(format!(
                "the class of status {status:?} was not read in {CLASS_WITHIN:?}"
            )))
        }
    };
    let ReportOutcome { execution, applied } = state
        .store
        .upsert_execution_status(execution_id, status, result, state.clock.now(), finished)
        .await?;
    crate::telemetry::reported(&state.store, headers, execution_id, state.clock.now()).await;
    let note = if applied {
        state.wake.notify_one();
        None
    } else {
        // "terminal" is the stored state, which a late report does not change.
        Some(format!(
            "terminal is final: execution {execution_id} already reported '{}'; \
             this report was recorded, not applied",
            execution.status
        ))
    };
    Ok(ExecutionRecorded {
        execution: execution.into(),
        applied,
        note,
    })
}

/// The execution as last reported and the session it is linked to; 404
/// when it was neither reported nor linked.
#[utoipa::path(get, path = "/v1/executions/{execution_id}", tag = "executions",
    params(("execution_id" = Uuid, Path, description = "The execution")),
    responses((status = 200, description = "The execution", body = ExecutionView)))]
pub(super) async fn execution(
    State(state): State<AppState>,
    execution_id: Result<Path<String>, PathRejection>,
) -> Result<Json<ExecutionView>, ApiError> {
    let id = parse_id("execution id", &execution_id?.0)?;
    let execution = state.store.executions(&[id]).await?.pop();
    let session_id = state.store.session_of_execution(id).await?;
    if execution.is_none() && session_id.is_none() {
        return Err(ApiError::NotFound(format!(
            "execution {id} was never reported nor linked"
        )));
    }
    Ok(Json(ExecutionView {
        execution: execution.map(Execution::from),
        session_id,
    }))
}
