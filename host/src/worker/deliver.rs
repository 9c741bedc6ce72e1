//! The deliver step: claim only what will be called now, keep each claim's
//! lease alive while its call runs, and record each call's outcome as soon
//! as it returns, fenced by the claim's token.
//!
//! Why this shape (each point is a promise in `docs/operations.md`):
//! - claiming no more than the free call slots, and renewing leases while
//!   calls run, means a slow agent never lets a lease lapse under a live
//!   call, so no other worker sends the same key while the first call may
//!   still be accepted (P2);
//! - recording each outcome on return means one slow call cannot hold up
//!   the record of the others, and an accepted call whose record fails (the
//!   database is restarting) is kept in memory, its lease renewed, and
//!   recorded on the next pass instead of being called again (P2, P6);
//! - a continuation is claimed only while its window is open, and one whose
//!   window closed while it waited or between retries is dropped with one
//!   notice (P3, P1).

use std::collections::HashSet;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::{notices, Worker, WorkerError};
use crate::agent::{AgentError, Notice};
use crate::store::{AttemptOutcome, Claim, Delivery, DeliveryKind, FailedCall};

/// What one deliver step did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DeliverReport {
    /// Deliveries claimed and attempted.
    pub attempted: usize,
    /// Calls the agent accepted, recorded as delivered.
    pub delivered: usize,
    /// Failed attempts that will be retried after a backoff.
    pub retried: usize,
    /// Deliveries that ended `failed`.
    pub gave_up: usize,
    /// Outcomes not recorded because another worker took the claim over
    /// (it redelivers with the same key).
    pub lease_lost: usize,
    /// Continuations dropped unsent: their window closed, or asked again
    /// before a retry the policy gave up on them.
    pub dropped_unsent: usize,
    /// Accepted calls whose record failed this pass; kept and recorded on a
    /// later pass, never called again.
    pub unrecorded: usize,
}

/// How a call ended, before it is recorded.
enum Called {
    Accepted,
    Failed(AgentError),
    /// Not made: asked again before a retry, the policy dropped it.
    Dropped(String),
}

/// What recording a call's outcome did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recorded {
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
    fn tally(&mut self, recorded: Recorded) {
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

impl Worker {
    /// One deliver step. Tests call this directly.
    pub async fn deliver_once(&self) -> Result<DeliverReport, WorkerError> {
        self.deliver_pass(&CancellationToken::new()).await
    }

    /// One deliver step that stops claiming once `stop` is cancelled; calls
    /// already made are finished and recorded.
    pub(crate) async fn deliver_pass(
        &self,
        stop: &CancellationToken,
    ) -> Result<DeliverReport, WorkerError> {
        let mut report = DeliverReport::default();
        self.record_unrecorded(&mut report).await?;
        self.drop_outside_window(&mut report).await?;

        let slots = self.config.delivery_concurrency.max(1);
        let budget = usize::try_from(self.config.batch)
            .unwrap_or(usize::MAX)
            .max(1);
        let mut first = self.claim(slots.min(budget)).await?;
        if first.is_empty() {
            return Ok(report);
        }
        let soul: std::sync::Arc<str> = self.soul().await.into();
        // Each call and its record run as their own task: a slow call never
        // holds up another's record, and nothing waits on a future that is
        // not being polled (a record awaited in this loop would starve the
        // other calls of their database connections).
        let mut calls = JoinSet::new();
        let mut claimed = 0usize;
        let mut exhausted = false;
        let mut claim_error = None;
        let mut renew = tokio::time::interval(self.config.renew_interval());
        renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        renew.tick().await;
        loop {
            for delivery in first.drain(..) {
                let Some(claim) = delivery.claim() else {
                    continue;
                };
                claimed += 1;
                let (worker, soul) = (self.clone(), soul.clone());
                calls.spawn(async move {
                    if !worker.still_held(&delivery, claim).await {
                        worker.lock_in_flight().remove(&claim);
                        worker.metrics.delivery("lease_lost");
                        return Recorded::LeaseLost;
                    }
                    let called = worker.call(&delivery, &soul).await;
                    let recorded = worker.record(&delivery, claim, called).await;
                    worker.lock_in_flight().remove(&claim);
                    recorded
                });
            }
            report.attempted = claimed;
            let free = slots.saturating_sub(calls.len());
            // Refill when a quarter of the slots are free, so claims stay
            // few without leaving slots idle behind one slow call.
            if !exhausted && !stop.is_cancelled() && free >= (slots / 4).max(1) && claimed < budget
            {
                match self.claim(free.min(budget - claimed)).await {
                    Ok(more) if more.is_empty() => exhausted = true,
                    Ok(more) => {
                        first = more;
                        continue;
                    }
                    Err(e) => {
                        exhausted = true;
                        claim_error = Some(e);
                    }
                }
            }
            if calls.is_empty() {
                break;
            }
            tokio::select! {
                Some(joined) = calls.join_next() => match joined {
                    Ok(recorded) => report.tally(recorded),
                    // Its lease lapses and the delivery is tried again.
                    Err(e) => tracing::error!("a delivery task failed: {e}"),
                },
                _ = renew.tick() => self.renew_leases().await,
            }
        }
        match claim_error {
            Some(e) => Err(e),
            None => Ok(report),
        }
    }

    /// Claims up to `limit` due deliveries under one fresh token. Each claim
    /// joins the set whose leases are renewed the moment it is taken, before
    /// anything else is awaited: a claim waiting for its call (behind the
    /// SOUL, behind a busy pool) must not lapse either.
    async fn claim(&self, limit: usize) -> Result<Vec<Delivery>, WorkerError> {
        let lease = self.config.lease_duration();
        let claimed = self
            .store
            .claim_deliveries(
                &self.config.worker_id,
                self.clock.now(),
                lease,
                i64::try_from(limit).unwrap_or(i64::MAX),
            )
            .await?;
        self.lock_in_flight()
            .extend(claimed.iter().filter_map(Delivery::claim));
        Ok(claimed)
    }

    /// Renews the leases of this worker's calls in flight and of accepted
    /// calls not yet recorded; the deliver step does so every
    /// [`WorkerConfig::renew_interval`](super::WorkerConfig::renew_interval)
    /// while calls run. A failure is logged: the next tick tries again, and
    /// a lease that lapses meanwhile is only at risk if another worker can
    /// reach the database when this one cannot.
    pub async fn renew_leases(&self) {
        let claims = self.claims_in_flight();
        if claims.is_empty() {
            return;
        }
        let lease = self.config.lease_duration();
        match self
            .store
            .renew_leases(&claims, self.clock.now(), lease)
            .await
        {
            Ok(held) if held.len() < claims.len() => {
                tracing::warn!(
                    lost = claims.len() - held.len(),
                    "leases taken over while their calls ran"
                );
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("lease renewal failed: {e}"),
        }
    }

    /// Whether the claim still holds its lease, checked just before the call
    /// when the lease may have lapsed since it was taken (the claim's round
    /// trip, or the wait for a task, took longer than a renewal period):
    /// the lease is renewed, and a claim another worker has taken over in
    /// the meantime is not called, so that worker's call is the only one.
    async fn still_held(&self, delivery: &Delivery, claim: Claim) -> bool {
        let Some(until) = delivery.lease_expires_at else {
            return false;
        };
        let margin = chrono::Duration::from_std(self.config.renew_interval())
            .unwrap_or(chrono::Duration::zero());
        if self.clock.now() + margin < until {
            return true;
        }
        let lease = self.config.lease_duration();
        match self
            .store
            .renew_leases(&[claim], self.clock.now(), lease)
            .await
        {
            Ok(held) => held.contains(&claim.id),
            Err(e) => {
                tracing::warn!(delivery = %claim.id, "could not confirm a stale claim, not calling: {e}");
                false
            }
        }
    }

    /// Calls the agent for one claimed delivery.
    async fn call(&self, delivery: &Delivery, soul: &str) -> Called {
        let lost = delivery.claims - 1 - delivery.attempts;
        if lost >= self.config.max_lost_claims {
            return Called::Failed(AgentError::Permanent(format!(
                "claimed {lost} times without a recorded result: the worker delivering it keeps dying mid-call"
            )));
        }
        if delivery.kind == DeliveryKind::Continuation {
            match self.redecide(delivery).await {
                Ok(Some(reason)) => return Called::Dropped(reason),
                Ok(None) => {}
                Err(e) => {
                    return Called::Failed(AgentError::unavailable(format!(
                        "could not ask the policy before the retry: {e}"
                    )))
                }
            }
        }
        let result = match delivery.kind {
            DeliveryKind::Continuation => match self.continuation(delivery, soul).await {
                Ok(continuation) => self.agent.continue_session(&continuation).await,
                // The executions could not be read: a shortage, tried again.
                Err(e) => Err(AgentError::unavailable(format!(
                    "could not load the executions: {e}"
                ))),
            },
            DeliveryKind::Notice => {
                let notice = Notice {
                    session_id: delivery.session_id,
                    idempotency_key: delivery.idempotency_key.clone(),
                    message: delivery.note.clone(),
                };
                self.agent.notify(&notice).await
            }
        };
        match result {
            Ok(()) => Called::Accepted,
            Err(e) => Called::Failed(e),
        }
    }

    /// Records one call's outcome.
    async fn record(&self, delivery: &Delivery, claim: Claim, called: Called) -> Recorded {
        let recorded = match called {
            Called::Accepted => {
                match self
                    .store
                    .complete_deliveries(&[claim], self.clock.now())
                    .await
                {
                    Ok(done) if done.contains(&claim.id) => Recorded::Delivered,
                    Ok(_) => {
                        tracing::warn!(delivery = %claim.id, "accepted call not recorded: its claim was taken over");
                        Recorded::LeaseLost
                    }
                    Err(e) => {
                        tracing::warn!(delivery = %claim.id, "recording an accepted call failed, kept for the next pass: {e}");
                        self.keep_unrecorded(claim);
                        Recorded::Unrecorded
                    }
                }
            }
            Called::Dropped(reason) => {
                let message = notices::not_continued(&delivery.execution_ids, &reason);
                match self
                    .store
                    .drop_claimed(claim, &reason, &message, self.clock.now())
                    .await
                {
                    Ok(true) => Recorded::Dropped,
                    Ok(false) => Recorded::LeaseLost,
                    Err(e) => {
                        tracing::warn!(delivery = %claim.id, "recording a drop failed: {e}");
                        Recorded::Lapsed
                    }
                }
            }
            Called::Failed(error) => match self.record_failure(delivery, claim, &error).await {
                Ok(AttemptOutcome::Retry { .. }) => Recorded::Retried,
                Ok(AttemptOutcome::GaveUp { .. }) => Recorded::GaveUp,
                Ok(AttemptOutcome::LeaseLost) => Recorded::LeaseLost,
                // The lease lapses and the call is made again: its last
                // outcome was a failure, so no acceptance is repeated.
                Err(e) => {
                    tracing::warn!(delivery = %claim.id, "recording a failed call failed: {e}");
                    Recorded::Lapsed
                }
            },
        };
        self.metrics.delivery(recorded.label());
        recorded
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
        tracing::warn!(delivery = %delivery.id, session = %delivery.session_id, "agent call failed: {error}");
        let budget = chrono::Duration::from_std(self.config.retry_budget)
            .unwrap_or(chrono::Duration::minutes(15));
        let deadline = delivery.first_failed_at.unwrap_or(now) + budget;
        let wait = super::backoff(&self.config, delivery.attempts + 1)
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

    /// Drops, with one notice each, the continuations whose window closed
    /// while they waited or between retries.
    async fn drop_outside_window(&self, report: &mut DeliverReport) -> Result<(), WorkerError> {
        let now = self.clock.now();
        let found = self
            .store
            .continuations_outside_window(now, self.config.batch)
            .await?;
        for (delivery, window) in found {
            let reason = notices::window_closed_reason(window.as_ref());
            let message = notices::not_continued(&delivery.execution_ids, &reason);
            if self
                .store
                .drop_continuation(delivery.id, &reason, &message, now)
                .await?
            {
                report.dropped_unsent += 1;
                self.metrics.delivery("dropped_window_closed");
            }
        }
        Ok(())
    }

    /// Records the accepted calls an earlier pass could not record.
    async fn record_unrecorded(&self, report: &mut DeliverReport) -> Result<(), WorkerError> {
        let claims = self.unrecorded_claims();
        if claims.is_empty() {
            return Ok(());
        }
        let done = self
            .store
            .complete_deliveries(&claims, self.clock.now())
            .await?;
        report.delivered += done.len();
        report.lease_lost += claims.len() - done.len();
        for _ in 0..done.len() {
            self.metrics.delivery("delivered");
        }
        // Recorded, or taken over by another worker: either way no longer ours.
        let mut kept = self.unrecorded.lock().unwrap_or_else(|p| p.into_inner());
        kept.retain(|c| !claims.contains(c));
        Ok(())
    }

    /// This worker's claims whose call is running, and its accepted calls
    /// not yet recorded: what a crash now would leave with an unknown
    /// outcome.
    pub fn claims_in_flight(&self) -> Vec<Claim> {
        let mut claims: Vec<Claim> = self.lock_in_flight().iter().copied().collect();
        claims.extend(self.unrecorded_claims());
        claims
    }

    fn lock_in_flight(&self) -> std::sync::MutexGuard<'_, HashSet<Claim>> {
        self.in_flight.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn keep_unrecorded(&self, claim: Claim) {
        self.unrecorded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(claim);
    }

    fn unrecorded_claims(&self) -> Vec<Claim> {
        self.unrecorded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The active policy's SOUL text; empty if the policy fails (the note
    /// still goes out: it carries the result, the SOUL only frames it).
    async fn soul(&self) -> String {
        let evaluated = self.policy.soul().await.ok();
        evaluated.and_then(|e| e.value.ok()).unwrap_or_default()
    }
}
