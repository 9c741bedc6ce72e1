//! Retention: logged decisions older than the retention are deleted in
//! short batches, so the log (written on every pass) does not grow without
//! bound and no delete holds locks for long; the API's idempotency keys
//! are deleted once past [`KEY_RETENTION`].

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::metrics::Metrics;
use crate::store::{Store, StoreError};

/// Decisions deleted per statement: each delete's locks stay short, and a
/// large backlog is worked off in a few passes.
const PURGE_BATCH: i64 = 5_000;

/// Statements one purge runs at most; the rest waits for the next pass.
const PURGE_ROUNDS: usize = 20;

/// How long an `Idempotency-Key`'s answer is kept: the API promises at
/// least 24 hours, and a day more covers a client retrying across a
/// weekend's outage.
pub const KEY_RETENTION: chrono::Duration = chrono::Duration::hours(48);

/// Deletes logged decisions past their retention on an interval.
pub struct Retention {
    store: Store,
    clock: Arc<dyn Clock>,
    metrics: Arc<Metrics>,
    /// How long logged decisions are kept; `None` keeps them.
    retention: Option<Duration>,
}

impl Retention {
    /// Keeps logged decisions for `retention` (`None`: for ever).
    pub fn new(
        store: Store,
        clock: Arc<dyn Clock>,
        metrics: Arc<Metrics>,
        retention: Option<Duration>,
    ) -> Self {
        Self {
            store,
            clock,
            metrics,
            retention,
        }
    }

    /// Deletes logged decisions past their retention; returns how many.
    pub async fn purge_decisions(&self) -> Result<u64, StoreError> {
        let Some(retention) = self.retention else {
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

    /// Deletes the idempotency keys past [`KEY_RETENTION`]; returns how many.
    pub async fn purge_keys(&self) -> Result<u64, StoreError> {
        match self.clock.now().checked_sub_signed(KEY_RETENTION) {
            Some(before) => self.store.purge_keys(before).await,
            None => Ok(0),
        }
    }

    /// One pass: the decision log, then the idempotency keys.
    async fn purge(&self) -> Result<u64, StoreError> {
        Ok(self.purge_decisions().await? + self.purge_keys().await?)
    }

    /// Purges every `interval` until `shutdown` is cancelled.
    pub async fn run(self, interval: Duration, shutdown: CancellationToken) {
        super::every(interval, shutdown, "retention purge", || self.purge()).await;
    }
}
