//! The deliver step: claim pending deliveries under a lease, call the agent
//! with the delivery's idempotency key, then record the result with a
//! compare-and-set on the lease.

use std::collections::HashMap;
use std::time::Duration;

use futures_util::stream::{self, StreamExt};
use nomos_policy_default::types as t;
use time::OffsetDateTime;

use super::{backoff, Worker, WorkerError};
use crate::agent::{AgentError, Continuation, ExecutionReport, Notice};
use crate::store::{AttemptOutcome, Delivery, DeliveryKind};

/// What one deliver step did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DeliverReport {
    /// Deliveries claimed and attempted.
    pub attempted: usize,
    pub delivered: usize,
    /// Failed attempts that will be retried after a backoff.
    pub retried: usize,
    /// Deliveries that ended `failed`.
    pub gave_up: usize,
    /// Results not recorded because another worker took the lease over (it
    /// redelivers with the same key).
    pub lease_lost: usize,
}

/// The result of one delivery attempt.
enum Attempt {
    /// The runtime accepted the call; marked delivered with the others of
    /// the pass.
    Accepted(uuid::Uuid),
    Retried,
    GaveUp,
    LeaseLost,
}

impl Worker {
    /// One deliver step. Tests call this directly.
    pub async fn deliver_once(&self) -> Result<DeliverReport, WorkerError> {
        let now = self.clock.now();
        let lease =
            time::Duration::try_from(self.config.lease).unwrap_or(time::Duration::minutes(1));
        let claimed = self
            .store
            .claim_deliveries(&self.config.worker_id, now, lease, self.config.batch)
            .await?;
        let mut report = DeliverReport {
            attempted: claimed.len(),
            ..DeliverReport::default()
        };
        if claimed.is_empty() {
            return Ok(report);
        }
        let soul = self.soul().await;
        let results: Vec<Result<Attempt, WorkerError>> = stream::iter(claimed)
            .map(|delivery| self.deliver(delivery, &soul))
            .buffer_unordered(self.config.delivery_concurrency.max(1))
            .collect()
            .await;
        let mut accepted = Vec::new();
        for result in results {
            match result? {
                Attempt::Accepted(id) => accepted.push(id),
                Attempt::Retried => report.retried += 1,
                Attempt::GaveUp => report.gave_up += 1,
                Attempt::LeaseLost => report.lease_lost += 1,
            }
        }
        // Every call the runtime accepted is marked in one transaction, with
        // its links; a crash before this commit redelivers with the same keys.
        let marked = self
            .store
            .complete_deliveries(&accepted, &self.config.worker_id, self.clock.now())
            .await?;
        report.delivered = marked.len();
        report.lease_lost += accepted.len() - marked.len();
        for _ in 0..marked.len() {
            self.metrics.delivery("delivered");
        }
        for _ in marked.len()..accepted.len() {
            self.metrics.delivery("lease_lost");
        }
        Ok(report)
    }

    /// The active policy's SOUL text; empty if the policy fails (the note
    /// still goes out: it carries the result, the SOUL only frames it).
    async fn soul(&self) -> String {
        let policy = self.policy.clone();
        match tokio::task::spawn_blocking(move || policy.soul().value).await {
            Ok(Ok(soul)) => soul,
            _ => String::new(),
        }
    }

    async fn deliver(&self, delivery: Delivery, soul: &str) -> Result<Attempt, WorkerError> {
        let lost = delivery.claims - 1 - delivery.attempts;
        if lost >= self.config.max_lost_claims {
            let error = AgentError::Permanent(format!(
                "claimed {lost} times without a recorded result: the worker delivering it keeps dying mid-call"
            ));
            return self.record_failure(&delivery, error).await;
        }
        let call = match delivery.kind {
            DeliveryKind::Continuation => {
                let continuation = self.continuation(&delivery, soul).await?;
                self.agent.continue_session(&continuation).await
            }
            DeliveryKind::Notice => {
                let notice = Notice {
                    session_id: delivery.session_id,
                    idempotency_key: delivery.idempotency_key.clone(),
                    message: delivery.note.clone(),
                };
                self.agent.notify(&notice).await
            }
        };
        match call {
            Ok(()) => Ok(Attempt::Accepted(delivery.id)),
            Err(error) => self.record_failure(&delivery, error).await,
        }
    }

    /// Records a failed call: a retry after a backoff, or (permanent error,
    /// or the budget spent) a visible `failed` state.
    async fn record_failure(
        &self,
        delivery: &Delivery,
        error: AgentError,
    ) -> Result<Attempt, WorkerError> {
        let now = self.clock.now();
        let (max_attempts, message) = match &error {
            AgentError::Retryable(m) => (self.config.max_attempts, m.clone()),
            AgentError::Permanent(m) => (0, m.clone()),
        };
        let delay = backoff(&self.config, delivery.attempts + 1);
        let next = now + time::Duration::try_from(delay).unwrap_or(time::Duration::minutes(5));
        tracing::warn!(delivery = %delivery.id, session = %delivery.session_id, "agent call failed: {error}");
        let attempt = match self
            .store
            .fail_delivery_attempt(
                delivery.id,
                &self.config.worker_id,
                &message,
                now,
                next,
                max_attempts,
            )
            .await?
        {
            AttemptOutcome::Retry { .. } => Attempt::Retried,
            AttemptOutcome::GaveUp { .. } => Attempt::GaveUp,
            AttemptOutcome::LeaseLost => Attempt::LeaseLost,
        };
        self.metrics.delivery(match attempt {
            Attempt::Accepted(_) => "accepted",
            Attempt::Retried => "retry",
            Attempt::GaveUp => "gave_up",
            Attempt::LeaseLost => "lease_lost",
        });
        Ok(attempt)
    }

    /// The agent's view of a continuation: each execution's latest status and
    /// result, and how the policy classifies it. The executions are loaded in
    /// one query and each distinct status is classified once, in one
    /// blocking task: a folded continuation costs one round trip, not one per
    /// execution.
    async fn continuation(
        &self,
        delivery: &Delivery,
        soul: &str,
    ) -> Result<Continuation, WorkerError> {
        let loaded = self.store.executions(&delivery.execution_ids).await?;
        let mut statuses: Vec<String> = loaded.iter().map(|e| e.status.clone()).collect();
        statuses.sort();
        statuses.dedup();
        let policy = self.policy.clone();
        let outcomes: HashMap<String, String> = tokio::task::spawn_blocking(move || {
            statuses
                .into_iter()
                .map(|status| {
                    let outcome = match policy.classify(&status).value {
                        Ok(t::StatusClass::Terminal(o)) => o.as_str().to_string(),
                        _ => "unknown".to_string(),
                    };
                    (status, outcome)
                })
                .collect()
        })
        .await
        .map_err(|e| WorkerError::PolicyTask(e.to_string()))?;
        let mut executions = Vec::with_capacity(loaded.len());
        let mut finished_latest: Option<OffsetDateTime> = None;
        for execution in loaded {
            let finished = execution.finished_at.unwrap_or(execution.updated_at);
            finished_latest = Some(finished_latest.map_or(finished, |f| f.max(finished)));
            let outcome = outcomes
                .get(&execution.status)
                .cloned()
                .unwrap_or_else(|| "unknown".to_string());
            executions.push(ExecutionReport {
                id: execution.id,
                status: execution.status,
                outcome,
                result: execution.result,
            });
        }
        if let Some(finished) = finished_latest {
            let latency = self.clock.now() - finished;
            self.metrics
                .pickup_latency(Duration::try_from(latency).unwrap_or(Duration::ZERO));
        }
        Ok(Continuation {
            session_id: delivery.session_id,
            idempotency_key: delivery.idempotency_key.clone(),
            executions,
            note: delivery.note.clone(),
            soul: soul.to_string(),
        })
    }
}
