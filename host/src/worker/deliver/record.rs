//! Recording what the deliver step's calls did.
//!
//! Accepted calls are recorded in groups (group commit): a call the agent
//! accepted is queued, and whatever is queued when no group is being written
//! goes out as the next group, in one transaction
//! ([`Store::complete_deliveries`](crate::store::Store::complete_deliveries)).
//! So under load the calls that finish while one group commits share the next
//! commit, and an idle worker records a lone call at once: no timer gathers
//! anything, so no latency is added. Each row is still fenced by its own
//! claim's token, so a claim another worker took over is reported lost alone,
//! not with its group.
//!
//! A claim stays among the worker's claims in flight, its lease renewed,
//! until its group's commit has returned: the accepted record is durable
//! before any other worker could claim the key again (P2). A group whose
//! record fails is kept as unrecorded, renewed and recorded on the next pass,
//! never called again (P6).
//!
//! Failed and dropped calls are rare; each is recorded on its own, by the
//! task that made the call.

use std::collections::HashSet;
use std::time::Duration;

use tokio::task::JoinHandle;
use uuid::Uuid;

use super::{DeliverReport, Deliverer};
use crate::agent::AgentError;
use crate::store::{AttemptOutcome, Claim, Delivery, DeliveryKind, FailedCall};
use crate::worker::{notices, WorkerError};

/// How a call that the agent did not accept ended, before it is recorded.
pub(super) enum NotAccepted {
    Failed(AgentError),
    /// Not made: what the call needed could not be read or asked for (the
    /// error); recorded as a failed attempt like `Failed`, but not logged
    /// per call: the cause is logged once, as the deliverer's `loads`
    /// episode.
    NotMade(AgentError),
    /// Not made: asked again before a retry, the policy dropped it.
    Dropped(String),
    /// Not made: the claim's lease could not be confirmed at the moment of
    /// the call (taken over, or the database did not answer). Nothing is
    /// recorded; another worker holds it, or will once the lease lapses.
    NotHeld,
}

/// What recording a call's outcome did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Recorded {
    Delivered,
    Retried,
    GaveUp,
    LeaseLost,
    /// Accepted, but the record failed: kept for the next pass.
    Unrecorded,
    /// A failure whose record failed: the lease lapses and it is retried.
    Lapsed,
    /// The policy dropped it before a retry (one notice).
    Dropped,
}

impl Recorded {
    /// The `result` label of `nomos_continue_deliveries_total`.
    fn label(self) -> &'static str {
        match self {
            Self::Delivered => "delivered",
            Self::Retried => "retry",
            Self::GaveUp => "gave_up",
            Self::LeaseLost => "lease_lost",
            Self::Unrecorded => "unrecorded",
            Self::Lapsed => "not_recorded",
            Self::Dropped => "dropped_by_policy",
        }
    }
}

impl DeliverReport {
    /// Counts one outcome, in the report and in the metrics.
    pub(super) fn tally(&mut self, worker: &Deliverer, recorded: Recorded) {
        worker.metrics.delivery(recorded.label());
        match recorded {
            Recorded::Delivered => self.delivered += 1,
            Recorded::Retried => self.retried += 1,
            Recorded::GaveUp => self.gave_up += 1,
            Recorded::LeaseLost => self.lease_lost += 1,
            Recorded::Unrecorded => self.unrecorded += 1,
            Recorded::Lapsed => {}
            Recorded::Dropped => self.dropped_unsent += 1,
        }
    }
}

/// The group being written: its claims, and the task writing them (a task,
/// so that the deliver step keeps renewing leases and joining calls while a
/// commit is slow).
type Writing = (Vec<Claim>, JoinHandle<Result<Vec<Uuid>, WorkerError>>);

/// The accepted calls of one deliver pass waiting for their record.
pub(super) struct Recorder {
    worker: Deliverer,
    queued: Vec<Claim>,
    writing: Option<Writing>,
}

impl Recorder {
    pub(super) fn new(worker: &Deliverer) -> Self {
        Self {
            worker: worker.clone(),
            queued: Vec::new(),
            writing: None,
        }
    }

    /// Queues an accepted call; its claim stays in flight until recorded.
    pub(super) fn push(&mut self, claim: Claim) {
        self.queued.push(claim);
    }

    /// Nothing queued and nothing being written.
    pub(super) fn is_idle(&self) -> bool {
        self.queued.is_empty() && self.writing.is_none()
    }

    /// Starts writing everything queued as one group, unless a group is
    /// being written already (then the queue grows into the next group).
    pub(super) fn flush(&mut self) {
        if self.writing.is_some() || self.queued.is_empty() {
            return;
        }
        let group = std::mem::take(&mut self.queued);
        let (worker, claims) = (self.worker.clone(), group.clone());
        let task = tokio::spawn(async move {
            let now = worker.clock.now();
            Ok(worker.store.complete_deliveries(&claims, now).await?)
        });
        self.writing = Some((group, task));
    }

    /// Waits for the group being written and counts it; never returns while
    /// none is (for `select!`). Cancel-safe: the group stays until its
    /// write has ended.
    pub(super) async fn written(&mut self, report: &mut DeliverReport) {
        let Some((_, task)) = self.writing.as_mut() else {
            return std::future::pending().await;
        };
        let result = match task.await {
            Ok(result) => result.map_err(|e| e.to_string()),
            // Whether it committed is unknown: kept, and the next pass finds out.
            Err(e) => Err(format!("the record task failed: {e}")),
        };
        let Some((group, _)) = self.writing.take() else {
            return;
        };
        match self.worker.records.observe(result) {
            Ok(done) => self.worker.count_recorded(&group, &done, report),
            Err(_) => {
                // Logged as the records' episode: kept for the next pass.
                for &claim in &group {
                    self.worker.keep_unrecorded(claim);
                    report.tally(&self.worker, Recorded::Unrecorded);
                }
            }
        }
        // Recorded, lost or kept unrecorded (and renewed there): no longer
        // a call in flight.
        let mut in_flight = self.worker.lock_in_flight();
        for claim in &group {
            in_flight.remove(claim);
        }
    }
}

impl Drop for Recorder {
    /// A pass abandoned before its records were written (its future was
    /// dropped) keeps those accepted calls as unrecorded: they are recorded
    /// on the next pass, never called again.
    fn drop(&mut self) {
        let writing = self.writing.take().map(|(group, _)| group);
        let left: Vec<Claim> = self
            .queued
            .drain(..)
            .chain(writing.into_iter().flatten())
            .collect();
        if left.is_empty() {
            return;
        }
        for &claim in &left {
            self.worker.keep_unrecorded(claim);
        }
        let mut in_flight = self.worker.lock_in_flight();
        for claim in &left {
            in_flight.remove(claim);
        }
    }
}

impl Deliverer {
    /// Counts a recorded group of accepted calls: those in `done` were
    /// recorded; the others had been taken over by another worker, which
    /// sends the same key again.
    fn count_recorded(&self, group: &[Claim], done: &[Uuid], report: &mut DeliverReport) {
        let done: HashSet<&Uuid> = done.iter().collect();
        for claim in group {
            if done.contains(&claim.id) {
                report.tally(self, Recorded::Delivered);
            } else {
                tracing::warn!(delivery = %claim.id, "accepted call not recorded: its claim was taken over");
                report.tally(self, Recorded::LeaseLost);
            }
        }
    }

    /// Records a call that was not accepted: a failure (retry or give up) or
    /// a drop by the policy.
    pub(super) async fn record(
        &self,
        delivery: &Delivery,
        claim: Claim,
        called: NotAccepted,
    ) -> Recorded {
        match called {
            NotAccepted::NotHeld => Recorded::LeaseLost,
            NotAccepted::Dropped(reason) => {
                let message = notices::not_continued(&delivery.execution_ids, &reason);
                let dropped = (self.store)
                    .drop_claimed(claim, &reason, &message, self.clock.now())
                    .await;
                match self.records.observe(dropped) {
                    Ok(true) => Recorded::Dropped,
                    Ok(false) => Recorded::LeaseLost,
                    Err(_) => Recorded::Lapsed,
                }
            }
            NotAccepted::Failed(error) => {
                tracing::warn!(delivery = %delivery.id, session = %delivery.session_id, "agent call failed: {error}");
                self.failed_attempt(delivery, claim, &error).await
            }
            NotAccepted::NotMade(error) => {
                tracing::debug!(delivery = %delivery.id, "call not made: {error}");
                self.failed_attempt(delivery, claim, &error).await
            }
        }
    }

    /// Records a failed attempt (see [`Self::record_failure`]) and what the
    /// record did.
    async fn failed_attempt(
        &self,
        delivery: &Delivery,
        claim: Claim,
        error: &AgentError,
    ) -> Recorded {
        let recorded = self.record_failure(delivery, claim, error).await;
        match self.records.observe(recorded) {
            Ok(AttemptOutcome::Retry { .. }) => Recorded::Retried,
            Ok(AttemptOutcome::GaveUp { .. }) => Recorded::GaveUp,
            Ok(AttemptOutcome::LeaseLost) => Recorded::LeaseLost,
            // The lease lapses and the call is made again: its last
            // outcome was a failure, so no acceptance is repeated.
            Err(_) => Recorded::Lapsed,
        }
    }

    /// Records a failed call: a retry after a backoff (not before the
    /// runtime's `Retry-After`, not after the budget's end), or, for a
    /// permanent error or a spent wall-time budget, a visible `failed` state
    /// with one notice.
    async fn record_failure(
        &self,
        delivery: &Delivery,
        claim: Claim,
        error: &AgentError,
    ) -> Result<AttemptOutcome, WorkerError> {
        let now = self.clock.now();
        let budget = chrono::Duration::from_std(self.config.retry_budget)
            .unwrap_or(chrono::Duration::minutes(15));
        let deadline = delivery.first_failed_at.unwrap_or(now) + budget;
        let wait = crate::worker::backoff(&self.config, delivery.id, delivery.attempts + 1)
            .max(error.retry_after().unwrap_or(Duration::ZERO));
        let next = (now + chrono::Duration::from_std(wait).unwrap_or(budget)).min(deadline);
        let give_up = !error.is_retryable() || now >= deadline;
        let notice = (give_up && delivery.kind == DeliveryKind::Continuation)
            .then(|| notices::gave_up(delivery, error.message()));
        let call = FailedCall {
            error: error.message(),
            next_attempt_at: next,
            shortage: error.is_shortage(),
            give_up,
            notice: notice.as_deref(),
        };
        Ok(self.store.fail_delivery_attempt(claim, &call, now).await?)
    }

    /// Records the accepted calls an earlier pass could not record.
    pub(super) async fn record_unrecorded(
        &self,
        report: &mut DeliverReport,
    ) -> Result<(), WorkerError> {
        let claims = self.unrecorded_claims();
        if claims.is_empty() {
            return Ok(());
        }
        let done = self
            .store
            .complete_deliveries(&claims, self.clock.now())
            .await?;
        self.count_recorded(&claims, &done, report);
        // Recorded, or taken over by another worker: either way no longer ours.
        let mut kept = self.unrecorded.lock().unwrap_or_else(|p| p.into_inner());
        kept.retain(|c| !claims.contains(c));
        Ok(())
    }

    pub(super) fn keep_unrecorded(&self, claim: Claim) {
        self.unrecorded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(claim);
    }

    pub(super) fn unrecorded_claims(&self) -> Vec<Claim> {
        self.unrecorded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}
