//! The policy routes: what runs (runtime scope), and the changes to it
//! (admin scope: upload, roll back), all through [`PolicyDeployment`], the
//! one way a revision is deployed.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use serde_json::{json, Value};

use super::error::ApiError;
use super::routes::task_failed;
use super::AppState;
use crate::deploy::DeployError;
use crate::policy::PolicyHandle;

/// The request header an upload's signature travels in: the `.sig` file's
/// one line, verbatim (`policy sign` writes it; see `crate::signing`). A
/// header rather than a multipart body keeps the body the component's bytes,
/// under the same size cap as before.
pub const SIGNATURE_HEADER: &str = "nomos-policy-signature";

/// The active revision and the runtime's counters.
pub(super) async fn policy_info(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let described = PolicyHandle::from(&state.policy)
        .describe()
        .await
        .map_err(task_failed)?;
    let stats = state.policy.stats();
    Ok(Json(json!({
        "revision": described.revision.0,
        "policy": described.value.ok(),
        "evaluations": stats.evaluations,
        "failures": stats.failures,
        "swaps": stats.swaps,
        "rejected_candidates": stats.rejected_candidates,
        "fallbacks": stats.fallbacks,
    })))
}

/// Deploys an uploaded component: vetted and swapped in here, then saved
/// and made active in the database, so every replica converges on it (the
/// same path a changed `--policy` file takes; see [`crate::deploy`]). Its
/// signature, if any, is the [`SIGNATURE_HEADER`]; with a verify key
/// configured, a missing or bad one is a 422 naming why.
pub(super) async fn upload_policy(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let bytes = state.caps.policy.take(body)?;
    if bytes.is_empty() {
        return Err(ApiError::BadRequest(
            "the body must be the policy component's bytes".into(),
        ));
    }
    let signature = match headers.get(SIGNATURE_HEADER) {
        Some(value) => Some(value.to_str().map_err(|_| {
            ApiError::BadRequest(format!("the {SIGNATURE_HEADER} header is not text"))
        })?),
        None => None,
    };
    let (revision, info) = state
        .deployment
        .upload(bytes.to_vec(), signature)
        .await
        .map_err(deploy_error)?;
    Ok(Json(json!({ "revision": revision.0, "policy": info })))
}

/// Returns to the previously active revision in one call: the operator's
/// undo after an upload that misbehaves (see
/// [`PolicyDeployment::rollback`]).
pub(super) async fn rollback_policy(
    State(state): State<AppState>,
) -> Result<Json<Value>, ApiError> {
    let (from, to) = state.deployment.rollback().await.map_err(deploy_error)?;
    Ok(Json(json!({ "from": from.0, "revision": to.0 })))
}

fn deploy_error(e: DeployError) -> ApiError {
    match e {
        DeployError::Rejected(e) => ApiError::PolicyRejected(e.reasons()),
        DeployError::Signature(e) => ApiError::PolicyRejected(vec![e.to_string()]),
        DeployError::Store(e) => e.into(),
        DeployError::Task(why) => ApiError::PolicyUnavailable(why),
        e @ (DeployError::NothingToRollBack | DeployError::Raced) => {
            ApiError::Conflict(e.to_string())
        }
    }
}
