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

pub use rescuer::Rescuer;
#[cfg(feature = "test-support")]
pub use retention::TextPurged;
pub use retention::{Retention, TextRetention};
pub use stuck::{StuckWatch, DEFAULT_STUCK_AFTER};

/// Runs `pass` every `interval` until `shutdown` is cancelled; a failed
/// pass is logged as `what` and tried again at the next interval.
async fn every<F, Fut, T, E>(interval: Duration, shutdown: CancellationToken, what: &str, pass: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: std::fmt::Display,
{
    loop {
        if let Err(e) = pass().await {
            tracing::warn!("{what} failed: {e}");
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
    }
}
