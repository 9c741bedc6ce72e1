//! Every error the API returns, as RFC 9457 problem details
//! (`application/problem+json`, the shape [`Problem`]): a stable `type`
//! per kind of error, the named limit of a 413, the reasons of a refused
//! policy. Malformed requests are 4xx, never 500. A 503 is only for a
//! condition that passes (the database or the policy is unavailable for a
//! moment) and always carries `Retry-After`; what retrying cannot mend (a
//! corrupt row, a schema this build cannot use) is a 500. Internal error
//! text is logged under the request id the body names, never sent.

use axum::extract::rejection::PathRejection;
use axum::http::header::{CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::request;
use super::wire::Problem;
use crate::intake::IntakeError;
use crate::policy::{PolicyFailure, PolicyTaskFailed};
use crate::store::StoreError;

/// An API failure.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request is malformed (bad JSON, a bad UUID, a bad value).
    #[error("{0}")]
    BadRequest(String),
    #[error("missing or wrong bearer token")]
    /// A token is set and the request lacks one that opens this route (401).
    Unauthorized,
    /// The request's token is valid but its scope does not cover the
    /// route, or the route is disabled by the configuration (403).
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    /// No such route or record (404).
    NotFound(String),
    #[error("method not allowed")]
    /// The route exists but not for this method (405).
    MethodNotAllowed,
    /// The request is well formed but conflicts with the current state
    /// (for example a retry of a delivery that has not ended).
    #[error("{0}")]
    Conflict(String),
    /// A body or a text over its cap (413): it can never succeed as sent.
    #[error("{limit} is over its limit of {max} bytes")]
    TooLarge {
        /// The limit's name (see `limits.rs`).
        limit: &'static str,
        /// Its size in bytes.
        max: usize,
    },
    /// A policy upload that failed its checks; each reason is listed.
    #[error("policy rejected")]
    PolicyRejected(Vec<String>),
    /// An `Idempotency-Key` sent again with another request (422).
    #[error("{0}")]
    KeyReused(String),
    /// The policy could not answer (it trapped or timed out); not the
    /// client's fault, and worth retrying.
    #[error("policy unavailable: {0}")]
    PolicyUnavailable(String),
    /// More requests are being handled than the server takes at once
    /// (`admission.rs`): refused on arrival; worth retrying.
    #[error("too many requests at once")]
    Overloaded,
    /// A caller past its rate limit (the A2A push route's, see
    /// `push_limit.rs`): 429, retry after the seconds given.
    #[error("over the rate limit; retry after {retry_after_secs} s")]
    RateLimited {
        /// When the limit next admits a request.
        retry_after_secs: u64,
    },
    /// A session past its bound of tasks linked through its push
    /// configurations: 429 with a problem type of its own and no
    /// `Retry-After` (waiting does not lift a bound).
    #[error(
        "the session has linked its {max} tasks through its push configurations; \
             register further tasks one by one (POST /v1/sessions/{{id}}/tasks)"
    )]
    TaskLimit {
        /// The bound.
        max: i64,
    },
    /// The database failed in a way that passes (a lost connection, a
    /// full pool, a serialization failure); worth retrying. The text is
    /// logged, not sent.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// A fault of this process or its database that retrying cannot mend
    /// (a corrupt row, a failed migration, a template that failed to
    /// render): 500, its text logged, not sent.
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::InvalidUuid(_)
            | StoreError::InvalidValue { .. }
            | StoreError::InvalidDuration(_) => ApiError::BadRequest(e.to_string()),
            StoreError::UnknownPolicy(_) => ApiError::NotFound(e.to_string()),
            other if other.is_transient() => ApiError::Unavailable(other.to_string()),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

/// The intake's refusals, each as the status a client can act on.
impl From<IntakeError> for ApiError {
    fn from(e: IntakeError) -> Self {
        match e {
            IntakeError::Invalid(text) => ApiError::BadRequest(text),
            IntakeError::TooLarge { limit, max } => ApiError::TooLarge { limit, max },
            IntakeError::NotFound(text) => ApiError::NotFound(text),
            IntakeError::Conflict(text) => ApiError::Conflict(text),
            IntakeError::WrongToken => ApiError::Unauthorized,
            IntakeError::OtherTask(text) => ApiError::Forbidden(text),
            IntakeError::TaskLimit { max } => ApiError::TaskLimit { max },
            IntakeError::PolicyUnavailable(text) => ApiError::PolicyUnavailable(text),
            IntakeError::Unavailable(text) => ApiError::Unavailable(text),
            IntakeError::Store(e) => e.into(),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

/// A path segment axum could not decode (invalid percent-encoded UTF-8):
/// its own answer is plain text, so it is turned into a problem here.
impl From<PathRejection> for ApiError {
    fn from(e: PathRejection) -> Self {
        ApiError::BadRequest(e.body_text())
    }
}

/// Seconds a client is told to wait before retrying a 503.
const RETRY_AFTER_SECS: &str = "1";

/// The media type of every error body.
pub const PROBLEM_JSON: &str = "application/problem+json";

impl ApiError {
    /// The status, the type's name (the URN's last part) and its title.
    fn kind(&self) -> (StatusCode, &'static str, &'static str) {
        match self {
            ApiError::BadRequest(_) => {
                (StatusCode::BAD_REQUEST, "bad-request", "Malformed request")
            }
            ApiError::Unauthorized => (
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "Missing or wrong bearer token",
            ),
            ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden", "Not allowed"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not-found", "Not found"),
            ApiError::MethodNotAllowed => (
                StatusCode::METHOD_NOT_ALLOWED,
                "method-not-allowed",
                "Method not allowed",
            ),
            ApiError::Conflict(_) => (
                StatusCode::CONFLICT,
                "conflict",
                "Conflicts with the current state",
            ),
            ApiError::TooLarge { .. } => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "too-large",
                "Over a size limit",
            ),
            ApiError::PolicyRejected(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "policy-rejected",
                "Policy rejected",
            ),
            ApiError::KeyReused(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "idempotency-key-reused",
                "Idempotency key reused with another request",
            ),
            ApiError::PolicyUnavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "policy-unavailable",
                "Policy unavailable",
            ),
            ApiError::Overloaded => (
                StatusCode::SERVICE_UNAVAILABLE,
                "overloaded",
                "Too many requests at once",
            ),
            ApiError::RateLimited { .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                "rate-limited",
                "Over the rate limit",
            ),
            ApiError::TaskLimit { .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                "session-task-limit",
                "Too many tasks for one session",
            ),
            ApiError::Unavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "storage-unavailable",
                "Storage unavailable",
            ),
            ApiError::Internal(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "Internal error",
            ),
        }
    }

    /// The problem document for this error under `request_id`. The text of
    /// a database or internal failure is replaced by a sentence that says
    /// what the client can do.
    pub fn problem(&self, request_id: String) -> Problem {
        let (status, name, title) = self.kind();
        let detail = match self {
            ApiError::Unavailable(_) => format!(
                "the database is unavailable for the moment; retry after {RETRY_AFTER_SECS} s"
            ),
            ApiError::Overloaded => format!(
                "the server is handling as many requests as it takes at once; retry after \
                 {RETRY_AFTER_SECS} s"
            ),
            ApiError::Internal(_) => "the server failed; its log names this request_id".to_owned(),
            ApiError::PolicyRejected(reasons) => format!("policy rejected: {}", reasons.join("; ")),
            other => other.to_string(),
        };
        let (limit, max) = match self {
            ApiError::TooLarge { limit, max } => (Some((*limit).to_owned()), Some(*max as u64)),
            _ => (None, None),
        };
        Problem {
            kind: format!("urn:nomos-continue:problem:{name}"),
            title: title.to_owned(),
            status: status.as_u16(),
            detail,
            request_id,
            limit,
            max,
            reasons: match self {
                ApiError::PolicyRejected(reasons) => Some(reasons.clone()),
                _ => None,
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let request_id = request::current();
        let (status, name, _) = self.kind();
        match &self {
            ApiError::Unavailable(text) | ApiError::PolicyUnavailable(text) => {
                tracing::warn!(request_id, problem = name, "{text}")
            }
            ApiError::Internal(text) => tracing::error!(request_id, problem = name, "{text}"),
            _ => tracing::debug!(request_id, problem = name, "{self}"),
        }
        let problem = self.problem(request_id);
        let body = match serde_json::to_vec(&problem) {
            Ok(body) => body,
            // A struct of strings and numbers always serializes; the
            // fallback only keeps this path free of a panic.
            Err(_) => b"{}".to_vec(),
        };
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        match (status, &self) {
            (_, ApiError::RateLimited { retry_after_secs }) => {
                headers.insert(RETRY_AFTER, HeaderValue::from(*retry_after_secs));
            }
            (StatusCode::SERVICE_UNAVAILABLE, _) => {
                headers.insert(RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECS));
            }
            (StatusCode::UNAUTHORIZED, _) => {
                headers.insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            _ => {}
        }
        response
    }
}

/// Parses a JSON body, naming what is wrong with it.
pub fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::BadRequest(format!("invalid JSON body: {e}")))
}

/// Parses a path segment as a UUID.
pub fn parse_id(what: &str, text: &str) -> Result<uuid::Uuid, ApiError> {
    crate::store::parse_uuid(text)
        .map_err(|_| ApiError::BadRequest(format!("{what} {text:?} is not a UUID")))
}

/// A policy call whose task died answers 503, like a failed policy.
pub fn task_failed(e: PolicyTaskFailed) -> ApiError {
    ApiError::PolicyUnavailable(format!("policy task failed: {e}"))
}

/// An extraction the policy could not answer: a text over the sandbox's
/// limit is a 413 (it can never succeed as sent), any other failure a 503.
pub fn extraction_failed(e: PolicyFailure) -> ApiError {
    match e {
        PolicyFailure::InputTooLarge(_, max) => ApiError::TooLarge { limit: "text", max },
        e => ApiError::PolicyUnavailable(e.to_string()),
    }
}
