//! Request ids: every response names its request in `x-request-id`, and
//! every error body in `request_id`, so an integrator's report leads to the
//! log lines of that request (the internal error text is only there).
//!
//! A caller's own `x-request-id` is kept when it is a short token, so a
//! runtime's id reaches this log too; anything else gets a fresh UUID.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
use tower_http::trace::{MakeSpan, OnResponse, TraceLayer};
use tracing::Instrument;

use crate::metrics::Metrics;
use crate::telemetry::TraceContext;

/// The header a request id travels in, both ways.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// Longest caller-chosen id kept.
const MAX_ID_LEN: usize = 128;

tokio::task_local! {
    static REQUEST_ID: String;
}

/// The id of the request being handled, for an error body; `"unknown"`
/// outside a request (it cannot be, for a handler under [`assign`]).
pub fn current() -> String {
    REQUEST_ID
        .try_with(Clone::clone)
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// A caller's id if it is a short printable token.
fn given(request: &Request) -> Option<String> {
    let text = request.headers().get(REQUEST_ID_HEADER)?.to_str().ok()?;
    let ok = !text.is_empty()
        && text.len() <= MAX_ID_LEN
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
    ok.then(|| text.to_owned())
}

/// The middleware: picks the id, runs the request inside its task-local
/// and log span, and puts it on the response.
pub async fn assign(request: Request, next: Next) -> Response {
    let id = given(&request).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    // The trace's ids join the log lines of a request that carries one
    // (the `link` span records its own span id when it starts).
    let trace_id = TraceContext::from_headers(request.headers()).map(|c| c.trace_id());
    let span = tracing::info_span!(
        "request",
        request_id = %id,
        trace_id = trace_id.as_deref(),
        span_id = tracing::field::Empty
    );
    let mut response = REQUEST_ID
        .scope(id.clone(), next.run(request).instrument(span))
        .await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    response
}

/// The access log (`serve --access-log`): one line per request at `info`,
/// under the target [`ACCESS_TARGET`], with its method, path, status, time
/// taken and request id; tower-http's trace layer times it.
pub(crate) type AccessLog =
    TraceLayer<SharedClassifier<ServerErrorsAsFailures>, Access, (), Access, (), (), ()>;

/// The access log's target, to filter it apart (`nomos_continue::access=off`).
pub const ACCESS_TARGET: &str = "nomos_continue::access";

/// The access log's layer.
pub(crate) fn access_log() -> AccessLog {
    TraceLayer::new_for_http()
        .make_span_with(Access)
        .on_request(())
        .on_response(Access)
        .on_body_chunk(())
        .on_eos(())
        .on_failure(())
}

/// What the access log writes: the request's span, and its line when the
/// response is ready.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Access;

impl<B> MakeSpan<B> for Access {
    fn make_span(&mut self, request: &axum::http::Request<B>) -> tracing::Span {
        let trace_id = TraceContext::from_headers(request.headers()).map(|c| c.trace_id());
        tracing::info_span!(
            target: ACCESS_TARGET,
            "access",
            method = %request.method(),
            path = %request.uri().path(),
            trace_id = trace_id.as_deref()
        )
    }
}

impl<B> OnResponse<B> for Access {
    fn on_response(
        self,
        response: &axum::http::Response<B>,
        latency: std::time::Duration,
        _span: &tracing::Span,
    ) {
        let request_id = (response.headers().get(REQUEST_ID_HEADER))
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        tracing::info!(
            target: ACCESS_TARGET,
            status = response.status().as_u16(),
            ms = latency.as_secs_f64() * 1e3,
            request_id,
            "request"
        );
    }
}

/// The middleware that counts every answered request in `metrics`, by the
/// matched route's template rather than the path (a path names ids), and
/// `unmatched` for a request no route took. Layered over the API and the
/// console together, so both are counted alike.
pub async fn measure(
    State(metrics): State<Arc<Metrics>>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = request.method().as_str().to_owned();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let response = next.run(request).await;
    metrics.http_request(
        &method,
        &route,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

/// The W3C Trace Context headers a runtime may send with a tool result or
/// a status report, for the OpenAPI document (`telemetry` reads them).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)]
pub(super) struct TraceHeaders {
    /// `00-<trace id>-<span id>-<flags>`: the continuation's webhook and
    /// `chatWith` calls carry a child of it (docs/tracing.md). An invalid
    /// one is ignored, never refused.
    #[param(
        rename = "traceparent",
        nullable = false,
        pattern = "^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$"
    )]
    traceparent: Option<String>,
    /// Vendor trace state, carried with the `traceparent`.
    #[param(rename = "tracestate", nullable = false)]
    tracestate: Option<String>,
}
