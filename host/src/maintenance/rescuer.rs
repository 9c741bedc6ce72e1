//! The rescuer: releases leases whose holder died, so any replica can pick
//! the delivery up again. Claiming already takes over expired leases; the
//! rescuer makes them visible (metrics) and claimable by the fastest worker
//! rather than only by one that happens to look.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::metrics::Metrics;
use crate::store::{Store, StoreError};

/// Releases expired leases on an interval.
pub struct Rescuer {
    store: Store,
    clock: Arc<dyn Clock>,
    metrics: Arc<Metrics>,
    interval: Duration,
}

impl Rescuer {
    /// A rescuer that looks for expired leases every `interval`.
    pub fn new(
        store: Store,
        clock: Arc<dyn Clock>,
        metrics: Arc<Metrics>,
        interval: Duration,
    ) -> Self {
        Self {
            store,
            clock,
            metrics,
            interval,
        }
    }

    /// One pass; returns how many leases were released. The release is a
    /// compare-and-set on the expiry, so a worker that completes its call
    /// at the same moment either wins (its CAS on the holder succeeds first)
    /// or finds the lease gone and leaves the row to the redelivery.
    pub async fn run_once(&self) -> Result<u64, StoreError> {
        let released = self.store.release_expired_leases(self.clock.now()).await?;
        if released > 0 {
            tracing::warn!(released, "released expired delivery leases");
            self.metrics.leases_rescued(released);
        }
        Ok(released)
    }

    /// Runs passes until `shutdown` is cancelled.
    pub async fn run(self, shutdown: CancellationToken) {
        super::every(self.interval, shutdown, "rescuer pass", || self.run_once()).await;
    }
}
