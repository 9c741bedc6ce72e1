//! Every error the API returns: a status and a JSON body `{"error": "…"}`
//! (plus `"reasons"` for a refused policy, `"limit"` and `"max"` for a
//! request over a limit). Malformed requests are 4xx, never 500; a 503 is
//! only for a condition that passes (the database or the policy is
//! unavailable) and always carries `Retry-After`.

use axum::extract::rejection::PathRejection;
use axum::http::header::{RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

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
    /// The policy could not answer (it trapped or timed out); not the
    /// client's fault, and worth retrying.
    #[error("policy unavailable: {0}")]
    PolicyUnavailable(String),
    /// The database failed; worth retrying.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// A fault of this process (a console template that failed to render),
    /// not of the request (500).
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
            other => ApiError::Unavailable(other.to_string()),
        }
    }
}

/// A path segment axum could not decode (invalid percent-encoded UTF-8):
/// its own answer is plain text, so it is turned into the JSON 400 here.
impl From<PathRejection> for ApiError {
    fn from(e: PathRejection) -> Self {
        ApiError::BadRequest(e.body_text())
    }
}

/// Seconds a client is told to wait before retrying a 503.
const RETRY_AFTER_SECS: &str = "1";

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = match &self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::PolicyRejected(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::PolicyUnavailable(_) | ApiError::Unavailable(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let body = match &self {
            ApiError::PolicyRejected(reasons) => {
                json!({ "error": self.to_string(), "reasons": reasons })
            }
            ApiError::TooLarge { limit, max } => {
                json!({ "error": self.to_string(), "limit": limit, "max": max })
            }
            _ => json!({ "error": self.to_string() }),
        };
        let mut response = (status, Json(body)).into_response();
        let headers = response.headers_mut();
        match status {
            StatusCode::SERVICE_UNAVAILABLE => {
                headers.insert(RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECS));
            }
            StatusCode::UNAUTHORIZED => {
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

/// Refuses text with a NUL character before it reaches the store:
/// PostgreSQL cannot store one in a `TEXT` column (a database error, so a
/// 503) while SQLite can, and the same request must get the same answer
/// from either backend.
pub fn storable(field: &str, text: &str) -> Result<(), ApiError> {
    if text.contains('\0') {
        return Err(ApiError::BadRequest(format!(
            "{field} must not contain a NUL character"
        )));
    }
    Ok(())
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
