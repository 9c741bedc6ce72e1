//! Housekeeping beside the worker, each task on its own interval: the
//! rescuer (expired leases) and the retention of the decision log and of
//! tool output.
//!
//! Why not in the worker: neither touches a delivery in flight or asks the
//! policy; each is one store call on a timer, and a replica runs them
//! whatever its worker is doing.

mod rescuer;
mod retention;

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

pub use rescuer::Rescuer;
#[cfg(feature = "test-support")]
pub use retention::TextPurged;
pub use retention::{Retention, TextRetention};

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
