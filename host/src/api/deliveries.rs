//! Operator routes on the ledger.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::Json;
use serde_json::{json, Value};

use super::error::{parse_id, ApiError};
use super::AppState;
use crate::store::RetryOutcome;

/// `POST /v1/deliveries/{id}/retry`: sends a failed delivery (or a
/// continuation dropped when its window closed) again with the same key.
pub(super) async fn retry(
    State(state): State<AppState>,
    delivery_id: Result<Path<String>, PathRejection>,
) -> Result<Json<Value>, ApiError> {
    let id = parse_id("delivery id", &delivery_id?.0)?;
    let outcome = state.store.retry_delivery(id, state.clock.now()).await?;
    match outcome {
        RetryOutcome::Retried(delivery) => {
            state.store.notify_wake().await?;
            state.wake.notify_one();
            Ok(Json(json!({ "delivery": delivery })))
        }
        RetryOutcome::NotFound => Err(ApiError::NotFound(outcome.explain(id))),
        other => Err(ApiError::Conflict(other.explain(id))),
    }
}
