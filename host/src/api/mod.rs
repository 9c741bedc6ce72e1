//! The HTTP API (axum): how a runtime beside this process links tool
//! results, records approvals and execution states, and manages the policy.
//!
//! | route | effect |
//! | --- | --- |
//! | `POST /v1/sessions/{id}/tool-results` | extract ids with the policy, link them |
//! | `POST /v1/sessions/{id}/approvals` | open/extend or close the assent window |
//! | `POST /v1/sessions/{id}/turns` | record a chat turn `{"role": "user"\|"assistant"\|"system", "content"}` for `chatWith` to replay |
//! | `PUT /v1/executions/{id}` | record a status, wake the worker (an unknown id is created: the runtime may report before the tool result is linked) |
//! | `GET /v1/sessions/{id}` | window, counts, a page of links, ledger and notices (`?limit=`, cursors in `next`; see `sessions.rs`) |
//! | `POST /v1/deliveries/{id}/retry` | send a failed delivery again, same key |
//! | `GET /v1/policy`, `PUT /v1/policy` | active revision; validate, swap, and make it the database's active revision (see [`crate::deploy`]) |
//! | `GET /healthz`, `GET /metrics` | liveness; Prometheus text |
//!
//! Every route but `/healthz` needs the bearer token when one is set.
//! Every error is a status with a JSON body `{"error": "…"}` (see
//! `error.rs`); `docs/openapi.json` describes the routes, bodies and errors,
//! and `tests/tests/openapi.rs` checks it against this router.

mod deliveries;
mod error;
mod routes;
mod sessions;

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post, put};
use axum::Router;
use tokio::sync::Notify;

pub use error::ApiError;

use crate::clock::Clock;
use crate::metrics::Metrics;
use crate::policy::PolicyRuntime;
use crate::store::Store;

/// Largest request body: a policy upload; JSON bodies are far smaller.
pub const MAX_BODY_BYTES: usize = 16 << 20;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    /// The database every route reads and writes.
    pub store: Store,
    /// The active policy: classifies reported statuses, and is replaced on upload.
    pub policy: Arc<PolicyRuntime>,
    /// The "now" stamped on what the API records (injected, so tests and
    /// replicas synced to the database's clock agree with the worker).
    pub clock: Arc<dyn Clock>,
    /// The counters `/metrics` serves.
    pub metrics: Arc<Metrics>,
    /// Notified after a status is recorded, so the worker skips its poll.
    pub wake: Arc<Notify>,
    /// The bearer token every request but `/healthz` must carry; `None`
    /// disables the check (only sensible on loopback).
    pub token: Option<String>,
}

/// The API's router.
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .route(
            "/v1/sessions/{session_id}/tool-results",
            post(routes::link_tool_result),
        )
        .route(
            "/v1/sessions/{session_id}/approvals",
            post(routes::decide_approval),
        )
        .route("/v1/sessions/{session_id}/turns", post(routes::record_turn))
        .route("/v1/sessions/{session_id}", get(sessions::session))
        .route(
            "/v1/executions/{execution_id}",
            put(routes::record_execution),
        )
        .route(
            "/v1/deliveries/{delivery_id}/retry",
            post(deliveries::retry),
        )
        .route(
            "/v1/policy",
            get(routes::policy_info).put(routes::upload_policy),
        )
        .route("/metrics", get(routes::metrics))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token));
    Router::new()
        .route("/healthz", get(routes::healthz))
        .merge(api)
        .fallback(routes::not_found)
        .method_not_allowed_fallback(routes::method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// Refuses a request without the configured bearer token.
async fn require_token(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    if let Some(token) = &state.token {
        let given = request
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|g| constant_time_eq(g.as_bytes(), token.as_bytes())) {
            return Err(ApiError::Unauthorized);
        }
    }
    Ok(next.run(request).await)
}

/// Compares without an early exit, so timing does not reveal the token.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
