//! The operator's console at `/ui`: the sessions, one session's timeline,
//! the policy, and a playground, built into the binary.
//!
//! # How a page is made
//!
//! `GET /ui` is a page with no data in it, and its script and style sheet
//! (`host/console/`) are served beside it. The page asks for a token once,
//! keeps it in the tab's `sessionStorage` and sends it as a bearer header
//! with every request. Each view is HTML rendered on the server from an
//! askama template (`host/templates/`, escaped by default), fetched by the
//! script from `/ui/fragments/…` under the API's own scopes, and put in
//! the page. No cookie is ever set, so a page elsewhere cannot make the
//! browser act with the operator's rights (no cross-site request forgery),
//! and the content security policy admits only this origin's script.
//!
//! | route | what | scope |
//! | --- | --- | --- |
//! | `GET /ui`, `/ui/assets/*` | the page, script and style | none (no data) |
//! | `GET /ui/fragments/sessions` | the overview strip and what the signed-in token may do; sessions with their status, filtered (`?filter=`, `?status=`), paged, searched | read |
//! | `GET /ui/fragments/sessions/{id}` | one session's timeline, one group per execution, paged; retry and drop buttons for the admin token | read |
//! | `GET /ui/fragments/policy` | active, shadow, disagreements, revisions | read |
//! | `GET /ui/fragments/playground` | the playground's forms, pre-filled | read |
//! | `POST /ui/fragments/playground/extract` | ids the active policy extracts | read |
//! | `POST /ui/fragments/playground/decide` | active and candidate decisions | read |
//! | `GET /ui/fragments/playground/candidate` | 204: this token may upload (asked before sending megabytes) | admin |
//! | `PUT /ui/fragments/playground/candidate` | hold a candidate for evaluation | admin |
//!
//! Promotion, roll-back and dropping the shadow, and a delivery's retry and
//! drop, are the API's own routes, called by the page with the same token:
//! a runtime token gets the API's 403, shown as it is (and is shown no
//! retry or drop button: the timeline is rendered for the token asking).

mod candidates;
mod format;
mod overview;
mod playground;
mod policy;
mod sessions;
mod state;
mod story;
mod timeline;

use std::sync::Arc;

use axum::extract::State;
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
    X_FRAME_OPTIONS,
};
use axum::http::HeaderValue;
use axum::middleware;
use axum::response::{Html, IntoResponse};
use axum::routing::{get, post};
use axum::Router;

use crate::api::{scoped, AppState, Scope};
use candidates::Candidates;
use state::Console;

const PAGE: &str = include_str!("../../console/index.html");
const SCRIPT: &str = include_str!("../../console/console.js");
const STYLE: &str = include_str!("../../console/console.css");

/// Only this origin's script and style, no frames, no form posts: the page
/// talks to the server through its script's `fetch` alone.
const PAGE_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self'; form-action 'none'; frame-ancestors 'none'; \
     base-uri 'none'";

/// The console's routes, to merge beside the API's.
pub fn router(app: AppState) -> Router {
    let caps = app.caps;
    let console = Console {
        app: app.clone(),
        candidates: Arc::new(Candidates::default()),
    };
    let reads = Router::new()
        .route("/ui/fragments/sessions", get(sessions::list))
        .route(
            "/ui/fragments/sessions/{session_id}",
            get(timeline::timeline),
        )
        .route("/ui/fragments/policy", get(policy::view))
        .route("/ui/fragments/playground", get(playground::view))
        .route(
            "/ui/fragments/playground/extract",
            post(playground::extract).layer(caps.tool_result.layer()),
        )
        .route(
            "/ui/fragments/playground/decide",
            post(playground::decide).layer(caps.decision_input.layer()),
        )
        .route_layer(middleware::from_fn_with_state(
            (app.clone(), Scope::Read),
            scoped,
        ));
    let admin = Router::new()
        .route(
            "/ui/fragments/playground/candidate",
            get(playground::may_hold)
                .put(playground::hold_candidate)
                .layer(caps.policy.layer()),
        )
        .route_layer(middleware::from_fn_with_state(
            (app.clone(), Scope::Admin),
            scoped,
        ));
    let fragments = reads
        .merge(admin)
        .layer(middleware::map_response_with_state(app.clone(), no_store));
    Router::new()
        .route("/ui", get(page))
        .route("/ui/", get(page))
        .route("/ui/assets/console.js", get(script))
        .route("/ui/assets/console.css", get(style))
        .merge(fragments)
        .with_state(console)
}

async fn page() -> impl IntoResponse {
    (
        [
            (CONTENT_SECURITY_POLICY, PAGE_POLICY),
            (X_FRAME_OPTIONS, "DENY"),
            (REFERRER_POLICY, "no-referrer"),
            (X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        Html(PAGE),
    )
}

async fn script() -> impl IntoResponse {
    (
        [
            (CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        SCRIPT,
    )
}

async fn style() -> impl IntoResponse {
    (
        [
            (CONTENT_TYPE, "text/css; charset=utf-8"),
            (X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        STYLE,
    )
}

/// A fragment holds what the token let the caller read: no cache keeps it.
/// It says the server's time, that the script ages the view's times from
/// (`format::Moment`).
async fn no_store(
    State(app): State<AppState>,
    mut response: axum::response::Response,
) -> axum::response::Response {
    let now = app
        .clock
        .now()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let headers = response.headers_mut();
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if let Ok(now) = HeaderValue::from_str(&now) {
        headers.insert(format::NOW_HEADER, now);
    }
    response
}
