//! The policy routes: what runs (runtime scope), and the changes to it
//! (admin scope: upload, roll back), all through [`PolicyDeployment`], the
//! one way a revision is deployed.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use super::error::ApiError;
use super::routes::task_failed;
use super::AppState;
use crate::deploy::{DeployError, PolicyDeployment};
use crate::policy::PolicyHandle;

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
/// same path a changed `--policy` file takes; see [`crate::deploy`]).
pub(super) async fn upload_policy(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let bytes = state.caps.policy.take(body)?;
    if bytes.is_empty() {
        return Err(ApiError::BadRequest(
            "the body must be the policy component's bytes".into(),
        ));
    }
    let deployment = PolicyDeployment::new(state.policy, state.store, state.clock);
    let (revision, info) = deployment
        .upload(bytes.to_vec())
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
    let deployment = PolicyDeployment::new(state.policy, state.store, state.clock);
    let (from, to) = deployment.rollback().await.map_err(deploy_error)?;
    Ok(Json(json!({ "from": from.0, "revision": to.0 })))
}

fn deploy_error(e: DeployError) -> ApiError {
    match e {
        DeployError::Rejected(e) => ApiError::PolicyRejected(e.reasons()),
        DeployError::Store(e) => e.into(),
        DeployError::Task(why) => ApiError::PolicyUnavailable(why),
        e @ (DeployError::NothingToRollBack | DeployError::Raced | DeployError::NoShadow) => {
            ApiError::Conflict(e.to_string())
        }
    }
}
