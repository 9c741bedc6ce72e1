//! Hot swap from a watched file: when the file's contents change, the new
//! bytes are vetted and, if they pass, activated. A bad file is reported and
//! the running revision stays.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{PolicyError, PolicyRuntime, Revision};

/// What one look at the file found.
#[derive(Debug)]
pub enum WatchOutcome {
    /// The file holds the active revision.
    Unchanged,
    /// A new revision was activated.
    Activated(Revision),
    /// The file changed but its contents were refused; the reasons are kept
    /// so the same bad file is reported once, not on every look.
    Rejected(Revision, Vec<String>),
    /// The file could not be read (it may be mid-write); tried again later.
    Unreadable(String),
}

/// Watches one policy file by polling its contents' hash.
pub struct FileWatcher {
    runtime: Arc<PolicyRuntime>,
    path: PathBuf,
    interval: Duration,
    last_rejected: Option<Revision>,
}

impl FileWatcher {
    pub fn new(runtime: Arc<PolicyRuntime>, path: PathBuf, interval: Duration) -> Self {
        Self {
            runtime,
            path,
            interval,
            last_rejected: None,
        }
    }

    /// Looks at the file once.
    pub async fn run_once(&mut self) -> WatchOutcome {
        let bytes = match tokio::fs::read(&self.path).await {
            Ok(b) => b,
            Err(e) => return WatchOutcome::Unreadable(format!("{}: {e}", self.path.display())),
        };
        let revision = Revision::of(&bytes);
        if revision == self.runtime.active_revision()
            || self.last_rejected.as_ref() == Some(&revision)
        {
            return WatchOutcome::Unchanged;
        }
        let runtime = self.runtime.clone();
        let activated = tokio::task::spawn_blocking(move || runtime.activate(&bytes)).await;
        match activated {
            Ok(Ok(rev)) => {
                self.last_rejected = None;
                WatchOutcome::Activated(rev)
            }
            Ok(Err(e)) => {
                tracing::error!(path = %self.path.display(), "policy file refused: {e}");
                self.last_rejected = Some(revision.clone());
                WatchOutcome::Rejected(revision, e.reasons())
            }
            Err(join) => WatchOutcome::Unreadable(format!("policy check panicked: {join}")),
        }
    }

    /// Polls until `shutdown` is cancelled.
    pub async fn run(mut self, shutdown: CancellationToken) {
        loop {
            let outcome = self.run_once().await;
            if let WatchOutcome::Unreadable(why) = &outcome {
                tracing::warn!("policy watcher: {why}");
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(self.interval) => {}
            }
        }
    }
}

/// Reads a policy file for `--policy` and the CLI.
pub fn read_policy_file(path: &std::path::Path) -> Result<Vec<u8>, PolicyError> {
    std::fs::read(path).map_err(|source| PolicyError::Read {
        path: path.display().to_string(),
        source,
    })
}

/// Converges on the revision the database marks active, so every replica
/// runs what one replica's `PUT /v1/policy` activated.
pub struct DbPolicyWatcher {
    runtime: Arc<PolicyRuntime>,
    store: crate::store::Store,
    interval: Duration,
    last_rejected: Option<String>,
}

impl DbPolicyWatcher {
    pub fn new(
        runtime: Arc<PolicyRuntime>,
        store: crate::store::Store,
        interval: Duration,
    ) -> Self {
        Self {
            runtime,
            store,
            interval,
            last_rejected: None,
        }
    }

    /// Looks at the database once.
    pub async fn run_once(&mut self) -> WatchOutcome {
        let active = match self.store.active_policy().await {
            Ok(Some(active)) => active,
            Ok(None) => return WatchOutcome::Unchanged,
            Err(e) => return WatchOutcome::Unreadable(format!("active policy: {e}")),
        };
        if active.hash == self.runtime.active_revision().0
            || self.last_rejected.as_deref() == Some(active.hash.as_str())
        {
            return WatchOutcome::Unchanged;
        }
        let runtime = self.runtime.clone();
        let wasm = active.wasm;
        match tokio::task::spawn_blocking(move || runtime.activate(&wasm)).await {
            Ok(Ok(rev)) => WatchOutcome::Activated(rev),
            Ok(Err(e)) => {
                tracing::error!(revision = %active.hash, "database policy refused: {e}");
                self.last_rejected = Some(active.hash.clone());
                WatchOutcome::Rejected(Revision(active.hash), e.reasons())
            }
            Err(join) => WatchOutcome::Unreadable(format!("policy check panicked: {join}")),
        }
    }

    /// Polls until `shutdown` is cancelled.
    pub async fn run(mut self, shutdown: CancellationToken) {
        loop {
            if let WatchOutcome::Unreadable(why) = self.run_once().await {
                tracing::warn!("policy watcher: {why}");
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(self.interval) => {}
            }
        }
    }
}
