//! The three spans of an execution's trip through nomos-continue, and the
//! trace context kept between them.
//!
//! - `link` (server): a tool result linking executions to a session, a
//!   child of the request's `traceparent`. Its own context is what is kept
//!   with the executions, so the spans after the async gap hang under it.
//! - `decide` (internal): the policy's decision for one execution, a child
//!   of the kept context.
//! - `deliver` (client): one agent call, a child of the kept context; its
//!   context is what the call carries to the runtime.
//!
//! Span times are the SDK's wall clock: they time this process's own work
//! for a trace viewer and decide nothing. Every failure here is logged and
//! swallowed: a lost trace must never cost a link, a report or a delivery.

use chrono::{DateTime, Utc};
use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue, StringValue, Value};
use opentelemetry_sdk::trace::Span;
use uuid::Uuid;

use super::export::tracer;
use super::traceparent::TraceContext;
use crate::store::{LinkOutcome, LinkTrace, Store, TraceSource};

/// A context to start a span under: the remote parent a header or a kept
/// link names, or a new trace.
fn parent(context: Option<&TraceContext>) -> Context {
    match context {
        Some(c) => Context::new().with_remote_span_context(c.span_context()),
        None => Context::new(),
    }
}

/// The context kept with a link, as a parent; one that no longer parses
/// (written by hand) starts a new trace.
fn kept(trace: Option<&LinkTrace>) -> Option<TraceContext> {
    let trace = trace?;
    TraceContext::parse(&trace.traceparent, trace.tracestate.as_deref()).ok()
}

fn start(name: &'static str, kind: SpanKind, parent: &Context, attributes: Vec<KeyValue>) -> Span {
    let tracer = tracer();
    tracer
        .span_builder(name)
        .with_kind(kind)
        .with_attributes(attributes)
        .start_with_context(tracer, parent)
}

fn ids(key: &'static str, ids: &[Uuid]) -> KeyValue {
    let values: Vec<StringValue> = ids.iter().map(|id| id.to_string().into()).collect();
    KeyValue::new(key, Value::Array(values.into()))
}

fn id(key: &'static str, id: Uuid) -> KeyValue {
    KeyValue::new(key, id.to_string())
}

/// The `link` span of one tool result, from the handler's start to the
/// links being written.
pub struct LinkSpan {
    span: Span,
    /// Whether the request carried a valid trace context: only then is one
    /// kept, so that a status report's can still fill in.
    joined: bool,
}

impl LinkSpan {
    /// Starts the span for a tool result to `session_id`, under the
    /// caller's trace context when it sent one.
    pub fn start(incoming: Option<&TraceContext>, session_id: Uuid) -> Self {
        let attributes = vec![id("nomos.session_id", session_id)];
        let span = start("link", SpanKind::Server, &parent(incoming), attributes);
        // The request's log lines name this span (see `request::assign`).
        let context = span.span_context();
        tracing::Span::current()
            .record("trace_id", tracing::field::display(context.trace_id()))
            .record("span_id", tracing::field::display(context.span_id()));
        Self {
            span,
            joined: incoming.is_some(),
        }
    }

    /// Ends the span with what was linked and, when the request carried a
    /// trace, keeps the span's context for the executions linked to this
    /// session (newly or again; not those another session holds), written
    /// over any kept before: the tool result names the call that started
    /// the work.
    pub async fn linked(mut self, store: &Store, outcome: &LinkOutcome, now: DateTime<Utc>) {
        let ours: Vec<Uuid> = (outcome.linked.iter())
            .chain(&outcome.already_linked)
            .copied()
            .collect();
        let elsewhere: Vec<Uuid> = (outcome.already_linked_elsewhere.iter())
            .map(|(execution, _)| *execution)
            .collect();
        self.span.set_attributes([
            ids("nomos.execution_ids", &ours),
            ids("nomos.linked_elsewhere", &elsewhere),
            KeyValue::new(
                "nomos.linked",
                i64::try_from(outcome.linked.len()).unwrap_or(i64::MAX),
            ),
        ]);
        let context = TraceContext::of(self.span.span_context());
        if let (true, Some(context), false) = (self.joined, context, ours.is_empty()) {
            keep(store, &ours, &context, TraceSource::ToolResult, now).await;
        }
        self.span.end();
    }
}

/// Keeps a status report's trace context for `execution_id` where none is
/// kept yet (the tool result's wins; a runtime may report before linking).
pub async fn reported(
    store: &Store,
    context: &TraceContext,
    execution_id: Uuid,
    now: DateTime<Utc>,
) {
    keep(
        store,
        &[execution_id],
        context,
        TraceSource::StatusReport,
        now,
    )
    .await;
}

async fn keep(
    store: &Store,
    execution_ids: &[Uuid],
    context: &TraceContext,
    source: TraceSource,
    now: DateTime<Utc>,
) {
    let kept = store
        .keep_trace(
            execution_ids,
            context.traceparent(),
            context.tracestate(),
            source,
            now,
        )
        .await;
    if let Err(e) = kept {
        tracing::warn!("could not keep the trace context of a {source}: {e}");
    }
}

/// The `decide` span of one execution: started before the policy is asked,
/// ended with its answer.
pub struct DecideSpan(Span);

impl DecideSpan {
    /// Starts the span under the context kept for the execution.
    pub fn start(trace: Option<&LinkTrace>, session_id: Uuid, execution_id: Uuid) -> Self {
        let attributes = vec![
            id("nomos.session_id", session_id),
            id("nomos.execution_id", execution_id),
        ];
        let parent = parent(kept(trace).as_ref());
        Self(start("decide", SpanKind::Internal, &parent, attributes))
    }

    /// Ends it with what the policy (or the host) decided: `continue`,
    /// `wait`, `drop`, `policy_error` or `deferred`.
    pub fn end(mut self, outcome: &'static str) {
        self.0
            .set_attribute(KeyValue::new("nomos.outcome", outcome));
        if outcome == "policy_error" {
            self.0
                .set_status(Status::error("the policy failed on this input"));
        }
        self.0.end();
    }
}

/// The `deliver` span of one agent call.
pub struct DeliverSpan(Span);

impl DeliverSpan {
    /// Starts the span of a call delivering `delivery_id` (`kind`
    /// `continuation` or `notice`) for `execution_ids`, under the context
    /// kept for them.
    pub fn start(
        trace: Option<&LinkTrace>,
        kind: &'static str,
        delivery_id: Uuid,
        session_id: Uuid,
        execution_ids: &[Uuid],
    ) -> Self {
        let attributes = vec![
            KeyValue::new("nomos.kind", kind),
            id("nomos.delivery_id", delivery_id),
            id("nomos.session_id", session_id),
            ids("nomos.execution_ids", execution_ids),
        ];
        let parent = parent(kept(trace).as_ref());
        Self(start("deliver", SpanKind::Client, &parent, attributes))
    }

    /// A log span naming this span's trace and span ids, for the lines
    /// logged while the call runs.
    pub fn log_span(&self) -> tracing::Span {
        let context = self.0.span_context();
        tracing::info_span!(
            "deliver",
            trace_id = %context.trace_id(),
            span_id = %context.span_id()
        )
    }

    /// What the call carries: this span's context, as `traceparent` and
    /// `tracestate` values.
    pub fn headers(&self) -> (Option<String>, Option<String>) {
        match TraceContext::of(self.0.span_context()) {
            Some(c) => (
                Some(c.traceparent().to_owned()),
                c.tracestate().map(str::to_owned),
            ),
            None => (None, None),
        }
    }

    /// Ends it with the call's outcome (`accepted`, or the failure's class
    /// and message).
    pub fn end(mut self, outcome: &'static str, error: Option<&str>) {
        self.0
            .set_attribute(KeyValue::new("nomos.outcome", outcome));
        if let Some(error) = error {
            self.0.set_status(Status::error(error.to_owned()));
        }
        self.0.end();
    }
}
