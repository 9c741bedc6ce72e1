//! `PUT /v1/executions/{id}`: a runtime reports an execution's state.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::error::{parse_id, parse_json, storable, task_failed, ApiError};
use super::limits::{cap_text, max_result_bytes, MAX_STATUS_BYTES};
use super::AppState;
use crate::classes::ClassError;
use crate::policy::types::null_as_empty;
use crate::store::ReportOutcome;

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
    headers: HeaderMap,
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
    let finished = match state.deployment.classes().class(&status).await {
        Ok(class) => class.is_terminal(),
        Err(ClassError::Store(e)) => return Err(e.into()),
        Err(ClassError::PolicyTask(e)) => return Err(task_failed(e)),
    };
    let ReportOutcome { execution, applied } = state
        .store
        .upsert_execution_status(execution_id, &status, &result, state.clock.now(), finished)
        .await?;
    crate::telemetry::reported(&state.store, &headers, execution_id, state.clock.now()).await;
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
