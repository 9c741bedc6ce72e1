//! The notifier: sends every notice's operator copy to the operator's
//! channel (`--notify-webhook`), apart from the agent, under a budget of
//! its own.
//!
//! Why apart from the deliverer: a notice about a dead agent endpoint must
//! not wait behind, or fail with, the agent's calls; the two channels share
//! nothing but the notice row they read. Why a lease and a claim token as
//! the ledger has: two replicas never send the same copy at once, and a
//! replica that stalls past its lease records nothing over the one that
//! took the copy over. A receiver still sees a copy twice when a replica
//! dies between the channel's answer and the commit; the copy's
//! `webhook-id` lets it drop the second.

use derive_setters::Setters;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use tokio_util::sync::CancellationToken;

use crate::agent::{AgentError, Operator};
use crate::clock::Clock;
use crate::metrics::Metrics;
use crate::store::{Episode, OperatorNotice, OperatorOutcome, OperatorState, Store, StoreError};

/// The operator channel's settings.
#[derive(Clone, Debug, Setters)]
#[setters(prefix = "with_")]
#[non_exhaustive]
pub struct NotifyConfig {
    /// Attempts on the channel before a copy ends `failed`.
    pub attempts: i32,
    /// The first retry's delay; doubled per attempt up to `backoff_max`.
    pub backoff_base: Duration,
    /// The longest delay between two attempts.
    pub backoff_max: Duration,
    /// How long a claimed copy stays this notifier's; longer than one call.
    pub lease: Duration,
    /// A copy older than this when a channel first looks at it is not sent
    /// late (`expired`): a channel configured today does not page anyone
    /// with last month's notices. They stay in the console.
    pub max_age: Duration,
    /// How often the notifier looks for due copies.
    pub poll: Duration,
    /// Copies claimed, and sent concurrently, per pass.
    pub batch: i64,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        Self {
            attempts: 8,
            backoff_base: Duration::from_secs(5),
            backoff_max: Duration::from_secs(300),
            lease: Duration::from_secs(60),
            max_age: Duration::from_secs(24 * 3600),
            poll: Duration::from_secs(2),
            batch: 32,
        }
    }
}

/// What one pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NotifyReport {
    /// Copies the channel accepted.
    pub delivered: u64,
    /// Copies to be tried again.
    pub retried: u64,
    /// Copies whose budget ran out (or whose error cannot pass).
    pub failed: u64,
    /// Copies too old to send.
    pub expired: u64,
    /// Copies ended `none`: this process has no operator channel.
    pub unrouted: u64,
}

/// Sends operator copies; with no channel, ends them `none` so that a
/// notice whose agent delivery failed too is counted as reaching no one.
#[derive(Clone)]
pub struct Notifier {
    store: Store,
    operator: Option<Arc<dyn Operator>>,
    clock: Arc<dyn Clock>,
    metrics: Arc<Metrics>,
    config: NotifyConfig,
    worker_id: String,
}

impl Notifier {
    /// A notifier for `worker_id` (its leases name it) over `operator`,
    /// `None` when no channel is configured.
    pub fn new(
        store: Store,
        operator: Option<Arc<dyn Operator>>,
        clock: Arc<dyn Clock>,
        metrics: Arc<Metrics>,
        config: NotifyConfig,
        worker_id: String,
    ) -> Self {
        Self {
            store,
            operator,
            clock,
            metrics,
            config,
            worker_id,
        }
    }

    /// Passes every `config.poll` until `shutdown`; a failed pass is tried
    /// again at the next, and failures are logged as one episode.
    pub async fn run(self, shutdown: CancellationToken) {
        let episode = Episode::new("operator notices pass");
        loop {
            let _ = episode.observe(self.pass().await);
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(self.config.poll) => {}
            }
        }
    }

    /// One pass: ends what cannot be sent, then claims due copies and
    /// sends them concurrently.
    pub async fn pass(&self) -> Result<NotifyReport, StoreError> {
        let now = self.clock.now();
        let mut report = NotifyReport::default();
        let Some(operator) = &self.operator else {
            report.unrouted = self
                .store
                .end_operator_notices(OperatorState::None, None, now)
                .await?;
            self.metrics.notice("operator", "none", report.unrouted);
            return Ok(report);
        };
        let max_age =
            chrono::Duration::from_std(self.config.max_age).unwrap_or(chrono::Duration::days(1));
        report.expired = self
            .store
            .end_operator_notices(OperatorState::Expired, Some(now - max_age), now)
            .await?;
        self.metrics.notice("operator", "expired", report.expired);
        let lease =
            chrono::Duration::from_std(self.config.lease).unwrap_or(chrono::Duration::minutes(1));
        let due = self
            .store
            .claim_operator_notices(&self.worker_id, now, lease, self.config.batch)
            .await?;
        let sent = join_all(
            due.iter()
                .map(|n| async move { (n, operator.tell(n).await) }),
        )
        .await;
        for (notice, result) in sent {
            let outcome = self.outcome(notice, result);
            let recorded = self
                .store
                .finish_operator_notice(notice.claim, &outcome, self.clock.now())
                .await?;
            if !recorded {
                continue;
            }
            let counted = match &outcome {
                OperatorOutcome::Delivered => {
                    report.delivered += 1;
                    "delivered"
                }
                OperatorOutcome::Retry { .. } => {
                    report.retried += 1;
                    "retried"
                }
                OperatorOutcome::Failed { error } => {
                    report.failed += 1;
                    tracing::error!(
                        notice = %notice.claim.id,
                        session = %notice.session_id,
                        "operator channel gave up on a notice: {error}"
                    );
                    "failed"
                }
            };
            self.metrics.notice("operator", counted, 1);
        }
        Ok(report)
    }

    /// How an attempt's `result` is recorded: delivered, a retry after the
    /// spread backoff (not before the receiver's `Retry-After`), or the end
    /// when the error cannot pass or the budget is spent.
    fn outcome(&self, notice: &OperatorNotice, result: Result<(), AgentError>) -> OperatorOutcome {
        let error = match result {
            Ok(()) => return OperatorOutcome::Delivered,
            Err(error) => error,
        };
        let attempts = notice.attempts + 1;
        if !error.is_retryable() || attempts >= self.config.attempts {
            return OperatorOutcome::Failed {
                error: format!("after {attempts} attempt(s): {error}"),
            };
        }
        let wait = super::spread_backoff(
            self.config.backoff_base,
            self.config.backoff_max,
            notice.claim.id,
            attempts,
        )
        .max(error.retry_after().unwrap_or_default());
        let wait = chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::minutes(5));
        OperatorOutcome::Retry {
            at: self.clock.now() + wait,
            error: error.to_string(),
        }
    }
}
