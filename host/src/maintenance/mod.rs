//! Housekeeping beside the worker, each task on its own interval: the
//! rescuer (expired leases), the retention of the decision log and of
//! tool output, the stuck watch (notices about executions running too
//! long in an open window), the A2A poller (`task_poll`: asks a remote
//! agent for a task whose push is overdue, through the intake), and the
//! start-up look at PostgreSQL's own upkeep (`upkeep`: is autovacuum on
//! for our tables).
//!
//! Why not in the worker: neither touches a delivery in flight or asks the
//! policy; each is one store call on a timer, and a replica runs them
//! whatever its worker is doing.

mod rescuer;
mod retention;
mod stuck;
mod task_poll;
mod upkeep;

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::store::Episode;

pub use rescuer::Rescuer;
#[cfg(feature = "test-support")]
pub use retention::HistoryPurged;
#[cfg(feature = "test-support")]
pub use retention::TextPurged;
pub use retention::{HistoryRetention, Retention, TextRetention};
pub use stuck::{StuckWatch, DEFAULT_STUCK_AFTER};
pub use task_poll::TaskPoller;
#[cfg(feature = "test-support")]
pub use upkeep::vacuum_warning;
pub use upkeep::warn_if_unvacuumed;

/// Runs `pass` every `interval` until `shutdown` is cancelled; a failed
/// pass is tried again at the next interval. Failures are logged as one
/// episode named `what` (its start and its end, not every failed pass):
/// while the database is down each of these loops fails on every pass.
async fn every<F, Fut, T, E>(
    interval: Duration,
    shutdown: CancellationToken,
    what: &'static str,
    pass: F,
) where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: std::fmt::Display,
{
    let episode = Episode::new(what);
    loop {
        let _ = episode.observe(pass().await);
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
    }
}
