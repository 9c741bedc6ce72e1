//! The shadow revision's deployment: put a candidate in shadow, promote it,
//! drop it, and converge every replica on the database's shadow.
//!
//! The same rules as the active revision's (see the parent module): the
//! database decides which revision is in shadow, a candidate is vetted by
//! the same checks as any upload before it goes anywhere, and a promotion
//! is an activation like any other (logged, so a rollback returns to the
//! revision it replaced).

use super::{DeployError, PolicyDeployment, WatchOutcome};
use crate::policy::types::PolicyInfo;
use crate::policy::Revision;

impl PolicyDeployment {
    /// Verifies (see [`PolicyDeployment::verify`]) and vets `bytes` as an
    /// upload is vetted and puts them in shadow here (a refused component
    /// changes nothing, anywhere), then saves the revision, with its
    /// signature, and makes it the database's shadow, so every replica runs
    /// it beside its active revision. Answers the revision and its
    /// description.
    pub async fn upload_shadow(
        &self,
        bytes: Vec<u8>,
        signature: Option<&str>,
    ) -> Result<(Revision, PolicyInfo), DeployError> {
        let signed = self.verify(&bytes, signature)?;
        let (checked, bytes) = self
            .policy
            .run(move |runtime| (runtime.set_shadow(&bytes), bytes))
            .await
            .map_err(|e| DeployError::Task(e.to_string()))?;
        let (revision, info) = checked?;
        let now = self.clock.now();
        self.save_signed(&revision, &bytes, &info, signed.as_ref(), now)
            .await?;
        self.store.set_policy_shadow(&revision.0, now).await?;
        Ok((revision, info))
    }

    /// Makes the database's shadow the active revision and clears the
    /// shadow, through the normal activation (vetted again here, logged),
    /// so `rollback` returns to the revision it replaced. Answers
    /// `(from, to)`: the revision active before, and the promoted one.
    pub async fn promote_shadow(&self) -> Result<(Revision, Revision), DeployError> {
        let shadow = self
            .store
            .policy_shadow()
            .await?
            .ok_or(DeployError::NoShadow)?;
        let before = self.policy.runtime().active_revision();
        let before_info = self.policy.describe().await.ok().and_then(|d| d.value.ok());
        let (revision, wasm) = self
            .vet_stored(shadow.wasm, shadow.signature.as_deref())
            .await?;
        let now = self.clock.now();
        self.record_builtin(&before, before_info, now).await?;
        if !self.store.promote_policy_shadow(&revision.0, now).await? {
            return Err(DeployError::Raced);
        }
        self.policy.runtime().clear_shadow();
        // The database names it now: a failure here is corrected by the
        // database watcher, which converges on it.
        match self.policy.activate(wasm).await {
            Ok(Ok(_)) => self.classify_pending().await,
            Ok(Err(e)) => {
                tracing::error!(revision = %revision.short(), "promoted in the database but refused here: {e}")
            }
            Err(e) => tracing::warn!("promoted in the database; the swap here failed: {e}"),
        }
        Ok((before, revision))
    }

    /// Takes the shadow out of service everywhere: the database first,
    /// then here (the other replicas follow at their next poll). Answers
    /// whether there was one.
    pub async fn drop_shadow(&self) -> Result<bool, DeployError> {
        let dropped = self.store.clear_policy_shadow().await?;
        self.policy.runtime().clear_shadow();
        Ok(dropped)
    }

    /// One look of the database watcher at the shadow: puts the database's
    /// shadow in shadow here (verified like an active revision), or clears
    /// it when the database has none. A refused revision is reported once
    /// (`last_rejected`, with its recorded signature: a signature recorded
    /// since is looked at again).
    pub(super) async fn converge_shadow(
        &self,
        last_rejected: &mut Option<(String, Option<String>)>,
    ) -> WatchOutcome {
        let runtime = self.policy.runtime();
        // The head first, as for the active revision: bytes only on a change.
        let head = match self.store.policy_shadow_head().await {
            Ok(Some(head)) => head,
            Ok(None) => {
                if runtime.shadow().revision().is_some() {
                    runtime.clear_shadow();
                    tracing::info!("policy shadow cleared");
                }
                return WatchOutcome::Unchanged;
            }
            Err(e) => return WatchOutcome::Failed(format!("policy shadow: {e}")),
        };
        let here = runtime.shadow().revision();
        let seen = (head.hash.clone(), head.signature.clone());
        if here.as_ref().map(|r| r.0.as_str()) == Some(head.hash.as_str())
            || last_rejected.as_ref() == Some(&seen)
        {
            return WatchOutcome::Unchanged;
        }
        let shadow = match self.store.policy_shadow().await {
            Ok(Some(shadow)) => shadow,
            // Cleared since the head was read: the next look clears it here.
            Ok(None) => return WatchOutcome::Unchanged,
            Err(e) => return WatchOutcome::Failed(format!("policy shadow: {e}")),
        };
        let seen = (shadow.hash.clone(), shadow.signature.clone());
        if let Err(e) = self.verify(&shadow.wasm, shadow.signature.as_deref()) {
            tracing::error!(revision = %shadow.hash, "database policy shadow refused: {e}");
            *last_rejected = Some(seen);
            return WatchOutcome::Rejected(Revision(shadow.hash), vec![e.to_string()]);
        }
        let wasm = shadow.wasm;
        match self.policy.run(move |r| r.set_shadow(&wasm)).await {
            Ok(Ok((revision, _))) => WatchOutcome::Activated(revision),
            Ok(Err(e)) => {
                tracing::error!(revision = %shadow.hash, "database policy shadow refused: {e}");
                *last_rejected = Some(seen);
                WatchOutcome::Rejected(Revision(shadow.hash), e.reasons())
            }
            Err(join) => WatchOutcome::Failed(format!("policy shadow task failed: {join}")),
        }
    }
}
