//! The policy routes: what runs (runtime scope), and the changes to it
//! (admin scope: upload, in shadow or active; promote or drop the shadow;
//! roll back), all through [`PolicyDeployment`], the one way a revision is
//! deployed.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;

use super::error::task_failed;
use super::error::ApiError;
use super::wire::{
    PolicyDescription, PolicyStatus, PolicySwitched, PolicyUploaded, Problem, ShadowDropped,
    ShadowInfo, UploadMode,
};
use super::AppState;
use crate::deploy::DeployError;
use crate::policy::PolicyHandle;

/// The request header an upload's signature travels in: the `.sig` file's
/// one line, verbatim (`policy sign` writes it; see `crate::signing`). A
/// header rather than a multipart body keeps the body the component's bytes,
/// under the same size cap as before.
pub const SIGNATURE_HEADER: &str = "nomos-policy-signature";

/// The active revision and the runtime's counters, and the shadow revision
/// (or `null`) with its disagreements: recorded in the database by every
/// replica, and this process's counters.
#[utoipa::path(get, path = "/v1/policy", tag = "policy",
    responses((status = 200, description = "The active and shadow revisions", body = PolicyStatus)))]
pub(super) async fn policy_info(
    State(state): State<AppState>,
) -> Result<Json<PolicyStatus>, ApiError> {
    let policy = PolicyHandle::from(&state.policy);
    let described = policy.describe().await.map_err(task_failed)?;
    let shadow = policy
        .run(|runtime| runtime.shadow_describe())
        .await
        .map_err(task_failed)?;
    let shadow = match shadow {
        None => None,
        Some((revision, info)) => {
            let recorded = state.store.count_disagreements(&revision.0).await?;
            let stats = state.policy.shadow().stats();
            Some(ShadowInfo {
                revision: revision.0,
                policy: info.ok().map(PolicyDescription::from),
                disagreements: recorded,
                decisions: stats.decisions,
                disagreements_here: stats.disagreements,
                skipped_batches: stats.skipped_batches,
                failures: stats.failures,
            })
        }
    };
    let stats = state.policy.stats();
    Ok(Json(PolicyStatus {
        revision: described.revision.0,
        policy: described.value.ok().map(PolicyDescription::from),
        evaluations: stats.evaluations,
        failures: stats
            .failures
            .iter()
            .map(|(kind, n)| ((*kind).to_owned(), *n))
            .collect(),
        swaps: stats.swaps,
        rejected_candidates: stats.rejected_candidates,
        fallbacks: stats.fallbacks,
        shadow,
    }))
}

/// Where an upload goes: `?mode=active` (the default) or `?mode=shadow`.
#[derive(Deserialize, Default, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct UploadQuery {
    /// `active` (the default): deploy on every replica; `shadow`: decide
    /// beside the active revision, acting on nothing.
    #[serde(default)]
    #[param(inline)]
    mode: Option<UploadMode>,
}

/// The signature header, for the OpenAPI document.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)]
pub(super) struct SignatureHeader {
    /// The `.sig` file's one line (`nomos-continue policy sign` writes it);
    /// required when the server has a verify key.
    #[param(rename = "Nomos-Policy-Signature", nullable = false)]
    signature: Option<String>,
}

/// Deploys an uploaded component: vetted and swapped in here, then saved
/// and made active in the database, so every replica converges on it (the
/// same path a changed `--policy` file takes; see [`crate::deploy`]). Its
/// signature, if any, is the [`SIGNATURE_HEADER`]; with a verify key
/// configured, a missing or bad one is a 422 naming why. With
/// `?mode=shadow` it is verified and vetted the same way but put in shadow
/// instead: it decides beside the active revision, and nothing it decides
/// acts.
#[utoipa::path(put, path = "/v1/policy", tag = "policy", params(UploadQuery, SignatureHeader),
    request_body(description = "The policy component's bytes (`application/wasm` is accepted too)",
        content_type = "application/octet-stream", content = String),
    responses((status = 200, description = "Deployed", body = PolicyUploaded),
        (status = 422, description = "The component failed its checks, or its signature",
            body = Problem, content_type = "application/problem+json")))]
pub(super) async fn upload_policy(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<UploadQuery>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<PolicyUploaded>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let mode = query.mode.unwrap_or_default();
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
    let deployment = &state.deployment;
    let (revision, info) = match mode {
        UploadMode::Active => deployment.upload(bytes.to_vec(), signature).await,
        UploadMode::Shadow => deployment.upload_shadow(bytes.to_vec(), signature).await,
    }
    .map_err(deploy_error)?;
    Ok(Json(PolicyUploaded {
        revision: revision.0,
        policy: info.into(),
        mode,
    }))
}

/// Makes the shadow the active revision through the normal activation (so
/// a rollback undoes it) and clears the shadow (see
/// [`PolicyDeployment::promote_shadow`]); verified like any activation.
#[utoipa::path(post, path = "/v1/policy/shadow/promote", tag = "policy",
    responses((status = 200, description = "The shadow is the active revision", body = PolicySwitched),
        (status = 409, description = "There is no shadow", body = Problem,
            content_type = "application/problem+json"),
        (status = 422, description = "The shadow's signature does not verify", body = Problem,
            content_type = "application/problem+json")))]
pub(super) async fn promote_shadow(
    State(state): State<AppState>,
) -> Result<Json<PolicySwitched>, ApiError> {
    let (from, to) = state
        .deployment
        .promote_shadow()
        .await
        .map_err(deploy_error)?;
    Ok(Json(PolicySwitched {
        from: from.0,
        revision: to.0,
    }))
}

/// Takes the shadow out of service everywhere; its recorded disagreements
/// are kept.
#[utoipa::path(delete, path = "/v1/policy/shadow", tag = "policy",
    responses((status = 200, description = "No shadow any more", body = ShadowDropped)))]
pub(super) async fn drop_shadow(
    State(state): State<AppState>,
) -> Result<Json<ShadowDropped>, ApiError> {
    let dropped = state.deployment.drop_shadow().await.map_err(deploy_error)?;
    Ok(Json(ShadowDropped { dropped }))
}

/// Returns to the previously active revision in one call: the operator's
/// undo after an upload that misbehaves (see
/// [`PolicyDeployment::rollback`]).
#[utoipa::path(post, path = "/v1/policy/rollback", tag = "policy",
    responses((status = 200, description = "The previous revision is active", body = PolicySwitched),
        (status = 409, description = "There is nothing to roll back to", body = Problem,
            content_type = "application/problem+json"),
        (status = 422, description = "The previous revision's signature does not verify",
            body = Problem, content_type = "application/problem+json")))]
pub(super) async fn rollback_policy(
    State(state): State<AppState>,
) -> Result<Json<PolicySwitched>, ApiError> {
    let (from, to) = state.deployment.rollback().await.map_err(deploy_error)?;
    Ok(Json(PolicySwitched {
        from: from.0,
        revision: to.0,
    }))
}

fn deploy_error(e: DeployError) -> ApiError {
    match e {
        DeployError::Rejected(e) => ApiError::PolicyRejected(e.reasons()),
        DeployError::Signature(e) => ApiError::PolicyRejected(vec![e.to_string()]),
        DeployError::Store(e) => e.into(),
        DeployError::Task(why) => ApiError::PolicyUnavailable(why),
        e @ (DeployError::NothingToRollBack | DeployError::Raced | DeployError::NoShadow) => {
            ApiError::Conflict(e.to_string())
        }
    }
}
