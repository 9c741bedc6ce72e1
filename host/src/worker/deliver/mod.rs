//! The deliver step: claim only what will be called now, keep each claim's
//! lease alive while its call runs, and record each call's outcome as soon
//! as it returns, fenced by the claim's token (accepted calls in groups, see
//! `record`).
//!
//! Why this shape (each point is a promise in `docs/operations.md`):
//! - claiming no more than the free call slots, and renewing leases while
//!   calls run, means a slow agent never lets a lease lapse under a live
//!   call, so no other worker sends the same key while the first call may
//!   still be accepted (P2);
//! - recording each outcome on return means one slow call cannot hold up
//!   the record of the others (calls that return together share one commit),
//!   and an accepted call whose record fails (the
//!   database is restarting) is kept in memory, its lease renewed, and
//!   recorded on the next pass instead of being called again (P2, P6);
//! - a continuation is claimed only while its window is open, and one whose
//!   window closed while it waited or between retries is dropped with one
//!   notice (P3, P1);
//! - a call begins only on a lease this worker's clock says is still
//!   running: each claim's lease is known (as taken, or as last renewed),
//!   and a call whose lease is within a renewal period of its end is
//!   confirmed by a renewal first. A worker cut from the database (whose
//!   reads before the call may hang until the network mends, long after
//!   another worker took the claim over) then never sends a key another
//!   worker holds (P2, P3).

mod call;
mod continuation;
mod fence;
mod lease;
mod record;
mod trace;

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::agent::Continuation;
use crate::store::{Claim, Delivery, Episode, Poll};
use crate::worker::context::Context;
use crate::worker::handover::Claimed;
use crate::worker::{notices, WorkerError};
use lease::claimed_lease;
use record::{Recorded, Recorder};

/// The deliver step's side of the worker: claims due deliveries (and takes
/// those the planner claimed), calls the agent, keeps leases alive while
/// calls run, and records each outcome. Cheap to clone; clones share the
/// claims in flight.
#[derive(Clone)]
pub(crate) struct Deliverer {
    cx: Context,
    agent: Arc<dyn crate::agent::Agent>,
    /// Claims whose call the agent accepted but whose record failed (the
    /// database was unreachable): recorded first on the next pass, and
    /// their leases renewed meanwhile, so they are never called again.
    unrecorded: Arc<Mutex<Vec<Claim>>>,
    /// Claims whose call is running now, whose leases are renewed, with
    /// the time each lease is known to last until by this worker's clock
    /// (as claimed, or as last renewed).
    in_flight: Arc<Mutex<HashMap<Claim, DateTime<Utc>>>>,
    /// Whether the standby fence is holding calls back (logged once per
    /// episode).
    fence: Arc<fence::Episode>,
    /// Failed lease renewals and confirmations, logged as one episode.
    renewals: Arc<Episode>,
    /// Failed records of calls' outcomes, logged as one episode.
    records: Arc<Episode>,
    /// Failed reads of what calls need (executions, classes, the policy's
    /// second look before a retry), logged as one episode.
    loads: Arc<Episode>,
}

impl Deref for Deliverer {
    type Target = Context;

    fn deref(&self) -> &Context {
        &self.cx
    }
}

impl Deliverer {
    pub(crate) fn new(cx: Context, agent: Arc<dyn crate::agent::Agent>) -> Self {
        Self {
            cx,
            agent,
            unrecorded: Arc::default(),
            in_flight: Arc::default(),
            fence: Arc::default(),
            renewals: Arc::new(Episode::new("lease renewal")),
            records: Arc::new(Episode::new("recording a call's outcome")),
            loads: Arc::new(Episode::new("loading what a call needs")),
        }
    }
}

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

/// What a claimed delivery is called with; `Err` when its executions could
/// not be loaded (the error): not called, retried.
enum Ready {
    Notice,
    Continuation(Box<Continuation>),
}

/// How a call task ended.
enum Finished {
    /// The agent accepted: the recorder records it, with the others that
    /// end meanwhile.
    Accepted(Claim),
    /// Not accepted, and recorded by the task.
    Recorded(Recorded),
}

impl Deliverer {
    #[cfg(feature = "test-support")]
    /// One deliver step. Tests call this directly.
    pub async fn deliver_once(&self) -> Result<DeliverReport, WorkerError> {
        let claimed = Claimed::new(self.store.primary_era());
        self.deliver_pass(&CancellationToken::new(), claimed, Poll::Sweep)
            .await
    }

    /// One deliver step that stops claiming once `stop` is cancelled; calls
    /// already made are finished and recorded. `claimed` are continuations
    /// the plan step claimed for it: they are called first, without a claim
    /// of their own, built from what the plan read, and the step claims more
    /// once calls are running. Only
    /// a sweep looks for continuations whose window closed while they
    /// waited (a read of every pending continuation): a claim never takes
    /// one, so the sweep only settles them, within a poll interval.
    pub(crate) async fn deliver_pass(
        &self,
        stop: &CancellationToken,
        claimed: Claimed,
        poll: Poll,
    ) -> Result<DeliverReport, WorkerError> {
        let Claimed {
            mut era,
            deliveries: claimed,
            mut read,
        } = claimed;
        let mut report = DeliverReport::default();
        self.settle_before_calls(&claimed, poll, &mut report)
            .await?;

        let (slots, budget) = self.config.call_slots();
        let mut batch = if claimed.is_empty() {
            let (at, batch) = self.claim(slots.min(budget)).await?;
            era = at;
            batch
        } else {
            claimed
        };
        if batch.is_empty() {
            return Ok(report);
        }
        let soul: std::sync::Arc<str> = self.soul().await.into();
        // Each call runs as its own task: a slow call never holds up
        // another, and nothing waits on a future that is not being polled.
        // An accepted call's task ends when the agent answers, freeing its
        // slot; its record is the recorder's, written in a task of its own
        // while this loop goes on claiming, calling and renewing leases.
        let mut calls = JoinSet::new();
        let mut recorder = Recorder::new(self);
        let mut claimed = 0usize;
        let mut exhausted = false;
        let mut claim_error = None;
        let mut renew = self.renew_timer();
        loop {
            claimed += batch.len();
            report.attempted = claimed;
            // The batch's reads and the standby fence at once: the fence
            // looks at the WAL after the claims' commits, which are behind
            // us, and nothing is called before both are done.
            let (prepared, gate) = tokio::join!(
                self.prepare(std::mem::take(&mut batch), read.take(), &soul, &mut report),
                self.fence(&mut renew),
            );
            for (delivery, claim, ready, trace) in prepared {
                calls.spawn(self.clone().call_task(
                    delivery,
                    (claim, era),
                    ready,
                    trace,
                    gate.clone(),
                ));
            }
            recorder.flush();
            // Let the calls start before claiming more: a task spawned from
            // a worker thread waits in that thread's own slot, which no
            // other thread takes, until this task yields.
            tokio::task::yield_now().await;
            let free = slots.saturating_sub(calls.len());
            // Refill when a quarter of the slots are free, so claims stay
            // few without leaving slots idle behind one slow call.
            if !exhausted && !stop.is_cancelled() && free >= (slots / 4).max(1) && claimed < budget
            {
                match self.claim(free.min(budget - claimed)).await {
                    Ok((_, more)) if more.is_empty() => exhausted = true,
                    Ok((at, more)) => {
                        (era, batch) = (at, more);
                        continue;
                    }
                    Err(e) => {
                        exhausted = true;
                        claim_error = Some(e);
                    }
                }
            }
            if calls.is_empty() && recorder.is_idle() {
                break;
            }
            tokio::select! {
                Some(joined) = calls.join_next() => {
                    self.finished(joined, &mut recorder, &mut report);
                    // Take every call that has ended, so the next claim and
                    // the next group are as large as they can be.
                    while let Some(joined) = calls.try_join_next() {
                        self.finished(joined, &mut recorder, &mut report);
                    }
                }
                () = recorder.written(&mut report) => {}
                _ = renew.tick() => self.renew_leases().await,
            }
        }
        match claim_error {
            Some(e) => Err(e),
            None => Ok(report),
        }
    }

    /// Before this pass calls anything: the outcomes of calls not yet
    /// recorded, and (on a sweep) the continuations whose window closed.
    /// The preclaimed deliveries are renewed from now on, like any claim of
    /// ours; if this fails they are let go and their leases lapse, so
    /// another pass claims them (never kept renewed and uncalled).
    async fn settle_before_calls(
        &self,
        claimed: &[Delivery],
        poll: Poll,
        report: &mut DeliverReport,
    ) -> Result<(), WorkerError> {
        let preclaimed: Vec<Claim> = claimed.iter().filter_map(Delivery::claim).collect();
        self.lock_in_flight()
            .extend(claimed.iter().filter_map(claimed_lease));
        let settled = match self.record_unrecorded(report).await {
            Ok(()) if poll == Poll::Sweep => self.drop_outside_window(report).await,
            other => other,
        };
        if settled.is_err() {
            let mut in_flight = self.lock_in_flight();
            for claim in &preclaimed {
                in_flight.remove(claim);
            }
        }
        settled
    }

    /// Takes a call task's end: an accepted call goes to the recorder,
    /// anything else was recorded by the task.
    fn finished(
        &self,
        joined: Result<Finished, tokio::task::JoinError>,
        recorder: &mut Recorder,
        report: &mut DeliverReport,
    ) {
        match joined {
            Ok(Finished::Accepted(claim)) => recorder.push(claim),
            Ok(Finished::Recorded(recorded)) => report.tally(self, recorded),
            // Its lease lapses and the delivery is tried again.
            Err(e) => tracing::error!("a delivery task failed: {e}"),
        }
    }

    /// Claims up to `limit` due deliveries under one fresh token, and says
    /// in which of the store's primary eras ([`Store::primary_era`], read
    /// before the claim) it was taken, for the standby fence. Each claim
    /// joins the set whose leases are renewed the moment it is taken, before
    /// anything else is awaited: a claim waiting for its call (behind the
    /// SOUL, behind a busy pool) must not lapse either.
    async fn claim(&self, limit: usize) -> Result<(u64, Vec<Delivery>), WorkerError> {
        let era = self.store.primary_era();
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
            .extend(claimed.iter().filter_map(claimed_lease));
        Ok((era, claimed))
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

    /// This worker's claims whose call is running, and its accepted calls
    /// not yet recorded: what a crash now would leave with an unknown
    /// outcome.
    pub fn claims_in_flight(&self) -> Vec<Claim> {
        let mut claims: Vec<Claim> = self.lock_in_flight().keys().copied().collect();
        claims.extend(self.unrecorded_claims());
        claims
    }

    pub(super) fn lock_in_flight(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<Claim, DateTime<Utc>>> {
        self.in_flight.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The active policy's SOUL text; empty if the policy fails (the note
    /// still goes out: it carries the result, the SOUL only frames it).
    async fn soul(&self) -> String {
        let evaluated = self.policy.soul().await.ok();
        evaluated.and_then(|e| e.value.ok()).unwrap_or_default()
    }
}
