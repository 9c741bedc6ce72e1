//! `PUT /v1/executions/{id}`: a runtime reports an execution's state;
//! `GET /v1/executions/{id}`: reads it back with the session it is linked to.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::Json;

use super::error::{parse_id, parse_json, ApiError};
use super::wire::{Execution, ExecutionRecorded, ExecutionReportRequest, ExecutionView};
use super::AppState;
use crate::telemetry::TraceContext;

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
    let trace = TraceContext::from_headers(&headers);
    let recorded = (state.intake)
        .record_status(execution_id, &status, &result, trace.as_ref())
        .await?;
    Ok(Json(ExecutionRecorded {
        execution: recorded.execution.into(),
        applied: recorded.applied,
        note: recorded.note,
    }))
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
