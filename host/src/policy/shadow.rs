//! A candidate revision run in shadow: it decides each batch beside the
//! active revision, and only the active revision's decisions act.
//!
//! Why a holder of its own, beside the runtime's slots rather than in them:
//! a shadow's faults and slowness must never reach the active path. So it
//! has its own counters (never the runtime's evaluations, failures or
//! fall-back count), it is never a fall-back target, and it runs in one
//! slot of its own: a batch that finds the slot busy is skipped and
//! counted, never queued, so a slow shadow costs the active path nothing
//! but the core its one call runs on (and the active path's deadline is CPU
//! time, which that does not spend). The sandbox's pool holds a slot for it
//! on top of the active path's (see `sandbox::pool`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::compiled::{CompiledPolicy, Revision};
use super::eval::{self, PolicyFailure};
use super::runtime::PolicyRuntime;
use super::types as t;
use super::PolicyError;

/// Counters for `/metrics` and `GET /v1/policy`, this process's only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShadowStats {
    /// Decisions the shadow took and compared with the active revision's.
    pub decisions: u64,
    /// Of those, the ones it took differently.
    pub disagreements: u64,
    /// Batches the shadow skipped because its slot was busy.
    pub skipped_batches: u64,
    /// Shadow calls that failed (trapped, timed out, answered malformed,
    /// found no sandbox slot) or whose disagreements could not be recorded.
    pub failures: u64,
}

/// The shadow revision, its slot and its counters.
pub struct ShadowPolicy {
    current: RwLock<Option<Arc<CompiledPolicy>>>,
    /// One permit: at most one shadow batch at a time, from decision to
    /// record.
    slot: Arc<Semaphore>,
    decisions: AtomicU64,
    disagreements: AtomicU64,
    skipped: AtomicU64,
    failures: AtomicU64,
}

/// The shadow's slot, held by one batch until its disagreements are
/// recorded; dropping it frees the slot.
#[derive(Debug)]
pub struct ShadowPermit {
    _slot: OwnedSemaphorePermit,
}

impl Default for ShadowPolicy {
    fn default() -> Self {
        Self {
            current: RwLock::new(None),
            slot: Arc::new(Semaphore::new(1)),
            decisions: AtomicU64::new(0),
            disagreements: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        }
    }
}

impl ShadowPolicy {
    /// The revision in shadow, if any.
    pub fn revision(&self) -> Option<Revision> {
        self.compiled().map(|c| c.revision.clone())
    }

    fn compiled(&self) -> Option<Arc<CompiledPolicy>> {
        match self.current.read() {
            Ok(current) => current.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn set(&self, compiled: Option<Arc<CompiledPolicy>>) {
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = compiled;
    }

    /// The slot for one batch: `None` when no revision is in shadow, or
    /// (counted as a skipped batch) when the slot is busy. Never waits.
    pub fn try_begin(&self) -> Option<ShadowPermit> {
        self.compiled()?;
        match self.slot.clone().try_acquire_owned() {
            Ok(permit) => Some(ShadowPermit { _slot: permit }),
            Err(_) => {
                self.skipped.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    #[cfg(feature = "test-support")]
    /// Waits until no shadow batch holds the slot: a deterministic point
    /// for tests and shutdown, after which every batch begun before is
    /// recorded.
    pub async fn idle(&self) {
        // The semaphore is never closed; an error would only mean that.
        if let Ok(permit) = self.slot.acquire().await {
            drop(permit);
        }
    }

    /// Counts `decisions` compared, of which `disagreements` differed.
    pub fn count_compared(&self, decisions: u64, disagreements: u64) {
        self.decisions.fetch_add(decisions, Ordering::Relaxed);
        self.disagreements
            .fetch_add(disagreements, Ordering::Relaxed);
    }

    /// Counts one failure of the shadow (a call, or its record).
    pub fn count_failure(&self) {
        self.failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a batch skipped for want of a sandbox slot.
    pub fn count_skipped(&self) {
        self.skipped.fetch_add(1, Ordering::Relaxed);
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> ShadowStats {
        ShadowStats {
            decisions: self.decisions.load(Ordering::Relaxed),
            disagreements: self.disagreements.load(Ordering::Relaxed),
            skipped_batches: self.skipped.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
        }
    }
}

impl PolicyRuntime {
    /// Vets `bytes` exactly as an activation does (the same checks, so
    /// whatever an activation requires a shadow requires too) and puts them
    /// in shadow here, replacing any shadow. Answers the revision and its
    /// description.
    pub fn set_shadow(&self, bytes: &[u8]) -> Result<(Revision, t::PolicyInfo), PolicyError> {
        let compiled = self.compile_and_vet(&Revision::of(bytes), bytes)?;
        let info = eval::describe(self.sandbox(), &compiled)
            .map_err(|e| PolicyError::Rejected(vec![e.to_string()]))?;
        let revision = compiled.revision.clone();
        self.shadow().set(Some(compiled));
        tracing::info!(revision = %revision.short(), "policy shadow set");
        Ok((revision, info))
    }

    /// Takes the shadow out of service here.
    pub fn clear_shadow(&self) {
        self.shadow().set(None);
    }

    /// Decides `inputs` with the shadow revision, under the production
    /// limits but outside the runtime's counters and fall-back. `None` when
    /// no revision is in shadow (it was dropped meanwhile). The permit
    /// proves the caller holds the shadow's slot.
    pub fn shadow_decide_batch(
        &self,
        _permit: &ShadowPermit,
        inputs: &[t::DecisionInput],
    ) -> Option<(Revision, Result<Vec<t::Decision>, PolicyFailure>)> {
        let shadow = self.shadow().compiled()?;
        let value = eval::decide_batch(self.sandbox(), &shadow, inputs);
        Some((shadow.revision.clone(), value))
    }

    /// The shadow's description, when one is set.
    pub fn shadow_describe(&self) -> Option<(Revision, Result<t::PolicyInfo, PolicyFailure>)> {
        let shadow = self.shadow().compiled()?;
        let info = eval::describe(self.sandbox(), &shadow);
        Some((shadow.revision.clone(), info))
    }
}
