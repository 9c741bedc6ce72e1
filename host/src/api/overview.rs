//! `GET /v1/overview`: the console's overview strip as JSON, for a
//! dashboard or an alert that wants the same numbers the operator sees.

use axum::extract::State;
use axum::Json;

use super::error::ApiError;
use super::wire::Overview;
use super::AppState;

/// What is in flight, failing and unheard now, over every session; read
/// from the database, so every replica answers the same.
#[utoipa::path(get, path = "/v1/overview", tag = "overview",
    responses((status = 200, description = "The numbers now", body = Overview)))]
pub(super) async fn overview(State(state): State<AppState>) -> Result<Json<Overview>, ApiError> {
    let pulse = state.store.pulse(state.clock.now()).await?;
    Ok(Json(pulse.into()))
}
