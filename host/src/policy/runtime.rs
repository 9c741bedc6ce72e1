//! The active policy, swapped atomically, with a fall-back to the last good
//! revision when the active one keeps failing.
//!
//! Every call takes a reference to the revision active when it starts and
//! finishes on it, whatever is swapped in meanwhile; its answer carries that
//! revision's hash. A failure never propagates as a crash: the caller gets a
//! [`PolicyFailure`] and applies a conservative default.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use super::cache::CompiledRevisions;
use super::compiled::{CompiledPolicy, Revision};
use super::eval::{self, PolicyFailure};
use super::sandbox::{Limits, Sandbox};
use super::shadow::ShadowPolicy;
use super::types as t;
use super::vet::{self, Vetting};
use super::{PolicyError, BUILTIN_POLICY_WASM};

/// Consecutive policy faults after which the runtime returns to the last
/// good revision.
pub const DEFAULT_FALLBACK_AFTER: u32 = 3;

/// An answer and the revision that gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evaluated<T> {
    /// The revision that answered (it may have been swapped since).
    pub revision: Revision,
    /// The answer, or why the policy failed.
    pub value: Result<T, PolicyFailure>,
}

/// Counters for `/metrics`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyStats {
    /// Calls into the policy.
    pub evaluations: u64,
    /// Failures by [`PolicyFailure::kind`].
    pub failures: BTreeMap<&'static str, u64>,
    /// Revisions activated.
    pub swaps: u64,
    /// Candidates refused by the checks before activation.
    pub rejected_candidates: u64,
    /// Returns to the last good revision after repeated faults.
    pub fallbacks: u64,
    /// Components compiled (candidates, checks and the first revision).
    pub compiles: u64,
    /// Activations and checks that found their revision compiled already.
    pub compile_cache_hits: u64,
}

#[derive(Default)]
struct Counters {
    evaluations: AtomicU64,
    swaps: AtomicU64,
    rejected: AtomicU64,
    fallbacks: AtomicU64,
    failures: Mutex<BTreeMap<&'static str, u64>>,
}

struct Slots {
    active: Arc<CompiledPolicy>,
    /// The revision to return to if the active one keeps failing: the one
    /// that was active before the last swap.
    last_good: Option<Arc<CompiledPolicy>>,
}

/// The host's policy runtime. Cheap to share behind an `Arc`.
pub struct PolicyRuntime {
    sandbox: Arc<Sandbox>,
    compiled: CompiledRevisions,
    slots: RwLock<Slots>,
    vetting: Vetting,
    fallback_after: u32,
    consecutive_faults: AtomicU32,
    counters: Counters,
    /// Revisions the runtime fell back from: re-activating one needs a new
    /// build, or a database row pointing at it would swap it straight back.
    quarantined: Mutex<Vec<Revision>>,
    /// A candidate deciding beside the active revision (see `shadow`).
    shadow: ShadowPolicy,
}

impl PolicyRuntime {
    /// A runtime with the built-in default policy active.
    pub fn new(limits: Limits) -> Result<Self, PolicyError> {
        Self::with_policy(limits, BUILTIN_POLICY_WASM)
    }

    /// A runtime with `bytes` active; the policy is vetted like any swap.
    pub fn with_policy(limits: Limits, bytes: &[u8]) -> Result<Self, PolicyError> {
        Self::start(limits, bytes, true)
    }

    /// A runtime over `bytes` that is compiled and type-checked but not
    /// vetted, so `policy test` can report each golden case of a policy
    /// that would not pass activation.
    pub fn unvetted(limits: Limits, bytes: &[u8]) -> Result<Self, PolicyError> {
        Self::start(limits, bytes, false)
    }

    fn start(limits: Limits, bytes: &[u8], vetted: bool) -> Result<Self, PolicyError> {
        let sandbox = Sandbox::new(limits)?;
        let compiled = CompiledRevisions::new(sandbox.limits.compiled_revisions_kept);
        let vetting = Vetting::default();
        let active = compiled.get_or_compile(&sandbox, &Revision::of(bytes), bytes)?;
        if vetted {
            vet::vet(&sandbox, &active, &vetting)?;
        }
        Ok(Self {
            sandbox,
            compiled,
            slots: RwLock::new(Slots {
                active,
                last_good: None,
            }),
            vetting,
            fallback_after: DEFAULT_FALLBACK_AFTER,
            consecutive_faults: AtomicU32::new(0),
            counters: Counters::default(),
            quarantined: Mutex::new(Vec::new()),
            shadow: ShadowPolicy::default(),
        })
    }

    #[cfg(feature = "test-support")]
    /// Sets the golden cases every candidate must pass before activation.
    pub fn set_vetting(&mut self, vetting: Vetting) {
        self.vetting = vetting;
    }

    #[cfg(feature = "test-support")]
    /// Sets how many consecutive faults trigger the fall-back.
    pub fn set_fallback_after(&mut self, faults: u32) {
        self.fallback_after = faults.max(1);
    }

    /// The limits every call runs under.
    pub fn limits(&self) -> &Limits {
        &self.sandbox.limits
    }

    /// The revision in shadow, its slot and its counters.
    pub fn shadow(&self) -> &ShadowPolicy {
        &self.shadow
    }

    pub(super) fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// The active revision.
    pub fn active_revision(&self) -> Revision {
        self.active().revision.clone()
    }

    pub(super) fn active(&self) -> Arc<CompiledPolicy> {
        match self.slots.read() {
            Ok(slots) => slots.active.clone(),
            Err(poisoned) => poisoned.into_inner().active.clone(),
        }
    }

    /// Compiles, type-checks and vets `bytes` under production limits, then
    /// makes it active. A candidate that fails any check never becomes
    /// active; the error lists why. Activating the active revision again is
    /// a no-op; a revision compiled before (see `cache`) is vetted again but
    /// not compiled.
    pub fn activate(&self, bytes: &[u8]) -> Result<Revision, PolicyError> {
        let revision = Revision::of(bytes);
        if revision == self.active_revision() {
            return Ok(revision);
        }
        if self.is_quarantined(&revision) {
            self.counters.rejected.fetch_add(1, Ordering::Relaxed);
            return Err(PolicyError::Rejected(vec![format!(
                "revision {} was taken out of service after {} consecutive failures",
                revision.short(),
                self.fallback_after
            )]));
        }
        let candidate = match self.compile_and_vet(&revision, bytes) {
            Ok(c) => c,
            Err(e) => {
                self.counters.rejected.fetch_add(1, Ordering::Relaxed);
                return Err(e);
            }
        };
        let mut slots = self.slots.write().unwrap_or_else(|p| p.into_inner());
        let previous = std::mem::replace(&mut slots.active, candidate);
        slots.last_good = Some(previous);
        drop(slots);
        self.consecutive_faults.store(0, Ordering::Relaxed);
        self.counters.swaps.fetch_add(1, Ordering::Relaxed);
        tracing::info!(revision = %revision.short(), "policy activated");
        Ok(revision)
    }

    /// Vets `bytes` without activating them: what `policy check` and the
    /// API's dry run report. The compiled revision is kept, so activating
    /// it next does not compile it again.
    pub fn check(&self, bytes: &[u8]) -> Result<(Revision, t::PolicyInfo), PolicyError> {
        let compiled = self.compile_and_vet(&Revision::of(bytes), bytes)?;
        let info = eval::describe(&self.sandbox, &compiled)
            .map_err(|e| PolicyError::Rejected(vec![e.to_string()]))?;
        Ok((compiled.revision.clone(), info))
    }

    /// The compiled revision (compiled now if it is not kept), vetted.
    pub(super) fn compile_and_vet(
        &self,
        revision: &Revision,
        bytes: &[u8],
    ) -> Result<Arc<CompiledPolicy>, PolicyError> {
        let compiled = self
            .compiled
            .get_or_compile(&self.sandbox, revision, bytes)?;
        vet::vet(&self.sandbox, &compiled, &self.vetting)?;
        Ok(compiled)
    }

    /// What a tool result names: execution ids and protocol tasks.
    pub fn extract_links(&self, text: &str) -> Evaluated<Vec<t::LinkRef>> {
        self.run(|s, p| eval::extract_links(s, p, text))
    }

    /// Whether a status is terminal.
    pub fn classify(&self, status: &str) -> Evaluated<t::StatusClass> {
        self.run(|s, p| eval::classify(s, p, status))
    }

    /// Decisions for a batch, in one sandbox.
    pub fn decide_batch(&self, inputs: &[t::DecisionInput]) -> Evaluated<Vec<t::Decision>> {
        if inputs.is_empty() {
            return Evaluated {
                revision: self.active_revision(),
                value: Ok(Vec::new()),
            };
        }
        self.run(|s, p| eval::decide_batch(s, p, inputs))
    }

    /// The links the active revision extracts from `text`, as a trial (see
    /// [`Self::trial`]): what the console's playground shows.
    pub fn trial_extract_links(&self, text: &str) -> Evaluated<Vec<t::LinkRef>> {
        self.trial(&self.active(), |s, p| eval::extract_links(s, p, text))
    }

    /// The active revision's decisions on `inputs`, as a trial.
    pub fn trial_decide(&self, inputs: &[t::DecisionInput]) -> Evaluated<Vec<t::Decision>> {
        self.trial(&self.active(), |s, p| eval::decide_batch(s, p, inputs))
    }

    /// A revision's decisions on `inputs`, as a trial, whether or not it is
    /// active (the playground's candidate): compiled, or found compiled, in
    /// this runtime's sandbox, so under the active revision's limits, and
    /// never vetted or activated.
    pub fn trial_decide_with(
        &self,
        bytes: &[u8],
        inputs: &[t::DecisionInput],
    ) -> Result<Evaluated<Vec<t::Decision>>, PolicyError> {
        let compiled = self.compile(bytes)?;
        Ok(self.trial(&compiled, |s, p| eval::decide_batch(s, p, inputs)))
    }

    /// [`Self::trial_decide_with`] on a revision this runtime holds
    /// compiled; `None` if it does not, so a caller fetches the bytes (up
    /// to the upload cap) only when a compile needs them.
    pub fn trial_decide_kept(
        &self,
        revision: &Revision,
        inputs: &[t::DecisionInput],
    ) -> Option<Evaluated<Vec<t::Decision>>> {
        let compiled = self.compiled.take_kept(revision)?;
        Some(self.trial(&compiled, |s, p| eval::decide_batch(s, p, inputs)))
    }

    /// A revision's name and version, as a trial; see
    /// [`Self::trial_decide_with`].
    pub fn trial_describe(&self, bytes: &[u8]) -> Result<Evaluated<t::PolicyInfo>, PolicyError> {
        let compiled = self.compile(bytes)?;
        Ok(self.trial(&compiled, eval::describe))
    }

    fn compile(&self, bytes: &[u8]) -> Result<Arc<CompiledPolicy>, PolicyError> {
        self.compiled
            .get_or_compile(&self.sandbox, &Revision::of(bytes), bytes)
    }

    /// Runs `call` outside the live path: not counted in the runtime's
    /// counters, and a failure never counts toward a fall-back. A question
    /// asked from the console must not be able to take the active revision
    /// out of service (three trapping inputs would otherwise do it, with
    /// only the runtime token).
    fn trial<T>(
        &self,
        policy: &CompiledPolicy,
        call: impl FnOnce(&Sandbox, &CompiledPolicy) -> Result<T, PolicyFailure>,
    ) -> Evaluated<T> {
        Evaluated {
            revision: policy.revision.clone(),
            value: call(&self.sandbox, policy),
        }
    }

    /// The SOUL text.
    pub fn soul(&self) -> Evaluated<String> {
        self.run(eval::soul)
    }

    /// The active policy's name and version.
    pub fn describe(&self) -> Evaluated<t::PolicyInfo> {
        self.run(eval::describe)
    }

    fn run<T>(
        &self,
        call: impl FnOnce(&Sandbox, &CompiledPolicy) -> Result<T, PolicyFailure>,
    ) -> Evaluated<T> {
        let policy = self.active();
        self.counters.evaluations.fetch_add(1, Ordering::Relaxed);
        let value = call(&self.sandbox, &policy);
        // A call that finishes after a swap says nothing about the revision
        // now active: it must neither reset nor add to that one's count.
        let still_active = Arc::ptr_eq(&policy, &self.active());
        match &value {
            Ok(_) if still_active => self.consecutive_faults.store(0, Ordering::Relaxed),
            Ok(_) => {}
            Err(failure) => self.record_failure(&policy.revision, failure, still_active),
        }
        Evaluated {
            revision: policy.revision.clone(),
            value,
        }
    }

    fn record_failure(&self, revision: &Revision, failure: &PolicyFailure, still_active: bool) {
        tracing::warn!(revision = %revision.short(), "policy call failed: {failure}");
        if let Ok(mut failures) = self.counters.failures.lock() {
            *failures.entry(failure.kind()).or_default() += 1;
        }
        if !failure.is_policy_fault() || !still_active {
            return;
        }
        let faults = self.consecutive_faults.fetch_add(1, Ordering::Relaxed) + 1;
        if faults >= self.fallback_after {
            self.fall_back(revision);
        }
    }

    /// Returns to the last good revision if `failing` is still active.
    fn fall_back(&self, failing: &Revision) {
        let mut slots = self.slots.write().unwrap_or_else(|p| p.into_inner());
        if &slots.active.revision != failing {
            return;
        }
        let Some(good) = slots.last_good.take() else {
            return;
        };
        tracing::error!(failing = %failing.short(), restored = %good.revision.short(), "policy keeps failing; returning to the last good revision");
        slots.active = good;
        drop(slots);
        if let Ok(mut q) = self.quarantined.lock() {
            q.push(failing.clone());
        }
        self.consecutive_faults.store(0, Ordering::Relaxed);
        self.counters.fallbacks.fetch_add(1, Ordering::Relaxed);
    }

    /// True if the runtime fell back from `revision`.
    pub fn is_quarantined(&self, revision: &Revision) -> bool {
        self.quarantined
            .lock()
            .map(|q| q.contains(revision))
            .unwrap_or(false)
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> PolicyStats {
        PolicyStats {
            evaluations: self.counters.evaluations.load(Ordering::Relaxed),
            failures: self
                .counters
                .failures
                .lock()
                .map(|f| f.clone())
                .unwrap_or_default(),
            swaps: self.counters.swaps.load(Ordering::Relaxed),
            rejected_candidates: self.counters.rejected.load(Ordering::Relaxed),
            fallbacks: self.counters.fallbacks.load(Ordering::Relaxed),
            compiles: self.compiled.compiles(),
            compile_cache_hits: self.compiled.hits(),
        }
    }
}

impl PolicyRuntime {
    /// Runs a golden case through the active revision's typed exports.
    pub fn run_golden_case(&self, case: &super::golden::GoldenCase) -> super::golden::CaseOutput {
        let policy = self.active();
        super::golden::run_case(&self.sandbox, &policy, case)
    }
}

/// Hooks for `benches/policy.rs` and `examples/swap_under_load.rs`. They
/// run the active revision under the production limits but outside the
/// counters and the fall-back, and are not part of the host's API.
#[doc(hidden)]
impl PolicyRuntime {
    #[cfg(feature = "test-support")]
    /// Instantiates the active revision once and calls `decide` `n` times
    /// on that instance: the amortised cost of a call, without the fresh
    /// sandbox production pays per batch.
    pub fn bench_live_calls(&self, n: u64, input: &t::DecisionInput) -> Result<(), PolicyFailure> {
        eval::live_decisions(&self.sandbox, &self.active(), n, input)
    }

    #[cfg(feature = "test-support")]
    /// Creates a fresh store and instance of the active revision and drops
    /// them: the fixed cost of every batch.
    pub fn bench_instantiate(&self) -> Result<(), PolicyFailure> {
        eval::instantiate_only(&self.sandbox, &self.active())
    }
}
