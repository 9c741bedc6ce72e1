//! Every replica converges on the revisions the database names: the
//! active one (what is answered) and the shadow (logged beside it).

use std::time::Duration;

use async_trait::async_trait;

use super::watch::Look;
use super::{PolicyDeployment, WatchOutcome};
use crate::policy::Revision;

impl PolicyDeployment {
    /// A watcher of the database's active revision, looking every
    /// `interval`.
    pub fn watch_database(&self, interval: Duration) -> DbPolicyWatcher {
        DbPolicyWatcher {
            deployment: self.clone(),
            interval,
            last_rejected: None,
            shadow_rejected: None,
        }
    }
}

/// Converges on the revision the database marks active, so every replica
/// runs what the last upload (from any replica, or a changed file) activated.
pub struct DbPolicyWatcher {
    deployment: PolicyDeployment,
    interval: Duration,
    /// The active revision (and its recorded signature) this host refused,
    /// so it is reported once; a signature recorded since is looked at again.
    last_rejected: Option<(String, Option<String>)>,
    /// The same for the shadow revision.
    shadow_rejected: Option<(String, Option<String>)>,
}

impl DbPolicyWatcher {
    /// Looks at the database once: converges on its active revision (what
    /// is answered), then on its shadow (logged).
    pub async fn run_once(&mut self) -> WatchOutcome {
        let active = self.converge_active().await;
        match self
            .deployment
            .converge_shadow(&mut self.shadow_rejected)
            .await
        {
            WatchOutcome::Activated(revision) => {
                tracing::info!(revision = %revision.short(), "policy shadow set from the database");
            }
            // Reported by the watch loop as its failure (once per episode),
            // unless the active revision's look failed too: the same outage.
            WatchOutcome::Failed(why) if matches!(active, WatchOutcome::Unchanged) => {
                return WatchOutcome::Failed(why);
            }
            WatchOutcome::Failed(why) if !matches!(active, WatchOutcome::Failed(_)) => {
                tracing::warn!("policy watcher: {why}");
            }
            WatchOutcome::Failed(_) | WatchOutcome::Unchanged | WatchOutcome::Rejected(..) => {}
        }
        active
    }

    async fn converge_active(&mut self) -> WatchOutcome {
        // The head first: the bytes (tens of MB for an interpreted policy)
        // are read only when the revision named is not the one running here.
        let head = match self.deployment.store.active_policy_head().await {
            Ok(Some(head)) => head,
            Ok(None) => return WatchOutcome::Unchanged,
            Err(e) => return WatchOutcome::Failed(format!("active policy: {e}")),
        };
        let policy = &self.deployment.policy;
        let seen = (head.hash.clone(), head.signature.clone());
        if head.hash == policy.runtime().active_revision().0
            || self.last_rejected.as_ref() == Some(&seen)
        {
            return WatchOutcome::Unchanged;
        }
        let active = match self.deployment.store.active_policy().await {
            Ok(Some(active)) => active,
            Ok(None) => return WatchOutcome::Unchanged,
            Err(e) => return WatchOutcome::Failed(format!("active policy: {e}")),
        };
        let seen = (active.hash.clone(), active.signature.clone());
        if let Err(e) = self
            .deployment
            .verify(&active.wasm, active.signature.as_deref())
        {
            tracing::error!(revision = %active.hash, "database policy refused: {e}");
            self.last_rejected = Some(seen);
            return WatchOutcome::Rejected(Revision(active.hash), vec![e.to_string()]);
        }
        match policy.activate(active.wasm).await {
            Ok(Ok(rev)) => {
                self.deployment.classify_pending().await;
                WatchOutcome::Activated(rev)
            }
            Ok(Err(e)) => {
                tracing::error!(revision = %active.hash, "database policy refused: {e}");
                self.last_rejected = Some(seen);
                WatchOutcome::Rejected(Revision(active.hash), e.reasons())
            }
            Err(join) => WatchOutcome::Failed(format!("policy check task failed: {join}")),
        }
    }
}

#[async_trait]
impl Look for DbPolicyWatcher {
    async fn look(&mut self) -> WatchOutcome {
        self.run_once().await
    }

    fn interval(&self) -> Duration {
        self.interval
    }
}
