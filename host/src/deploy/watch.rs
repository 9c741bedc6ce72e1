//! The one watch loop both watchers run: look, log what was found, wait
//! the interval, until shutdown.
//!
//! Why a trait: the file and the database are looked at differently, but
//! waiting, logging and stopping are the same, and written once here.

use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::WatchOutcome;

/// A source of policy revisions looked at every [`Look::interval`].
#[async_trait]
pub trait Look: Send {
    /// Looks once: activates what changed, if anything.
    async fn look(&mut self) -> WatchOutcome;

    /// How long to wait between looks.
    fn interval(&self) -> Duration;

    /// Looks every interval until `shutdown` is cancelled.
    async fn run(mut self, shutdown: CancellationToken)
    where
        Self: Sized,
    {
        loop {
            let outcome = self.look().await;
            if !pause(outcome, self.interval(), &shutdown).await {
                return;
            }
        }
    }
}

/// Logs what a look found and waits `interval`; `false` once `shutdown` is
/// cancelled. (Refusals are logged where they happen, with their source.)
async fn pause(outcome: WatchOutcome, interval: Duration, shutdown: &CancellationToken) -> bool {
    match outcome {
        WatchOutcome::Activated(revision) => {
            tracing::info!(revision = %revision.short(), "policy activated");
        }
        WatchOutcome::Failed(why) => tracing::warn!("policy watcher: {why}"),
        WatchOutcome::Unchanged | WatchOutcome::Rejected(..) => {}
    }
    tokio::select! {
        _ = shutdown.cancelled() => false,
        _ = tokio::time::sleep(interval) => true,
    }
}
