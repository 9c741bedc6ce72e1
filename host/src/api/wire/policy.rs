//! The policy routes' shapes.

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::ToSchema;

use crate::policy::types as t;

/// What a policy component says of itself.
#[derive(Debug, Serialize, ToSchema)]
pub struct PolicyDescription {
    /// The name the policy declares.
    pub name: String,
    /// Its author's version text.
    pub version: String,
    /// The contract it implements (`nomos:continuation@<semver>`).
    pub contract: String,
}

impl From<t::PolicyInfo> for PolicyDescription {
    fn from(info: t::PolicyInfo) -> Self {
        Self {
            name: info.name,
            version: info.version,
            contract: info.contract,
        }
    }
}

/// The shadow revision: it decides beside the active one, and nothing it
/// decides acts.
#[derive(Debug, Serialize, ToSchema)]
pub struct ShadowInfo {
    /// SHA-256 of its component, lowercase hex.
    pub revision: String,
    /// What it says of itself, or `null` if it could not answer.
    pub policy: Option<PolicyDescription>,
    /// Disagreements with the active revision, recorded by every replica.
    pub disagreements: i64,
    /// Decisions it took in this process.
    pub decisions: u64,
    /// Of those, the ones it took differently, in this process.
    pub disagreements_here: u64,
    /// Batches it skipped in this process because its slot was busy.
    pub skipped_batches: u64,
    /// Its calls that failed in this process.
    pub failures: u64,
}

/// `GET /v1/policy`: the active revision and this process's counters.
#[derive(Debug, Serialize, ToSchema)]
pub struct PolicyStatus {
    /// SHA-256 of the active component, lowercase hex.
    pub revision: String,
    /// What it says of itself, or `null` if it could not answer.
    pub policy: Option<PolicyDescription>,
    /// Calls into the policy in this process.
    pub evaluations: u64,
    /// Failed calls by kind (`trap`, `timeout`, ...), in this process.
    pub failures: BTreeMap<String, u64>,
    /// Revisions activated in this process.
    pub swaps: u64,
    /// Candidates refused by the checks before activation.
    pub rejected_candidates: u64,
    /// Returns to the last good revision after repeated faults.
    pub fallbacks: u64,
    /// The shadow revision, or `null`.
    pub shadow: Option<ShadowInfo>,
}

/// Where an upload went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize, ToSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum UploadMode {
    /// The active revision, on every replica.
    #[default]
    Active,
    /// The shadow: it decides beside the active one and nothing it decides acts.
    Shadow,
}

/// `PUT /v1/policy`: the revision deployed.
#[derive(Debug, Serialize, ToSchema)]
pub struct PolicyUploaded {
    /// SHA-256 of the component, lowercase hex.
    pub revision: String,
    /// What it says of itself.
    pub policy: PolicyDescription,
    /// Where it went.
    pub mode: UploadMode,
}

/// A change of the active revision (a rollback, a promotion).
#[derive(Debug, Serialize, ToSchema)]
pub struct PolicySwitched {
    /// The revision active before.
    pub from: String,
    /// The revision active now.
    pub revision: String,
}

/// `DELETE /v1/policy/shadow`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ShadowDropped {
    /// Whether there was a shadow to take out of service (a repeat answers
    /// `false`).
    pub dropped: bool,
}
