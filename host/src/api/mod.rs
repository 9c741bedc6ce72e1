//! The HTTP API (axum): how a runtime beside this process links tool
//! results, records approvals and execution states, and manages the policy.
//!
//! | route | effect | scope |
//! | --- | --- | --- |
//! | `POST /v1/sessions/{id}/tool-results` | extract ids with the policy, link them | runtime |
//! | `POST /v1/sessions/{id}/approvals` | open/extend or close the assent window | runtime |
//! | `POST /v1/sessions/{id}/turns` | record a chat turn for `chatWith` to replay (`Idempotency-Key`) | runtime |
//! | `PUT /v1/executions/{id}` | record a status, wake the worker (an unknown id is created: the runtime may report before the tool result is linked) | runtime |
//! | `GET /v1/executions/{id}` | the execution and its session | runtime |
//! | `POST /v1/sessions/{id}/tasks` | link a protocol task to the session; for A2A mint its push URL and token | runtime |
//! | `POST /v1/a2a/push/{execution_id}` | a remote agent's A2A push (1.0, 0.3): gather artifacts, record the state | the task's push token |
//! | `POST /v1/mcp/tasks` | an MCP task update the runtime's client got (both versions): record the status and result | runtime |
//! | `GET /v1/overview` | in flight, pending, failed, dropped, unheard notices, continuations per hour, pickup p50/p99 | runtime |
//! | `GET /v1/sessions` | a page of sessions (`?filter=`, `?status=`) | runtime |
//! | `GET /v1/sessions/{id}` | its window and counts | runtime |
//! | `GET /v1/sessions/{id}/links`, `/deliveries`, `/notices` | a page of each list (a notice: a delivery of kind `notice` and its operator-channel state) | runtime |
//! | `GET /v1/deliveries/{id}` | one delivery | runtime |
//! | `POST /v1/deliveries/{id}/retry` | send a failed delivery again, same key (`Idempotency-Key`) | runtime |
//! | `POST /v1/deliveries/{id}/drop` | drop a pending delivery: never sent, one notice (`Idempotency-Key`) | admin |
//! | `GET /v1/policy` | the active revision and the runtime's counters; the shadow revision and its disagreements | runtime |
//! | `PUT /v1/policy` | validate, swap, and make it the database's active revision (see [`crate::deploy`]); `?mode=shadow`: validate and put it in shadow instead; its signature in the `Nomos-Policy-Signature` header, required with a verify key | admin |
//! | `POST /v1/policy/rollback` | return to the previously active revision | admin |
//! | `POST /v1/policy/shadow/promote` | make the shadow the active revision (logged: a rollback undoes it) | admin |
//! | `DELETE /v1/policy/shadow` | take the shadow out of service | admin |
//! | `GET /metrics` | Prometheus text | runtime |
//! | `GET /healthz` | liveness | none |
//! | `GET /readyz` | readiness: database migrated, policy answering | none |
//! | `GET /openapi.json` | this API's OpenAPI document | none |
//!
//! Every route that reaches the database is handled at most 64 at a time
//! (`admission.rs`); past that a request is refused on arrival with a 503.
//! `auth.rs` says which token opens which scope; `limits.rs` holds each
//! route's body cap and the text caps (a 413 names the limit). Requests
//! and answers are the types of `wire/`, the document is generated from
//! them (`openapi.rs`), and every error is a problem document
//! (`error.rs`) naming the request id (`request.rs`).

mod a2a;
mod admission;
mod auth;
mod deliveries;
mod error;
mod executions;
mod idempotency;
mod limits;
mod mcp;
mod openapi;
mod overview;
mod policy;
mod push_limit;
mod request;
mod service;
mod sessions;
mod tasks;
pub mod wire;

use std::sync::Arc;

use axum::middleware;
use axum::routing::{delete, get, post, put};
use axum::Router;

use self::admission::Admission;

#[cfg(feature = "test-support")]
pub use crate::intake::{MAX_STATUS_BYTES, MAX_TURN_BYTES};
pub(crate) use auth::{bearer, scoped};
pub use auth::{Auth, Scope};
pub use error::ApiError;
pub(crate) use error::{extraction_failed, parse_id, parse_json, task_failed};
pub use limits::BodyCaps;
#[cfg(feature = "test-support")]
pub use limits::{BodyCap, MAX_POLICY_BYTES};
#[cfg(feature = "test-support")]
pub use openapi::document as openapi_document;
pub use openapi::document_text as openapi_text;
pub use push_limit::{PushLimiter, PushLimits, Rate, DEFAULT_PUSH_RATE, DEFAULT_PUSH_RATE_TOTAL};
pub(crate) use request::access_log;
pub use request::measure;

use crate::clock::Clock;
use crate::deploy::PolicyDeployment;
use crate::intake::Intake;
use crate::metrics::Metrics;
use crate::policy::PolicyRuntime;
use crate::store::Store;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    /// What the write routes hand their requests to (see `intake`).
    pub intake: Intake,
    /// The database every route reads and writes.
    pub store: Store,
    /// The worker's store, whose connection pool `/metrics` reports beside
    /// the requests' pool of `store` (on SQLite both are one pool).
    pub worker_store: Store,
    /// The active policy: classifies reported statuses, and is replaced on upload.
    pub policy: Arc<PolicyRuntime>,
    /// The "now" stamped on what the API records (injected, so tests and
    /// replicas synced to the database's clock agree with the worker).
    pub clock: Arc<dyn Clock>,
    /// The counters `/metrics` serves.
    pub metrics: Arc<Metrics>,
    /// The tokens and what each opens (see `auth.rs`).
    pub auth: Auth,
    /// Each route's body cap, from the policy's limits.
    pub caps: BodyCaps,
    /// The one way the policy routes change the policy, built once with
    /// the verify key (if any) so no route can deploy around it.
    pub deployment: PolicyDeployment,
    /// How long an execution linked in an open window may run before it
    /// counts as stuck (`serve --stuck-after`), for `/metrics` and the
    /// console's statuses.
    pub stuck_after: std::time::Duration,
    /// The A2A push route's rate limits (see `push_limit.rs`).
    pub push_limiter: Arc<PushLimiter>,
}

/// The API's router.
pub fn router(state: AppState) -> Router {
    let caps = state.caps;
    let gate = Admission::new(admission::MAX_IN_FLIGHT);
    let admit = || middleware::from_fn_with_state(gate.clone(), admission::admit);
    let writes = Router::new()
        .route(
            "/v1/sessions/{session_id}/tool-results",
            post(sessions::writes::link_tool_result).layer(caps.tool_result.layer()),
        )
        .route(
            "/v1/sessions/{session_id}/approvals",
            post(sessions::writes::decide_approval).layer(caps.small.layer()),
        )
        .route(
            "/v1/sessions/{session_id}/turns",
            post(sessions::writes::record_turn).layer(caps.turn.layer()),
        )
        .route(
            "/v1/sessions/{session_id}/tasks",
            post(tasks::register_task).layer(caps.small.layer()),
        )
        .route(
            "/v1/sessions/{session_id}/push-configs",
            post(tasks::mint_session_push).layer(caps.small.layer()),
        )
        .route(
            "/v1/mcp/tasks",
            post(mcp::record_mcp_task).layer(caps.execution.layer()),
        )
        .route(
            "/v1/executions/{execution_id}",
            put(executions::record_execution).layer(caps.execution.layer()),
        )
        .route(
            "/v1/deliveries/{delivery_id}/retry",
            post(deliveries::retry),
        )
        .route_layer(admit())
        .route_layer(middleware::from_fn_with_state(
            (state.clone(), Scope::Runtime),
            auth::scoped,
        ));
    let reads = Router::new()
        .route("/v1/overview", get(overview::overview))
        .route("/v1/sessions", get(sessions::sessions))
        .route("/v1/sessions/{session_id}", get(sessions::session))
        .route("/v1/sessions/{session_id}/links", get(sessions::links))
        .route(
            "/v1/sessions/{session_id}/deliveries",
            get(sessions::deliveries),
        )
        .route("/v1/sessions/{session_id}/notices", get(sessions::notices))
        .route("/v1/executions/{execution_id}", get(executions::execution))
        .route("/v1/deliveries/{delivery_id}", get(deliveries::delivery))
        .route("/v1/policy", get(policy::policy_info))
        .route_layer(admit())
        .route_layer(middleware::from_fn_with_state(
            (state.clone(), Scope::Read),
            auth::scoped,
        ));
    // Outside admission: a scrape must answer while the server is busiest.
    let scrape = Router::new()
        .route("/metrics", get(service::metrics))
        .route_layer(middleware::from_fn_with_state(
            (state.clone(), Scope::Read),
            auth::scoped,
        ));
    let admin = Router::new()
        .route(
            "/v1/policy",
            put(policy::upload_policy).layer(caps.policy.layer()),
        )
        .route("/v1/policy/rollback", post(policy::rollback_policy))
        .route("/v1/policy/shadow/promote", post(policy::promote_shadow))
        .route("/v1/policy/shadow", delete(policy::drop_shadow))
        .route(
            "/v1/deliveries/{delivery_id}/drop",
            post(deliveries::drop_delivery),
        )
        .route_layer(admit())
        .route_layer(middleware::from_fn_with_state(
            (state.clone(), Scope::Admin),
            auth::scoped,
        ));
    Router::new()
        .route("/healthz", get(service::healthz))
        .route("/readyz", get(service::readyz))
        .route("/openapi.json", get(service::openapi))
        // The push token, not an API token, opens it (see `a2a.rs`).
        .route(
            "/v1/a2a/push/{execution_id}",
            post(a2a::receive_push)
                .layer(caps.execution.layer())
                .route_layer(admit()),
        )
        .route(
            "/v1/a2a/sessions/{session_id}/push",
            post(a2a::receive_session_push)
                .layer(caps.execution.layer())
                .route_layer(admit()),
        )
        .merge(writes)
        .merge(reads)
        .merge(scrape)
        .merge(admin)
        .fallback(service::not_found)
        .method_not_allowed_fallback(service::method_not_allowed)
        .layer(caps.small.layer())
        .layer(middleware::from_fn(request::assign))
        .with_state(state)
}
