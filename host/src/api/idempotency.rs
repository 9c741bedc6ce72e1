//! `Idempotency-Key` on the writes that are not idempotent by nature (a
//! chat turn, a delivery retry): a runtime that retries after a time-out
//! must not record the turn twice.
//!
//! The same key with the same request (scope, target and body bytes) answers
//! the first answer, marked `Idempotent-Replayed: true`; the same key with
//! another request is a 422; while the first request is still being handled
//! a second one is a 409. Only successes are kept: a failed request leaves
//! its key free, so its retry acts. Keys are kept at least 24 hours (see
//! `maintenance::retention`). Writes without the header act as before.

use std::future::Future;

use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::Duration;
use serde::Serialize;
use sha2::{Digest, Sha256};
use utoipa::IntoParams;

use super::error::ApiError;
use super::AppState;
use crate::store::KeyClaim;

/// The request header.
pub const KEY_HEADER: &str = "idempotency-key";
/// The response header on a replayed answer.
pub const REPLAYED_HEADER: &str = "idempotent-replayed";
/// Longest key accepted.
const MAX_KEY_LEN: usize = 255;
/// A reservation older than this is a request whose process died (or that
/// hangs far past any client's time-out): another request may take it over.
const STALE_AFTER: Duration = Duration::minutes(1);

/// The header, for the OpenAPI document.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)]
pub(super) struct KeyHeader {
    /// Makes a retry of this request safe: the same key with the same
    /// request answers the first answer; with another request it is a 422.
    /// 1 to 255 visible ASCII characters; kept at least 24 hours.
    #[param(
        rename = "Idempotency-Key",
        min_length = 1,
        max_length = 255,
        pattern = "^[!-~]+$",
        nullable = false
    )]
    idempotency_key: Option<String>,
}

/// One write, as its key is judged.
pub(super) struct Request {
    scope: &'static str,
    key: Option<String>,
    hash: String,
}

impl Request {
    /// The write `scope` on `target` with `body`; its key, if `headers`
    /// carry one (a malformed key is a 400).
    pub(super) fn new(
        scope: &'static str,
        target: &str,
        body: &[u8],
        headers: &HeaderMap,
    ) -> Result<Self, ApiError> {
        let key = match headers.get(KEY_HEADER) {
            None => None,
            Some(value) => {
                let text = value.to_str().ok().filter(|t| {
                    (1..=MAX_KEY_LEN).contains(&t.len()) && t.bytes().all(|b| b.is_ascii_graphic())
                });
                let Some(text) = text else {
                    return Err(ApiError::BadRequest(format!(
                        "the Idempotency-Key header must be 1 to {MAX_KEY_LEN} visible ASCII characters"
                    )));
                };
                Some(text.to_owned())
            }
        };
        let mut digest = Sha256::new();
        for part in [scope.as_bytes(), b"\n", target.as_bytes(), b"\n", body] {
            digest.update(part);
        }
        Ok(Self {
            scope,
            key,
            hash: hex::encode(digest.finalize()),
        })
    }
}

/// Runs `act` at most once per key (see the module docs) and answers its
/// result as JSON.
pub(super) async fn once<T, F, Fut>(
    state: &AppState,
    request: Request,
    act: F,
) -> Result<Response, ApiError>
where
    T: Serialize,
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<T, ApiError>>,
{
    let Some(key) = request.key else {
        return act().await.map(|answer| Json(answer).into_response());
    };
    let scope = request.scope;
    let now = state.clock.now();
    let claim = state
        .store
        .reserve_key(scope, &key, &request.hash, now, now - STALE_AFTER)
        .await?;
    match claim {
        KeyClaim::Reserved => {}
        KeyClaim::Answered {
            request_hash,
            response,
        } if request_hash == request.hash => return Ok(replayed(response)),
        KeyClaim::InFlight { request_hash } if request_hash == request.hash => {
            return Err(ApiError::Conflict(format!(
                "a request with Idempotency-Key {key:?} is still being handled; retry it"
            )))
        }
        KeyClaim::Answered { .. } | KeyClaim::InFlight { .. } => {
            return Err(ApiError::KeyReused(format!(
                "Idempotency-Key {key:?} was used with another request"
            )))
        }
    }
    match act().await {
        Ok(answer) => {
            let body = serde_json::to_string(&answer)
                .map_err(|e| ApiError::Internal(format!("serialize an answer: {e}")))?;
            // The effect happened: a failure to keep the answer is logged,
            // not returned (a retry after a minute would act again).
            if let Err(e) = state.store.complete_key(scope, &key, &body).await {
                tracing::warn!("keep the answer of Idempotency-Key {key:?}: {e}");
            }
            Ok((
                [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
                body,
            )
                .into_response())
        }
        Err(e) => {
            if let Err(release) = state.store.release_key(scope, &key).await {
                tracing::warn!("free Idempotency-Key {key:?} after a failure: {release}");
            }
            Err(e)
        }
    }
}

/// A kept answer, sent again.
fn replayed(body: String) -> Response {
    (
        [
            (CONTENT_TYPE, HeaderValue::from_static("application/json")),
            (
                axum::http::HeaderName::from_static(REPLAYED_HEADER),
                HeaderValue::from_static("true"),
            ),
        ],
        body,
    )
        .into_response()
}
