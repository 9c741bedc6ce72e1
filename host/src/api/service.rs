//! The routes about the service itself: liveness, readiness, metrics, the
//! OpenAPI document, and the answers for a route or method that does not
//! exist.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::header::{CONTENT_TYPE, RETRY_AFTER};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::error::ApiError;
use super::wire::{Health, Readiness};
use super::AppState;
use crate::metrics::{
    self, BacklogGauges, DatabaseGauges, PoolGauges, ProcessGauges, Scrape, TableGauges,
};
use crate::policy::PolicyHandle;
use crate::store::Store;

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

/// The process's counters, the policy's, the connection pools' and the
/// database-wide gauges (`docs/metrics.md` lists them all). A database
/// that cannot answer leaves its gauges out (logged) rather than failing
/// the scrape: the counters are still worth having.
#[utoipa::path(get, path = "/metrics", tag = "service",
    responses((status = 200, description = "Prometheus text exposition (version 0.0.4)", body = String,
        content_type = "text/plain")))]
pub(super) async fn metrics(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<impl IntoResponse, ApiError> {
    // Read (and cap) whatever body came with the GET: left unread, it makes
    // the server close the connection under an answer larger than one TCP
    // window, and the scraper sees a truncated body.
    state.caps.small.take(body)?;
    let scrape = Scrape {
        policy: state.policy.stats(),
        shadow: state.policy.shadow().stats(),
        active_revision: state.policy.active_revision().0.clone(),
        database: database_gauges(&state).await,
        pools: vec![
            pool_gauges("worker", &state.worker_store),
            pool_gauges("requests", &state.store),
        ],
        process: ProcessGauges::read(),
    };
    Ok((
        [(CONTENT_TYPE, metrics::CONTENT_TYPE)],
        state.metrics.render(&scrape),
    ))
}

/// The gauges read from the database for one scrape, one store query per
/// field of [`DatabaseGauges`].
async fn database_gauges(state: &AppState) -> DatabaseGauges {
    let backlog = match state.store.backlog().await {
        Ok(backlog) => Some(BacklogGauges {
            finished: backlog.finished,
            oldest_age: backlog
                .oldest_finished_at
                .map(|at| (state.clock.now() - at).to_std().unwrap_or_default()),
        }),
        Err(e) => {
            tracing::warn!("metrics: backlog gauges left out: {e}");
            None
        }
    };
    let notices_undelivered = state
        .store
        .undelivered_notices()
        .await
        .inspect_err(|e| tracing::warn!("metrics: undelivered notices left out: {e}"))
        .ok();
    let after =
        chrono::Duration::from_std(state.stuck_after).unwrap_or(chrono::Duration::minutes(10));
    let stuck_executions = state
        .store
        .count_stuck_executions(state.clock.now(), after)
        .await
        .inspect_err(|e| tracing::warn!("metrics: stuck executions left out: {e}"))
        .ok();
    let tables = table_gauges(&state.store)
        .await
        .inspect_err(|e| tracing::warn!("metrics: table upkeep left out: {e}"))
        .ok();
    DatabaseGauges {
        backlog,
        notices_undelivered,
        stuck_executions,
        tables,
    }
}

/// Each table's upkeep, with whether autovacuum can reach it (the
/// server's settings and the table's own).
async fn table_gauges(store: &Store) -> Result<Vec<TableGauges>, crate::store::StoreError> {
    let Some(settings) = store.vacuum_settings().await? else {
        return Ok(Vec::new());
    };
    let server_on = settings.autovacuum && settings.track_counts;
    Ok(store
        .table_upkeep()
        .await?
        .into_iter()
        .map(|t| TableGauges {
            autovacuum: server_on && !settings.tables_without_autovacuum.contains(&t.table),
            live_tuples: t.live_tuples,
            dead_tuples: t.dead_tuples,
            last_vacuum_seconds: t
                .last_vacuum
                .map_or(0.0, |at| at.timestamp_micros() as f64 / 1e6),
            updates: u64::try_from(t.updates).unwrap_or(0),
            hot_updates: u64::try_from(t.hot_updates).unwrap_or(0),
            bytes: t.bytes,
            table: t.table,
        })
        .collect())
}

fn pool_gauges(pool: &'static str, store: &Store) -> PoolGauges {
    let used = store.pool_use();
    PoolGauges {
        pool,
        size: used.size,
        idle: used.idle,
        max: used.max,
    }
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
