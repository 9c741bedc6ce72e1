//! Policy deployment: which revision runs when a policy can come from three
//! places: a watched file (`serve --policy`), an upload (`PUT /v1/policy` on
//! any replica) and the database (what every replica converges on).
//!
//! # Precedence: the database decides
//!
//! What runs, on every replica, is the revision the database marks active.
//! The other sources only ever *write* there:
//!
//! - an upload is vetted and activated here, then saved and activated in the
//!   database ([`PolicyDeployment::upload`]);
//! - a watched file is uploaded the same way when its contents **change**,
//!   compared with the file as this process last saw it (not with the active
//!   revision), and at start-up when its contents are not a revision the
//!   database already has ([`FileWatcher`]);
//! - every replica polls the database's active revision and activates it
//!   ([`DbPolicyWatcher`]).
//!
//! So an upload wins until the file's contents change again, and restarting
//! with the same file does not undo it. Before this, the file and the
//! database each re-activated their own revision on every poll, and the
//! file silently undid every upload.
//!
//! Whichever way a revision becomes active here, the statuses of pending
//! work are classified under it at once (see [`crate::classes`]).
//!
//! # Signatures: checked at every activation
//!
//! With a verify key (`serve --policy-verify-key`), a revision runs only
//! with a valid signature by that key ([`PolicyDeployment::verify`]).
//! Every way in passes through here, so the check sits here, before any
//! swap: an upload and the watched file (signature from the request or
//! `FILE.sig`) and every revision read from the database, whether the
//! database watcher activates what another replica stored or a rollback
//! returns to an older one (signature from the row, since a replica without
//! the key may have stored it). The built-in policy is part of the binary,
//! which is signed off with it, and needs none.
//!
//! A candidate can also run in shadow beside the active revision, shared
//! through the database the same way (see `shadow`), and verified the same
//! way.
//!
//! Why a module of its own: the sandbox (`policy`) knows components, not the
//! database; the store knows rows, not components. This is where the two
//! meet.

use std::sync::Arc;

use crate::classes::StatusClasses;
use crate::clock::Clock;
use crate::policy::types::PolicyInfo;
use crate::policy::{PolicyError, PolicyHandle, PolicyRuntime, Revision, BUILTIN_POLICY_WASM};
use crate::signing::{Keyring, Signature, SignatureError};
use crate::store::{Store, StoreError};

mod database;
mod file;
mod shadow;
mod watch;

pub use database::DbPolicyWatcher;
pub use file::FileWatcher;
pub use watch::Look;

/// Why an upload did not become the active revision everywhere.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    /// The component failed its checks: it was activated nowhere.
    #[error(transparent)]
    Rejected(#[from] PolicyError),
    /// A verify key is configured and the revision's signature is missing
    /// or does not verify: it was activated nowhere.
    #[error(transparent)]
    Signature(#[from] SignatureError),
    /// The component passed and runs here, but the database did not record
    /// it; the other replicas (and this one, at its next database poll)
    /// keep the database's revision.
    #[error("record the policy in the database: {0}")]
    Store(#[from] StoreError),
    /// The blocking vetting task died (a panic in the compiler).
    #[error("policy check task failed: {0}")]
    Task(String),
    /// A rollback with nothing to return to: no revision is active in the
    /// database, or no other revision was ever activated.
    #[error("no previous policy revision to roll back to")]
    NothingToRollBack,
    /// Another activation (or shadow change) landed while a rollback or a
    /// promotion was being prepared; it changed nothing in the database
    /// (this replica converges on the database's revisions at its next
    /// poll).
    #[error("the policy revision changed meanwhile; nothing was changed")]
    Raced,
    /// A promotion with no revision in shadow in the database.
    #[error("no policy revision is in shadow")]
    NoShadow,
}

/// What one look of a watcher found.
#[derive(Debug)]
pub enum WatchOutcome {
    /// Nothing to do: the file has not changed, or this process already
    /// runs the database's active revision.
    Unchanged,
    /// A new revision was activated.
    Activated(Revision),
    /// A new revision was refused; the reasons are kept so the same bad
    /// revision is reported once, not on every look. (The refusal is
    /// logged where it happens; tests read the revision and reasons.)
    #[cfg_attr(not(feature = "test-support"), allow(dead_code))]
    Rejected(Revision, Vec<String>),
    /// The look failed (the file is unreadable, perhaps mid-write, or the
    /// database is unreachable); tried again at the next look.
    Failed(String),
}

/// The one way a policy revision is deployed. Cheap to clone.
#[derive(Clone)]
pub struct PolicyDeployment {
    policy: PolicyHandle,
    store: Store,
    clock: Arc<dyn Clock>,
    verify_keys: Option<Keyring>,
    /// The one in-process copy of the status classes, shared with the API
    /// and the worker (see [`PolicyDeployment::classes`]).
    classes: StatusClasses,
}

impl PolicyDeployment {
    /// The deployment of `runtime`'s policy through `store`, stamping
    /// records with `clock`. With `verify_keys`, every revision but the
    /// built-in one must be signed by one of them. (A required argument, so
    /// no caller builds a deployment that skips the check by forgetting it.)
    pub fn new(
        runtime: Arc<PolicyRuntime>,
        store: Store,
        clock: Arc<dyn Clock>,
        verify_keys: Option<Keyring>,
    ) -> Self {
        let policy = PolicyHandle::from(&runtime);
        Self {
            classes: StatusClasses::new(store.clone(), policy.clone(), clock.clone()),
            policy,
            store,
            clock,
            verify_keys,
        }
    }

    /// The status classes of the deployed policy. The assembly hands this
    /// one copy to the API and the worker: a copy per user would read the
    /// table on every report (an answer kept by one would serve no other).
    pub fn classes(&self) -> StatusClasses {
        self.classes.clone()
    }

    /// The check every revision passes before it is activated, here or in
    /// the database, by any path (see the module docs): the signature line
    /// `signature` (as uploaded, from `FILE.sig` or from the row) must be
    /// by a verify key and over exactly `wasm`. Without a verify key
    /// nothing is checked, but a signature given is parsed (a malformed one
    /// is refused), so it can be recorded for replicas that have the key.
    /// Answers the signature to record.
    pub fn verify(
        &self,
        wasm: &[u8],
        signature: Option<&str>,
    ) -> Result<Option<Signature>, SignatureError> {
        verify_revision(self.verify_keys.as_ref(), wasm, signature)
    }

    /// Verifies (see [`Self::verify`]) and vets `bytes` and activates them
    /// here (a refused component changes nothing, anywhere), then saves and
    /// activates the revision in the database, with its signature, so every
    /// replica converges on it. Answers the revision and the policy's own
    /// description.
    pub async fn upload(
        &self,
        bytes: Vec<u8>,
        signature: Option<&str>,
    ) -> Result<(Revision, PolicyInfo), DeployError> {
        let signed = self.verify(&bytes, signature)?;
        // One compile: `activate` vets the candidate before swapping (and
        // keeps it compiled, so a later rollback or swap back to it compiles
        // nothing here), and the description is read from the revision now
        // active.
        let checked = self
            .policy
            .run(move |runtime| {
                let before = runtime.active_revision();
                let before_info = runtime.describe().value.ok();
                let revision = runtime.activate(&bytes)?;
                let described = runtime.describe();
                let info = match described.value {
                    Ok(info) if described.revision == revision => info,
                    _ => unknown_info(),
                };
                Ok::<_, PolicyError>((revision, info, bytes, before, before_info))
            })
            .await
            .map_err(|e| DeployError::Task(e.to_string()))?;
        let (revision, info, bytes, before, before_info) = checked?;
        let now = self.clock.now();
        self.record_builtin(&before, before_info, now).await?;
        self.save_signed(&revision, &bytes, &info, signed.as_ref(), now)
            .await?;
        self.store.activate_policy(&revision.0, now).await?;
        self.classify_pending().await;
        Ok((revision, info))
    }

    /// A stored revision about to become active (a rollback's target, a
    /// promoted shadow): its recorded signature verified and the component
    /// vetted here without a swap, so a revision this replica refuses is
    /// activated nowhere. Answers its revision and hands the bytes back.
    async fn vet_stored(
        &self,
        wasm: Vec<u8>,
        signature: Option<&str>,
    ) -> Result<(Revision, Vec<u8>), DeployError> {
        self.verify(&wasm, signature)?;
        let (checked, wasm) = self
            .policy
            .run(move |runtime| (runtime.check(&wasm).map(|(revision, _)| revision), wasm))
            .await
            .map_err(|e| DeployError::Task(e.to_string()))?;
        Ok((checked?, wasm))
    }

    /// Saves a verified revision with its signature (if any), so every
    /// replica, and a later rollback, can verify it again from the row.
    async fn save_signed(
        &self,
        revision: &Revision,
        bytes: &[u8],
        info: &PolicyInfo,
        signed: Option<&Signature>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<(), StoreError> {
        self.store
            .save_policy_revision(&revision.0, bytes, &info.name, &info.version, now)
            .await?;
        if let Some(signed) = signed {
            self.store
                .record_policy_signature(&revision.0, &signed.key_id.0, &signed.to_line())
                .await?;
        }
        Ok(())
    }

    /// Keeps this binary's built-in policy in the store by hash, without
    /// activating it: it decides whenever nothing else is active, and is
    /// the fall-back after faults, so the decision log names it; `policy
    /// replay` loads every revision it names from the store, including a
    /// built-in of an older binary.
    pub async fn keep_builtin(&self) -> Result<(), DeployError> {
        let builtin = Revision::of(BUILTIN_POLICY_WASM);
        let described = (self.policy)
            .describe()
            .await
            .map_err(|e| DeployError::Task(e.to_string()))?;
        let info = match described.value {
            Ok(info) if described.revision == builtin => info,
            _ => unknown_info(),
        };
        self.store
            .save_policy_revision(
                &builtin.0,
                BUILTIN_POLICY_WASM,
                &info.name,
                &info.version,
                self.clock.now(),
            )
            .await?;
        Ok(())
    }

    /// The first upload to a database with no active revision replaces the
    /// built-in policy, which was never recorded: it is recorded (and its
    /// activation logged) first, so a rollback can return to it.
    async fn record_builtin(
        &self,
        before: &Revision,
        info: Option<PolicyInfo>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<(), StoreError> {
        if *before != Revision::of(BUILTIN_POLICY_WASM)
            || self.store.active_policy().await?.is_some()
        {
            return Ok(());
        }
        let info = info.unwrap_or_else(unknown_info);
        self.store
            .save_policy_revision(
                &before.0,
                BUILTIN_POLICY_WASM,
                &info.name,
                &info.version,
                now,
            )
            .await?;
        self.store.activate_policy(&before.0, now).await
    }

    /// Returns to the previously active revision in one step (see
    /// [`Store::rollback_target`]): vetted here without a swap, made active
    /// in the database only if the revision it replaces is still the active
    /// one, then swapped in here (on the compile the vetting did: the
    /// runtime keeps compiled revisions). So a rollback that loses a race changes
    /// nothing anywhere, and this replica never runs a revision the
    /// database did not make active. The target's recorded signature is
    /// verified first, as for any revision. Answers `(from, to)`.
    pub async fn rollback(&self) -> Result<(Revision, Revision), DeployError> {
        let (current, target) = self
            .store
            .rollback_target()
            .await?
            .ok_or(DeployError::NothingToRollBack)?;
        let (revision, wasm) = self
            .vet_stored(target.wasm, target.signature.as_deref())
            .await?;
        let replaced = self
            .store
            .replace_active_policy(&current, &revision.0, self.clock.now())
            .await?;
        if !replaced {
            return Err(DeployError::Raced);
        }
        // The database names it now: a failure here is corrected by the
        // database watcher, which converges on it.
        match self.policy.activate(wasm).await {
            Ok(Ok(_)) => self.classify_pending().await,
            Ok(Err(e)) => {
                tracing::error!(revision = %revision.short(), "rolled back in the database but refused here: {e}")
            }
            Err(e) => tracing::warn!("rolled back in the database; the swap here failed: {e}"),
        }
        Ok((Revision(current), revision))
    }

    /// A swap reclassifies: the statuses of work still pending are
    /// classified under the revision now active and kept, so the first pass
    /// after the swap does not pay for them (classes are read under the
    /// active revision, so the old revision's are not used either way). A
    /// failure here is logged, not returned: the revision is active, and
    /// each status is classified when it is next needed.
    async fn classify_pending(&self) {
        match self.classes.classify_pending().await {
            Ok(0) => {}
            Ok(asked) => tracing::info!(statuses = asked, "pending statuses classified"),
            Err(e) => tracing::warn!("classify pending statuses under the new revision: {e}"),
        }
    }

    /// Whether the database has stored `revision` with the signature of
    /// `key_id` (any, or none, when `key_id` is `None`): a file saved
    /// unsigned and signed since is news, its signature is to be recorded.
    async fn is_saved(
        &self,
        revision: &Revision,
        key_id: Option<&str>,
    ) -> Result<bool, StoreError> {
        let saved = self.store.policy_revisions().await?;
        Ok(saved
            .iter()
            .any(|r| r.hash == revision.0 && (key_id.is_none() || r.key_id.as_deref() == key_id)))
    }
}

/// [`PolicyDeployment::verify`], for a caller that checks a revision
/// before any deployment exists (`serve` loading `--policy` at start-up).
pub fn verify_revision(
    keys: Option<&Keyring>,
    wasm: &[u8],
    signature: Option<&str>,
) -> Result<Option<Signature>, SignatureError> {
    let signature = signature.map(Signature::parse).transpose()?;
    let Some(keys) = keys else {
        return Ok(signature);
    };
    if wasm == BUILTIN_POLICY_WASM {
        return Ok(signature);
    }
    let signature = signature.ok_or(SignatureError::Missing)?;
    keys.verify(wasm, &signature)?;
    Ok(Some(signature))
}

/// What is recorded of a policy that could not describe itself.
fn unknown_info() -> PolicyInfo {
    PolicyInfo {
        name: "unknown".into(),
        version: "unknown".into(),
        contract: String::new(),
    }
}
