//! What the two HTTP adapters share: building the client, classifying
//! failures as retryable or permanent, and reading bodies with a bound.
//!
//! One place decides what "retry" means so that the webhook and `chatWith`
//! adapters can never disagree about it: 2xx is delivered; time-outs,
//! connection failures, 408, 409 (an idempotency-key server's "same key
//! still in progress"), 429, 502, 503 and 504 mean the agent is unavailable
//! for now (honouring `Retry-After`); other 5xx are worth trying again; any
//! other status is a permanent failure.

use std::time::Duration;

use reqwest::header::HeaderValue;
use reqwest::{Client, RequestBuilder, Response, StatusCode, Url};

use super::{AdapterConfigError, AgentError};
use crate::redact;

/// The most bytes of a failed response's body quoted in an [`AgentError`],
/// so a misbehaving server cannot flood the logs or the ledger.
pub(crate) const SNIPPET_LIMIT: usize = 512;

/// Builds a client whose every request (connect, send, read) is bounded by
/// `timeout`, and which never follows redirects: a redirected `POST` may be
/// replayed as a `GET` or to another host, so a 3xx is reported instead.
pub(crate) fn client(timeout: Duration) -> Result<Client, AdapterConfigError> {
    if timeout.is_zero() {
        return Err(AdapterConfigError::Timeout);
    }
    Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| AdapterConfigError::Client(e.to_string()))
}

/// Parses an endpoint URL; only `http` and `https` (rustls, with the
/// bundled Mozilla roots) make sense here.
pub(crate) fn parse_url(field: &'static str, raw: &str) -> Result<Url, AdapterConfigError> {
    let url = Url::parse(raw).map_err(|e| AdapterConfigError::Url {
        field,
        reason: e.to_string(),
    })?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(AdapterConfigError::Url {
            field,
            reason: format!("unsupported scheme {other:?}, expected http or https"),
        }),
    }
}

/// A bearer `Authorization` value, checked once at construction so a bad
/// token is a configuration error rather than a failure at every delivery.
/// Marked sensitive so it is never printed by `Debug`.
pub(crate) fn bearer(token: &str) -> Result<HeaderValue, AdapterConfigError> {
    let mut value =
        HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| AdapterConfigError::Token)?;
    value.set_sensitive(true);
    Ok(value)
}

/// The `Idempotency-Key` header value. The host makes the keys, so an
/// unusable one is a bug that retrying cannot fix.
pub(crate) fn idempotency_header(key: &str) -> Result<HeaderValue, AgentError> {
    HeaderValue::from_str(key).map_err(|_| {
        AgentError::Permanent(format!(
            "idempotency key {key:?} is not a valid HTTP header value"
        ))
    })
}

/// The W3C trace context a request carries (`traceparent`, `tracestate`),
/// taken from the continuation or notice it delivers.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Trace<'a> {
    traceparent: Option<&'a str>,
    tracestate: Option<&'a str>,
}

impl<'a> Trace<'a> {
    pub(crate) fn of(traceparent: &'a Option<String>, tracestate: &'a Option<String>) -> Self {
        Self {
            traceparent: traceparent.as_deref(),
            tracestate: tracestate.as_deref(),
        }
    }

    /// Adds the headers to `request`. The host wrote the values, so one
    /// that is not a header value is a bug: it is left off (tracing never
    /// fails a delivery), as is a `tracestate` without a `traceparent`.
    pub(crate) fn apply(self, mut request: RequestBuilder) -> RequestBuilder {
        let Some(traceparent) = self.traceparent.and_then(|v| HeaderValue::from_str(v).ok()) else {
            return request;
        };
        request = request.header("traceparent", traceparent);
        if let Some(state) = self.tracestate.and_then(|v| HeaderValue::from_str(v).ok()) {
            request = request.header("tracestate", state);
        }
        request
    }
}

/// Classifies a transport failure (no status was received).
///
/// A time-out or a refused connection is retryable. A failure to *build* the
/// request cannot get better. Anything else (a reset connection, a truncated
/// response) is treated as retryable: we cannot know whether the receiver
/// acted, and the idempotency key makes a second attempt safe.
pub(crate) fn transport_error(url: &Url, err: &reqwest::Error) -> AgentError {
    let shown = redact::endpoint(url.as_str());
    let cause = causes(err);
    let what = if err.is_timeout() {
        "timed out"
    } else if err.is_connect() {
        "could not connect"
    } else if err.is_builder() {
        return AgentError::Permanent(format!("POST {shown}: invalid request: {cause}"));
    } else {
        "failed"
    };
    AgentError::unavailable(format!("POST {shown} {what}: {cause}"))
}

/// What went wrong, without the URL: reqwest's own message names the
/// whole URL (which may be a credential, see `redact`), so its kind and
/// the chain of causes beneath it are told instead.
pub(crate) fn causes(err: &reqwest::Error) -> String {
    let mut text = String::from(if err.is_timeout() {
        "time-out"
    } else if err.is_connect() {
        "connection error"
    } else if err.is_body() || err.is_decode() {
        "body error"
    } else {
        "request error"
    });
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Whether a non-2xx status is worth retrying: a request time-out, a key
/// still in progress, rate limiting, or a server-side failure.
pub(crate) fn status_is_retryable(status: StatusCode) -> bool {
    status_is_shortage(status) || status.is_server_error()
}

/// Whether a status says "not now" rather than "this failed": the agent is
/// busy, throttling, restarting or behind an unavailable gateway.
pub(crate) fn status_is_shortage(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::REQUEST_TIMEOUT
            | StatusCode::CONFLICT
            | StatusCode::TOO_MANY_REQUESTS
            | StatusCode::BAD_GATEWAY
            | StatusCode::SERVICE_UNAVAILABLE
            | StatusCode::GATEWAY_TIMEOUT
    )
}

/// The longest `Retry-After` honoured; a runtime asking for more is called
/// again after this (the wall-time budget still bounds the whole).
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);

/// Parses `Retry-After`: delay-seconds or an HTTP date, relative to `now`.
pub(crate) fn retry_after(
    value: Option<&HeaderValue>,
    now: std::time::SystemTime,
) -> Option<Duration> {
    let text = value?.to_str().ok()?.trim();
    let delay = match text.parse::<u64>() {
        Ok(seconds) => Duration::from_secs(seconds),
        Err(_) => httpdate::parse_http_date(text)
            .ok()?
            .duration_since(now)
            .unwrap_or(Duration::ZERO),
    };
    Some(delay.min(MAX_RETRY_AFTER))
}

/// Passes a 2xx response through; turns any other status into an
/// [`AgentError`] quoting the status and the start of the body.
pub(crate) async fn check_status(url: &Url, response: Response) -> Result<Response, AgentError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let after = retry_after(
        response.headers().get(reqwest::header::RETRY_AFTER),
        std::time::SystemTime::now(),
    );
    // The body is only evidence here; failing to read it must not hide the
    // status, which is what the classification rests on.
    let (body, truncated) = read_bounded(response, SNIPPET_LIMIT)
        .await
        .unwrap_or_default();
    let text = snippet(&body, truncated);
    let message = format!(
        "POST {} answered HTTP {status}: {text}",
        redact::endpoint(url.as_str())
    );
    if status_is_shortage(status) {
        Err(AgentError::Unavailable {
            message,
            retry_after: after,
        })
    } else if status_is_retryable(status) {
        Err(AgentError::Retryable(message))
    } else {
        Err(AgentError::Permanent(message))
    }
}

/// Reads at most `limit` bytes of a body; the flag says whether more was
/// left unread. Bounding the read keeps a hostile or broken server from
/// making us buffer an unbounded body.
pub(crate) async fn read_bounded(
    mut response: Response,
    limit: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = limit - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// Renders at most [`SNIPPET_LIMIT`] bytes of a body as text, cut on a
/// character boundary, with a marker when something was left out.
pub(crate) fn snippet(body: &[u8], truncated: bool) -> String {
    let cut = &body[..body.len().min(SNIPPET_LIMIT)];
    let text = String::from_utf8_lossy(cut);
    let mut text = text.trim_end_matches('\u{fffd}').to_string();
    // Lossy decoding can expand invalid bytes; keep the promise of the limit.
    while text.len() > SNIPPET_LIMIT {
        text.pop();
    }
    if truncated || cut.len() < body.len() {
        text.push_str(" …[truncated]");
    }
    if text.is_empty() {
        text.push_str("(empty body)");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A webhook whose path is its credential, on a port nothing listens
    /// on: the error a delivery keeps names the host, not the path.
    #[tokio::test]
    async fn a_failed_call_does_not_print_its_url() {
        const PLANTED: &str = "s3cretpath";
        let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = closed.local_addr().expect("addr").port();
        drop(closed);
        let url = Url::parse(&format!("http://127.0.0.1:{port}/hooks/{PLANTED}")).expect("url");
        let err = reqwest::Client::new()
            .post(url.clone())
            .send()
            .await
            .expect_err("nothing listens");
        let message = transport_error(&url, &err).to_string();
        assert!(!message.contains(PLANTED), "{message}");
        assert!(
            message.contains(&format!("127.0.0.1:{port}")) && message.contains("could not connect"),
            "{message}"
        );
    }

    #[test]
    fn snippet_is_bounded_and_marked() {
        let body = vec![b'x'; 2000];
        let text = snippet(&body, false);
        assert!(text.starts_with(&"x".repeat(SNIPPET_LIMIT)));
        assert!(text.ends_with("…[truncated]"));
        assert!(text.len() <= SNIPPET_LIMIT + " …[truncated]".len());
    }

    #[test]
    fn snippet_cuts_on_a_character_boundary() {
        let body = "é".repeat(400).into_bytes(); // 800 bytes, 2 per char
        let text = snippet(&body[..511], false);
        assert!(text.chars().all(|c| c == 'é'));
        assert_eq!(snippet(b"", false), "(empty body)");
    }

    #[test]
    fn retry_after_reads_seconds_and_dates_and_is_bounded() {
        let now = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        let header = |v: &str| HeaderValue::from_str(v).expect("header");
        assert_eq!(
            retry_after(Some(&header("7")), now),
            Some(Duration::from_secs(7))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(90));
        assert_eq!(
            retry_after(Some(&header(&later)), now),
            Some(Duration::from_secs(90))
        );
        assert_eq!(
            retry_after(Some(&header("99999")), now),
            Some(MAX_RETRY_AFTER)
        );
        assert_eq!(retry_after(Some(&header("soon")), now), None);
        assert_eq!(retry_after(None, now), None);
    }

    #[test]
    fn retryable_statuses() {
        for code in [408u16, 409, 429, 500, 502, 503, 504] {
            let status = StatusCode::from_u16(code).expect("valid status");
            assert!(status_is_retryable(status), "{code}");
        }
        for code in [408u16, 409, 429, 502, 503, 504] {
            let status = StatusCode::from_u16(code).expect("valid status");
            assert!(status_is_shortage(status), "{code}");
        }
        assert!(!status_is_shortage(StatusCode::INTERNAL_SERVER_ERROR));
        for code in [400u16, 401, 403, 404, 413, 422, 301] {
            let status = StatusCode::from_u16(code).expect("valid status");
            assert!(!status_is_retryable(status), "{code}");
        }
    }
}
