//! The one watch loop both watchers run: look, log what was found, wait
//! the interval, until shutdown.
//!
//! Why a trait: the file and the database are looked at differently, but
//! waiting, logging and stopping are the same, and written once here.

use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::WatchOutcome;
use crate::store::Episode;

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
        // A database that is down fails every look: one episode.
        let episode = Episode::new("policy watcher");
        loop {
            let outcome = self.look().await;
            if !pause(outcome, self.interval(), &episode, &shutdown).await {
                return;
            }
        }
    }
}

/// Logs what a look found (a failure as part of `episode`) and waits
/// `interval`; `false` once `shutdown` is cancelled. (Refusals are logged
/// where they happen, with their source.)
async fn pause(
    outcome: WatchOutcome,
    interval: Duration,
    episode: &Episode,
    shutdown: &CancellationToken,
) -> bool {
    match outcome {
        WatchOutcome::Activated(revision) => {
            episode.succeeded();
            tracing::info!(revision = %revision.short(), "policy activated");
        }
        WatchOutcome::Failed(why) => episode.failed(&why),
        WatchOutcome::Unchanged | WatchOutcome::Rejected(..) => episode.succeeded(),
    }
    tokio::select! {
        _ = shutdown.cancelled() => false,
        _ = tokio::time::sleep(interval) => true,
    }
}
