//! The error shape: RFC 9457 problem details (`application/problem+json`).

use serde::Serialize;
use utoipa::ToSchema;

/// An error. `type` is stable across releases (a client branches on it);
/// `title` is fixed per type; `detail` explains this occurrence. Internal
/// error text never appears here: it is logged under `request_id`, which
/// is also the response's `x-request-id` header.
#[derive(Debug, Serialize, ToSchema)]
pub struct Problem {
    /// The kind of error, a URN `urn:nomos-continue:problem:<name>`
    /// (docs/api.md lists them).
    #[serde(rename = "type")]
    pub kind: String,
    /// A short summary of the kind of error.
    pub title: String,
    /// The HTTP status code.
    pub status: u16,
    /// What went wrong with this request.
    pub detail: String,
    /// Names this request in the server's log.
    pub request_id: String,
    /// The limit a request exceeded (`too-large` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
    /// That limit's size in bytes (`too-large` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<u64>,
    /// Why a policy was refused, one reason each (`policy-rejected` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasons: Option<Vec<String>>,
}
