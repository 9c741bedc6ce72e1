//! Housekeeping beside the worker, each task on its own interval: the
//! rescuer (expired leases), the retention of the decision log and of
//! tool output, and the stuck watch (notices about executions running too
//! long in an open window).
//!
//! Why not in the worker: neither touches a delivery in flight or asks the
//! policy; each is one store call on a timer, and a replica runs them
//! whatever its worker is doing.

mod rescuer;
mod retention;
mod stuck;

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::store::Episode;

pub use rescuer::Rescuer;
#[cfg(feature = "test-support")]
pub use retention::TextPurged;
pub use retention::{Retention, TextRetention};
pub use stuck::{StuckWatch, DEFAULT_STUCK_AFTER};

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
