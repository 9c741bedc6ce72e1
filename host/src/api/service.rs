//! The routes about the service itself: liveness, readiness, metrics, the
//! OpenAPI document, and the answers for a route or method that does not
//! exist.

use std::time::Duration;

use axum::extract::State;
use axum::http::header::{CONTENT_TYPE, RETRY_AFTER};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::error::ApiError;
use super::wire::{Health, Readiness};
use super::AppState;
use crate::metrics::{render_backlog, render_shadow};
use crate::policy::PolicyHandle;

/// Liveness: the process answers. It says nothing of the database (see
/// `/readyz`), so an orchestrator does not restart a healthy process
/// during a database outage.
#[utoipa::path(get, path = "/healthz", tag = "service", security(()),
    responses((status = 200, description = "The process is alive", body = Health)))]
pub(super) async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok".into(),
    })
}

/// How long readiness waits for the database and the policy: a probe
/// must answer well inside an orchestrator's probe time-out.
const READY_WITHIN: Duration = Duration::from_secs(2);

/// Readiness: the database answers and is migrated to this build's latest
/// migration, and the active policy answers. 503 with `Retry-After` while
/// any is not so.
#[utoipa::path(get, path = "/readyz", tag = "service", security(()),
    responses((status = 200, description = "Ready to serve", body = Readiness),
        (status = 503, description = "Not ready; the body says what is missing",
            body = Readiness, headers(("Retry-After" = u32, description = "Seconds to wait")))))]
pub(super) async fn readyz(State(state): State<AppState>) -> Response {
    let database = tokio::time::timeout(READY_WITHIN, state.store.is_migrated()).await;
    let (database_ok, migrated) = match database {
        Ok(Ok(migrated)) => (true, migrated),
        Ok(Err(e)) => {
            tracing::warn!("readyz: the database did not answer: {e}");
            (false, false)
        }
        Err(_) => {
            tracing::warn!("readyz: the database did not answer in {READY_WITHIN:?}");
            (false, false)
        }
    };
    let policy = tokio::time::timeout(READY_WITHIN, PolicyHandle::from(&state.policy).describe())
        .await
        .ok()
        .and_then(Result::ok)
        .filter(|described| described.value.is_ok())
        .map(|described| described.revision.0);
    let readiness = Readiness {
        ready: database_ok && migrated && policy.is_some(),
        database: database_ok,
        migrated,
        policy_revision: policy,
    };
    if readiness.ready {
        Json(readiness).into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [(RETRY_AFTER, "1")],
            Json(readiness),
        )
            .into_response()
    }
}

/// The process's counters, and the database-wide backlog gauges. A
/// database that cannot answer leaves the gauges out (logged) rather than
/// failing the scrape: the counters are still worth having.
#[utoipa::path(get, path = "/metrics", tag = "service",
    responses((status = 200, description = "Prometheus text exposition", body = String,
        content_type = "text/plain")))]
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

/// The OpenAPI document this build serves (the committed
/// `docs/openapi.json` is checked to equal it).
#[utoipa::path(get, path = "/openapi.json", tag = "service", security(()),
    responses((status = 200, description = "This document", body = Object)))]
pub(super) async fn openapi() -> Json<serde_json::Value> {
    Json(super::openapi::document())
}

pub(super) async fn not_found() -> ApiError {
    ApiError::NotFound("no such route".into())
}

pub(super) async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
