//! The routes about the service itself: liveness, metrics, and the
//! answers for a route or method that does not exist.

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Value};

use super::error::ApiError;
use super::AppState;
use crate::metrics::{render_backlog, render_shadow};

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
