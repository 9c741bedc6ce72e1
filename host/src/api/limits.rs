//! The API's size limits, each with a name a client can act on.
//!
//! A request over a limit can never succeed as sent, so it is a 413 whose
//! JSON body names the limit and its size (`{"error", "limit", "max"}`),
//! never a 503: a 503 tells the runtime to retry, and it would retry
//! forever. Each route has its own body cap, sized to what its largest
//! legitimate body can be, so a small route does not buffer megabytes.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;

use super::ApiError;
use crate::policy::Limits;

/// Room for a JSON body's keys, quotes and escapes around its text fields.
/// Escaping can grow text up to sixfold (`\u0000`); a body that escaped
/// beyond this gets the body's 413, which names the body cap.
const JSON_OVERHEAD: usize = 64 << 10;
use crate::intake::MAX_TURN_BYTES;
/// Bodies with a few small fields (approvals, retries).
const SMALL_BODY: usize = 16 << 10;
/// Largest policy component accepted for upload. An interpreted policy
/// carries its interpreter and a snapshot of its heap: a Python component
/// (componentize-py) is about 40 MB, a JavaScript one about 10 MB. The body
/// is held in memory once while it is compiled, and the database watcher
/// reads it again only on a change of revision (it compares hashes).
pub const MAX_POLICY_BYTES: usize = 128 << 20;

/// One route's body cap.
#[derive(Debug, Clone, Copy)]
pub struct BodyCap {
    /// The limit's name in a 413 body.
    pub name: &'static str,
    /// Most bytes of the body.
    pub max: usize,
}

impl BodyCap {
    /// The layer that enforces this cap while the body is read.
    pub fn layer(self) -> DefaultBodyLimit {
        DefaultBodyLimit::max(self.max)
    }

    /// The body, or the 413 that names this cap.
    pub fn take(self, body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
        body.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::TooLarge {
                    limit: self.name,
                    max: self.max,
                }
            } else {
                ApiError::BadRequest(e.body_text())
            }
        })
    }
}

/// Every route's body cap, from the policy's limits: a tool result or an
/// execution's result may be as large as the policy accepts, and no larger.
#[derive(Debug, Clone, Copy)]
pub struct BodyCaps {
    /// `POST /v1/sessions/{id}/tool-results`.
    pub tool_result: BodyCap,
    /// `PUT /v1/executions/{id}`.
    pub execution: BodyCap,
    /// `POST /v1/sessions/{id}/turns`.
    pub turn: BodyCap,
    /// Approvals and retries.
    pub small: BodyCap,
    /// `PUT /v1/policy`.
    pub policy: BodyCap,
    /// The console's playground decide: a decision input (quoting a result
    /// up to the text limit) sent as a JSON string, so escaped twice.
    pub decision_input: BodyCap,
}

impl BodyCaps {
    /// The caps for a sandbox with these limits.
    pub fn for_limits(limits: &Limits) -> Self {
        let text = limits.max_text_bytes;
        Self {
            tool_result: BodyCap {
                name: "tool_result_body_bytes",
                max: text + JSON_OVERHEAD,
            },
            execution: BodyCap {
                name: "execution_body_bytes",
                max: text + JSON_OVERHEAD,
            },
            turn: BodyCap {
                name: "turn_body_bytes",
                max: MAX_TURN_BYTES + JSON_OVERHEAD,
            },
            small: BodyCap {
                name: "body_bytes",
                max: SMALL_BODY,
            },
            policy: BodyCap {
                name: "policy_bytes",
                max: MAX_POLICY_BYTES,
            },
            decision_input: BodyCap {
                name: "decision_input_body_bytes",
                max: 2 * text + JSON_OVERHEAD,
            },
        }
    }
}
