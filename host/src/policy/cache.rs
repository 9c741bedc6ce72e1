//! Compiled revisions kept by hash, so compiling happens once per revision.
//!
//! Compiling is what makes an activation slow (hundreds of milliseconds of
//! Cranelift for the default policy, seconds for an interpreted one), and
//! the same bytes arrive more than once: a dry run (`check`) then the
//! upload, a rollback's vetting then its swap, a swap back to the previous
//! revision, the database watcher activating what this replica just
//! uploaded. Each of those finds the compiled revision here.
//!
//! Compiles are also done one at a time: two candidates arriving together
//! (a file watcher and an upload) would otherwise each take every core
//! from the callers, and the second is often the same bytes as the first.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::compiled::{CompiledPolicy, Revision};
use super::sandbox::Sandbox;
use super::PolicyError;

/// The most recently used compiled revisions, bounded in number: a compiled
/// component holds its machine code, megabytes for a large policy.
pub(crate) struct CompiledRevisions {
    /// Most recently used last.
    kept: Mutex<VecDeque<Arc<CompiledPolicy>>>,
    capacity: usize,
    /// Held while compiling, so compiles run one at a time.
    compiling: Mutex<()>,
    compiles: AtomicU64,
    hits: AtomicU64,
}

impl CompiledRevisions {
    /// Keeps at most `capacity` revisions (at least one).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            kept: Mutex::new(VecDeque::new()),
            capacity: capacity.max(1),
            compiling: Mutex::new(()),
            compiles: AtomicU64::new(0),
            hits: AtomicU64::new(0),
        }
    }

    /// The compiled form of `bytes` (whose revision is `revision`),
    /// compiling them only if this revision is not kept. A component that
    /// does not compile is not kept: it is refused again, with the same
    /// reasons, if it comes back.
    pub(crate) fn get_or_compile(
        &self,
        sandbox: &Sandbox,
        revision: &Revision,
        bytes: &[u8],
    ) -> Result<Arc<CompiledPolicy>, PolicyError> {
        if let Some(kept) = self.take_kept(revision) {
            return Ok(kept);
        }
        let _one_at_a_time = self.compiling.lock().unwrap_or_else(|p| p.into_inner());
        // Another caller may have compiled these bytes while this one waited.
        if let Some(kept) = self.take_kept(revision) {
            return Ok(kept);
        }
        self.compiles.fetch_add(1, Ordering::Relaxed);
        let compiled = Arc::new(CompiledPolicy::compile(sandbox, revision.clone(), bytes)?);
        self.keep(compiled.clone());
        Ok(compiled)
    }

    /// Compiles done so far (kept revisions found are not compiles).
    pub(crate) fn compiles(&self) -> u64 {
        self.compiles.load(Ordering::Relaxed)
    }

    /// Requests answered by a kept revision.
    pub(crate) fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// The kept revision, marked most recently used.
    pub(crate) fn take_kept(&self, revision: &Revision) -> Option<Arc<CompiledPolicy>> {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let at = kept.iter().position(|c| &c.revision == revision)?;
        let found = kept.remove(at)?;
        kept.push_back(found.clone());
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(found)
    }

    fn keep(&self, compiled: Arc<CompiledPolicy>) {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.push_back(compiled);
        while kept.len() > self.capacity {
            kept.pop_front();
        }
    }
}
