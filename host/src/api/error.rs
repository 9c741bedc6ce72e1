//! Every error the API returns: a status and a JSON body `{"error": "…"}`
//! (plus `"reasons"` for a refused policy). Malformed requests are 4xx,
//! never 500.

use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::store::StoreError;

/// An API failure.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request is malformed (bad JSON, a bad UUID, a bad value).
    #[error("{0}")]
    BadRequest(String),
    #[error("missing or wrong bearer token")]
    /// `serve --token` is set and the request lacks that bearer token (401).
    Unauthorized,
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
    #[error("request body too large: {0}")]
    /// A body over the limit (413): refused before it is parsed.
    TooLarge(String),
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

impl From<BytesRejection> for ApiError {
    fn from(e: BytesRejection) -> Self {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::TooLarge(e.body_text())
        } else {
            ApiError::BadRequest(e.body_text())
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = match &self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::PolicyRejected(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::PolicyUnavailable(_) | ApiError::Unavailable(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
        };
        let body = match &self {
            ApiError::PolicyRejected(reasons) => {
                json!({ "error": self.to_string(), "reasons": reasons })
            }
            _ => json!({ "error": self.to_string() }),
        };
        (status, Json(body)).into_response()
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
