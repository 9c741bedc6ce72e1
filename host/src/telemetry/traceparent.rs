//! W3C Trace Context headers (`traceparent`, `tracestate`): reading them
//! from a request, strictly, and writing them from a span.
//!
//! Why strict and silent: a header that is not a valid `traceparent` names
//! no trace we could join, so it is dropped (logged at debug) and the
//! request goes on as if it had none. Tracing must never turn a runtime's
//! write into an error.
//!
//! A version above `00` (but `ff`, which W3C reserves as invalid) is read
//! as W3C asks of a receiver that knows only version 00: its first 55
//! characters hold the fields version 00 knows (anything after them must
//! follow a `-`), its flags are read for the sampled bit alone, and it is
//! passed on as version 00.

use std::str::FromStr;

use axum::http::HeaderMap;
use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};

/// The header that carries the trace id, the parent span id and the flags.
pub const TRACEPARENT: &str = "traceparent";
/// The header that carries vendors' own trace data.
pub const TRACESTATE: &str = "tracestate";

/// The longest `tracestate` kept. W3C asks vendors to pass on at least 512
/// characters; a longer one is dropped whole rather than cut mid-entry.
const MAX_TRACESTATE: usize = 512;

/// Why a `traceparent` was not taken.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidTraceparent {
    /// Not four fields separated by `-`, or a field of the wrong length.
    #[error("not traceparent syntax (<2 hex>-<32 hex>-<16 hex>-<2 hex>)")]
    Syntax,
    /// The version `ff`, which W3C reserves as invalid.
    #[error("invalid version {0:?}")]
    Version(String),
    /// A field that is not lowercase hex.
    #[error("the {0} is not lowercase hex")]
    NotHex(&'static str),
    /// An all-zero trace id or parent id, which W3C reserves as invalid.
    #[error("the {0} is all zeros")]
    Zero(&'static str),
    /// The header appears more than once.
    #[error("more than one traceparent header")]
    Repeated,
}

/// A valid trace context, in its header form: what is kept with a link and
/// sent with a continuation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceContext {
    traceparent: String,
    tracestate: Option<String>,
}

impl TraceContext {
    /// Parses a `traceparent` (and its `tracestate`). A `tracestate` that is
    /// malformed or too long is dropped and the `traceparent` kept, as W3C
    /// asks of a receiver.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Result<Self, InvalidTraceparent> {
        let traceparent = traceparent.trim();
        let version = traceparent.get(..2).ok_or(InvalidTraceparent::Syntax)?;
        if !lower_hex(version) {
            return Err(InvalidTraceparent::NotHex("version"));
        }
        if version == "ff" {
            return Err(InvalidTraceparent::Version(version.to_owned()));
        }
        // Version 00 is exactly its four fields; a later version may add
        // fields after them, each after a `-`.
        let known = match (version, traceparent.len()) {
            ("00", 55) => traceparent,
            ("00", _) => return Err(InvalidTraceparent::Syntax),
            (_, 55) => traceparent,
            (_, len) if len > 55 && traceparent.as_bytes()[55] == b'-' => &traceparent[..55],
            _ => return Err(InvalidTraceparent::Syntax),
        };
        let fields: Vec<&str> = known.split('-').collect();
        let [_, trace_id, parent_id, flags] = fields[..] else {
            return Err(InvalidTraceparent::Syntax);
        };
        if trace_id.len() != 32 || parent_id.len() != 16 || flags.len() != 2 {
            return Err(InvalidTraceparent::Syntax);
        }
        for (name, field) in [
            ("trace id", trace_id),
            ("parent id", parent_id),
            ("flags", flags),
        ] {
            if !lower_hex(field) {
                return Err(InvalidTraceparent::NotHex(name));
            }
        }
        for (name, field) in [("trace id", trace_id), ("parent id", parent_id)] {
            if field.bytes().all(|b| b == b'0') {
                return Err(InvalidTraceparent::Zero(name));
            }
        }
        let traceparent = if version == "00" {
            known.to_owned()
        } else {
            // Of a later version's flags only the sampled bit is known.
            let sampled = u8::from_str_radix(flags, 16).unwrap_or(0) & 1;
            format!("00-{trace_id}-{parent_id}-{sampled:02x}")
        };
        Ok(Self {
            traceparent,
            tracestate: tracestate.and_then(valid_tracestate),
        })
    }

    /// The context of a request's headers, if it carries a valid one; an
    /// invalid one is logged at debug and ignored.
    pub fn from_headers(headers: &HeaderMap) -> Option<Self> {
        let mut values = headers.get_all(TRACEPARENT).iter();
        let first = values.next()?;
        let parsed = match (values.next(), first.to_str()) {
            (Some(_), _) => Err(InvalidTraceparent::Repeated),
            (None, Err(_)) => Err(InvalidTraceparent::Syntax),
            (None, Ok(text)) => {
                // Several tracestate headers are one list, in order.
                let states: Vec<&str> = (headers.get_all(TRACESTATE).iter())
                    .filter_map(|v| v.to_str().ok())
                    .collect();
                let state = (!states.is_empty()).then(|| states.join(","));
                Self::parse(text, state.as_deref())
            }
        };
        parsed
            .inspect_err(|e| tracing::debug!("ignoring the request's traceparent: {e}"))
            .ok()
    }

    /// The `traceparent` header value.
    pub fn traceparent(&self) -> &str {
        &self.traceparent
    }

    /// The `tracestate` header value, if any.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The trace id (32 hex digits), for log lines.
    pub fn trace_id(&self) -> String {
        self.traceparent.get(3..35).unwrap_or_default().to_owned()
    }

    /// The span it names as a remote parent.
    pub(super) fn span_context(&self) -> SpanContext {
        let field = |range: std::ops::Range<usize>| self.traceparent.get(range).unwrap_or("0");
        let trace_id = TraceId::from_hex(field(3..35)).unwrap_or(TraceId::INVALID);
        let span_id = SpanId::from_hex(field(36..52)).unwrap_or(SpanId::INVALID);
        let flags = u8::from_str_radix(field(53..55), 16).unwrap_or(0);
        let state = (self.tracestate.as_deref())
            .and_then(|s| TraceState::from_str(s).ok())
            .unwrap_or_default();
        SpanContext::new(trace_id, span_id, TraceFlags::new(flags), true, state)
    }

    /// The header form of a span's context; `None` for an invalid one (a
    /// span made after shutdown).
    pub(super) fn of(span: &SpanContext) -> Option<Self> {
        if !span.is_valid() {
            return None;
        }
        let traceparent = format!(
            "00-{:032x}-{:016x}-{:02x}",
            span.trace_id(),
            span.span_id(),
            span.trace_flags()
        );
        let state = span.trace_state().header();
        Some(Self {
            traceparent,
            tracestate: (!state.is_empty()).then_some(state),
        })
    }
}

/// `tracestate` as kept: non-empty, at most [`MAX_TRACESTATE`] characters,
/// and a list OpenTelemetry accepts.
/// Lowercase hexadecimal digits only, as every field is written.
fn lower_hex(field: &str) -> bool {
    field
        .bytes()
        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn valid_tracestate(text: &str) -> Option<String> {
    let text = text.trim();
    if text.is_empty() || text.len() > MAX_TRACESTATE {
        return None;
    }
    match TraceState::from_str(text) {
        Ok(state) if !state.header().is_empty() => Some(state.header()),
        Ok(_) => None,
        Err(e) => {
            tracing::debug!("ignoring the request's tracestate: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_header_round_trips() {
        let parsed = TraceContext::parse(VALID, Some("congo=t61rcWkgMzE")).expect("valid");
        assert_eq!(parsed.traceparent(), VALID);
        assert_eq!(parsed.tracestate(), Some("congo=t61rcWkgMzE"));
        let span = parsed.span_context();
        assert_eq!(
            format!("{:032x}", span.trace_id()),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(format!("{:016x}", span.span_id()), "00f067aa0ba902b7");
        assert!(span.is_remote() && span.is_sampled());
        assert_eq!(TraceContext::of(&span), Some(parsed));
    }

    #[test]
    fn invalid_headers_are_refused() {
        let cases = [
            (
                "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "version ff",
            ),
            (
                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
                "a later version's extra field without its dash",
            ),
            (
                "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "version not hex",
            ),
            (
                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                "uppercase",
            ),
            (
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                "zero trace",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                "zero parent",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
                "short trace",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
                "extra field",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bz-01",
                "not hex",
            ),
            ("", "empty"),
        ];
        for (header, why) in cases {
            assert!(
                TraceContext::parse(header, None).is_err(),
                "{why}: {header}"
            );
        }
    }

    /// W3C: a receiver parses a higher version's known fields and passes
    /// the context on as version 00.
    #[test]
    fn a_later_version_is_read_for_the_fields_it_shares() {
        let trace = "4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7";
        for (header, flags) in [
            (format!("01-{trace}-01"), "01"),
            (format!("cc-{trace}-09-what-comes-next"), "01"),
            (format!("02-{trace}-fe"), "00"),
        ] {
            let parsed = TraceContext::parse(&header, None).expect(&header);
            assert_eq!(
                parsed.traceparent(),
                format!("00-{trace}-{flags}"),
                "{header}"
            );
            assert_eq!(parsed.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        }
    }

    #[test]
    fn a_bad_tracestate_is_dropped_and_the_traceparent_kept() {
        let long = format!("a={}", "x".repeat(MAX_TRACESTATE));
        for state in ["no equals sign", long.as_str(), "  "] {
            let parsed = TraceContext::parse(VALID, Some(state)).expect("traceparent is valid");
            assert_eq!(parsed.tracestate(), None, "{state:?}");
        }
    }

    #[test]
    fn headers_are_read_strictly() {
        let mut headers = HeaderMap::new();
        assert_eq!(TraceContext::from_headers(&headers), None);
        headers.append(TRACEPARENT, VALID.parse().expect("header value"));
        headers.append(TRACESTATE, "a=1".parse().expect("header value"));
        headers.append(TRACESTATE, "b=2".parse().expect("header value"));
        let parsed = TraceContext::from_headers(&headers).expect("valid");
        assert_eq!(parsed.tracestate(), Some("a=1,b=2"));
        headers.append(TRACEPARENT, VALID.parse().expect("header value"));
        assert_eq!(TraceContext::from_headers(&headers), None, "repeated");
    }
}
