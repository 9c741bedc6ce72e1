//! The ledger's routes: read one delivery, send a failed one again, drop
//! a pending one.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::Json;

use super::error::{parse_id, ApiError};
use super::idempotency;
use super::wire::{Delivery, DropResponse, Problem, RetryResponse};
use super::AppState;

/// One delivery; 404 if there is none with this id.
#[utoipa::path(get, path = "/v1/deliveries/{delivery_id}", tag = "deliveries",
    params(("delivery_id" = Uuid, Path, description = "The delivery")),
    responses((status = 200, description = "The delivery", body = Delivery)))]
pub(super) async fn delivery(
    State(state): State<AppState>,
    delivery_id: Result<Path<String>, PathRejection>,
) -> Result<Json<Delivery>, ApiError> {
    let id = parse_id("delivery id", &delivery_id?.0)?;
    match state.store.delivery(id).await? {
        Some(delivery) => Ok(Json(delivery.into())),
        None => Err(ApiError::NotFound(format!("no delivery {id}"))),
    }
}

/// Sends a failed delivery (or a continuation dropped when its window
/// closed) again with the same key. With an `Idempotency-Key`, a repeat
/// answers the first answer rather than a 409 (the delivery is no longer
/// failed).
#[utoipa::path(post, path = "/v1/deliveries/{delivery_id}/retry", tag = "deliveries",
    params(("delivery_id" = Uuid, Path, description = "The delivery"), idempotency::KeyHeader),
    responses((status = 200, description = "Pending again", body = RetryResponse),
        (status = 409, description = "The delivery has not ended, or was delivered, or its \
            note was purged past the delivery retention; or a request with this \
            Idempotency-Key is still being handled",
            body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The Idempotency-Key was used with another request",
            body = Problem, content_type = "application/problem+json")))]
pub(super) async fn retry(
    State(state): State<AppState>,
    delivery_id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let id = parse_id("delivery id", &delivery_id?.0)?;
    let body = state.caps.small.take(body)?;
    let request = idempotency::Request::new("retry", &id.to_string(), &body, &headers)?;
    idempotency::once(&state, request, || async {
        let delivery = state.intake.retry_delivery(id).await?;
        Ok(RetryResponse {
            delivery: delivery.into(),
        })
    })
    .await
}

/// Drops a pending delivery (waiting for its first call, or between
/// retries): it is never sent. A continuation's executions are settled
/// `dropped` ("dropped by the operator") with one notice saying so; a
/// notice's agent copy is only ended (its operator copy still goes out).
/// Refused with a 409 while a call of it is in flight. With an
/// `Idempotency-Key`, a repeat answers the first answer.
#[utoipa::path(post, path = "/v1/deliveries/{delivery_id}/drop", tag = "deliveries",
    params(("delivery_id" = Uuid, Path, description = "The delivery"), idempotency::KeyHeader),
    responses((status = 200, description = "Dropped", body = DropResponse),
        (status = 409, description = "The delivery is not pending, or a call of it is in \
            flight; or a request with this Idempotency-Key is still being handled",
            body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The Idempotency-Key was used with another request",
            body = Problem, content_type = "application/problem+json")))]
pub(super) async fn drop_delivery(
    State(state): State<AppState>,
    delivery_id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let id = parse_id("delivery id", &delivery_id?.0)?;
    let body = state.caps.small.take(body)?;
    let request = idempotency::Request::new("drop", &id.to_string(), &body, &headers)?;
    idempotency::once(&state, request, || async {
        let delivery = state.intake.drop_delivery(id).await?;
        Ok(DropResponse {
            delivery: delivery.into(),
        })
    })
    .await
}
