//! One trace across the async gap: W3C Trace Context taken from the
//! runtime's writes, kept with the link, and carried back to the runtime
//! with the continuation, with spans for what happens in between.
//!
//! A runtime that sends `traceparent` with a tool result (or, failing that,
//! with a status report) gets the continuation's webhook or `chatWith`
//! request with a `traceparent` of the same trace, whose parent chain runs
//! through this process's `deliver` and `link` spans back to its own tool
//! call. The context is kept in the store's side table per execution
//! (`Store::keep_trace`), because the continuation comes minutes later and
//! possibly from another replica.
//!
//! - `traceparent`: reading and writing the headers, strictly.
//! - `export`: the process's tracer provider (always an SDK one, so spans
//!   have real ids), and OTLP/HTTP export when an endpoint is configured.
//! - `spans`: the `link`, `decide` and `deliver` spans, and keeping a
//!   link's context.
//! - `logs`: the process's log, text or JSON lines, each JSON line with the
//!   trace and span ids of the span it was logged in.

mod export;
mod logs;
mod spans;
mod traceparent;

pub use export::Telemetry;
#[cfg(feature = "test-support")]
pub use export::TelemetryError;
pub use logs::{init as init_logs, LogFormat};
pub use spans::{reported, DecideSpan, DeliverSpan, LinkSpan};
pub use traceparent::{InvalidTraceparent, TraceContext};
