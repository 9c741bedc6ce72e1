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

/// Decisions deleted per statement when the log is purged: each delete's
/// locks stay short, and a large backlog is worked off in a few passes.
const PURGE_BATCH: i64 = 5_000;

/// Statements one purge runs at most; the rest waits for the next pass.
const PURGE_ROUNDS: usize = 20;

/// Releases expired leases on an interval, and purges the decision log.
pub struct Rescuer {
    store: Store,
    clock: Arc<dyn Clock>,
    metrics: Arc<Metrics>,
    interval: Duration,
    /// How long logged decisions are kept; `None` keeps them.
    decision_retention: Option<Duration>,
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
            decision_retention: None,
        }
    }

    /// Also deletes logged decisions older than `retention` on each pass.
    pub fn with_decision_retention(mut self, retention: Option<Duration>) -> Self {
        self.decision_retention = retention;
        self
    }

    /// Deletes logged decisions past their retention; returns how many.
    pub async fn purge_decisions(&self) -> Result<u64, StoreError> {
        let Some(retention) = self.decision_retention else {
            return Ok(0);
        };
        let age = chrono::Duration::from_std(retention).unwrap_or(chrono::Duration::MAX);
        let Some(before) = self.clock.now().checked_sub_signed(age) else {
            return Ok(0);
        };
        let mut purged = 0;
        for _ in 0..PURGE_ROUNDS {
            let n = self.store.purge_decisions(before, PURGE_BATCH).await?;
            purged += n;
            if n < PURGE_BATCH as u64 {
                break;
            }
        }
        self.metrics.decisions_purged(purged);
        Ok(purged)
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
        loop {
            if let Err(e) = self.run_once().await {
                tracing::error!("rescuer pass failed: {e}");
            }
            if let Err(e) = self.purge_decisions().await {
                tracing::warn!("decision log purge failed: {e}");
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(self.interval) => {}
            }
        }
    }
}
