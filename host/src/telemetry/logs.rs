//! The process's log: text for a terminal, or JSON lines for a shipper.
//!
//! One JSON object a line, on stderr: `timestamp` (RFC 3339, UTC),
//! `level`, `target`, `message`, `fields` (the event's own, after those
//! of the spans it happened in, outermost first), and `trace_id` and
//! `span_id` when a span it happened in carries them (a request that sent
//! a `traceparent`, a `link` or a `deliver`), so a line leads to its trace.
//!
//! The level comes from `NOMOS_CONTINUE_LOG`, else `RUST_LOG` (the usual
//! variable), else the command's default: `info` for `serve`, whose steady
//! state is quiet (a line per start, stop, policy change, failover, and
//! each error, never one per request), `warn` for the others.

use std::io::Write;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// How log lines are written (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines, for a terminal.
    Text,
    /// One JSON object a line, for a log shipper.
    Json,
}

/// The variables that set the level, first found wins.
const LEVEL_VARIABLES: [&str; 2] = ["NOMOS_CONTINUE_LOG", "RUST_LOG"];

/// Installs the process's log, at `default_level` unless a variable says
/// otherwise (an invalid directive falls back to the default, and says so).
pub fn init(format: LogFormat, default_level: &str) {
    let (filter, invalid) = level_filter(default_level);
    let registry = tracing_subscriber::registry().with(filter);
    let installed = match format {
        LogFormat::Text => registry
            .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
            .try_init(),
        LogFormat::Json => registry.with(JsonLines).try_init(),
    };
    if installed.is_ok() {
        if let Some((name, error)) = invalid {
            tracing::warn!(
                "{name} is not a valid log filter ({error}); logging at {default_level}"
            );
        }
    }
}

/// The filter the variables name, or `default_level`; with the name and
/// error of an invalid one.
fn level_filter(default_level: &str) -> (EnvFilter, Option<(&'static str, String)>) {
    for name in LEVEL_VARIABLES {
        match std::env::var(name) {
            Ok(text) if !text.trim().is_empty() => {
                return match EnvFilter::try_new(&text) {
                    Ok(filter) => (filter, None),
                    Err(e) => (EnvFilter::new(default_level), Some((name, e.to_string()))),
                };
            }
            _ => continue,
        }
    }
    (EnvFilter::new(default_level), None)
}

/// The fields a span was made with (and recorded since), kept in its
/// extensions for the lines logged inside it.
struct SpanFields(Map<String, Value>);

/// The JSON layer: keeps each span's fields, writes each event as a line.
struct JsonLines;

impl<S> Layer<S> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Map::new();
        attrs.record(&mut Collect(&mut fields));
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(SpanFields(fields));
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut extensions = span.extensions_mut();
        if let Some(SpanFields(fields)) = extensions.get_mut::<SpanFields>() {
            values.record(&mut Collect(fields));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Map::new();
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope.from_root() {
                if let Some(SpanFields(kept)) = span.extensions().get::<SpanFields>() {
                    fields.extend(kept.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
            }
        }
        event.record(&mut Collect(&mut fields));
        let line = line(event, fields);
        // A log that cannot be written has nowhere to say so.
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
}

/// One event's object: the ids and the message lifted out of its fields.
fn line(event: &Event<'_>, mut fields: Map<String, Value>) -> Value {
    let metadata = event.metadata();
    let message = fields.remove("message").unwrap_or(Value::Null);
    let mut object = Map::new();
    object.insert(
        "timestamp".into(),
        chrono::Utc::now()
            .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
            .into(),
    );
    object.insert("level".into(), metadata.level().as_str().into());
    object.insert("target".into(), metadata.target().into());
    object.insert("message".into(), message);
    for id in ["trace_id", "span_id"] {
        if let Some(value) = fields.remove(id).filter(|v| !v.is_null()) {
            object.insert(id.into(), value);
        }
    }
    object.insert("fields".into(), Value::Object(fields));
    Value::Object(object)
}

/// Records fields as JSON values: numbers and booleans as themselves,
/// everything else as its text.
struct Collect<'a>(&'a mut Map<String, Value>);

impl Visit for Collect<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().into(), format!("{value:?}").into());
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.0.insert(field.name().into(), value.to_string().into());
    }
}
