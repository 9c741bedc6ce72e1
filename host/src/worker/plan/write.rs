//! The plan step's writes: one continuation per session folding its
//! `continue`s, a group of sessions per store transaction (the first group
//! claiming some for the pass's deliver step), and the drops, each reason
//! of a session settled with one notice.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use futures_util::stream::{self, StreamExt};
use uuid::Uuid;

use super::fold::fold_notes;
use super::{idempotency_key, PlanReport, Planner, SessionDecisions};
use crate::store::{
    Backend, ContinuationPlan, Delivery, FreshClaim, Notice, PlanOutcome, StoreError,
};
use crate::worker::journal::Journal;
use crate::worker::WorkerError;

/// The most sessions the plan step reads or settles at once (the PostgreSQL
/// pool has 16 connections).
const MAX_PLAN_CONCURRENCY: usize = 8;

/// Sessions planned per store transaction: the transaction is a fixed
/// number of set-based statements, so larger groups mean fewer commits;
/// smaller ones keep each transaction's locks short.
const PLAN_GROUP: usize = 512;

impl Planner {
    /// Plan transactions run at once: the delivery concurrency, but at most
    /// [`MAX_PLAN_CONCURRENCY`] so the pool keeps connections for the API
    /// and the deliveries; one on SQLite, whose writers take turns anyway
    /// and wait for the file lock in the busy handler's sleeps (5.5 s of a
    /// 6 s pass over 10,000 sessions, measured, when eight were started
    /// together).
    pub(super) fn plan_concurrency(&self) -> usize {
        match self.store.backend() {
            Backend::Sqlite => 1,
            Backend::Postgres => self
                .config
                .delivery_concurrency
                .clamp(1, MAX_PLAN_CONCURRENCY),
        }
    }

    /// Writes one continuation per session folding its `continue`s, all in
    /// one store transaction. The store re-checks the window and the hard
    /// cap; a refusal there is returned as `(session, reason, ids)` to be
    /// dropped with a notice.
    pub(super) async fn plan_all(
        &self,
        sessions: &BTreeMap<Uuid, SessionDecisions>,
        claim: bool,
        report: &mut PlanReport,
        claimed: &mut Vec<Delivery>,
        journal: &mut Journal,
    ) -> Result<Vec<(Uuid, String, Vec<Uuid>)>, WorkerError> {
        let folded = fold_sessions(sessions);
        let plans: Vec<ContinuationPlan<'_>> = folded
            .iter()
            .map(|f| ContinuationPlan {
                session_id: f.session_id,
                execution_ids: &f.ids,
                note: &f.note,
                policy_revision: f.revision,
                idempotency_key: &f.key,
                hard_cap: self.config.hard_cap,
            })
            .collect();
        if plans.is_empty() {
            return Ok(Vec::new());
        }
        // Groups of sessions per transaction, a few transactions at once:
        // fewer commits than one per session, more parallel round trips than
        // one for all. Each group is in session order, so no two
        // transactions lock windows in opposite orders.
        // The first group claims up to half the call slots for this pass's
        // deliver step (the other half stays for what is already due).
        let fresh = claim.then(|| FreshClaim {
            worker_id: &self.config.worker_id,
            lease: self.config.lease_duration(),
            limit: (self.config.delivery_concurrency / 2).max(1),
        });
        let plans = &plans;
        let grouped: Vec<Result<Vec<PlanOutcome>, StoreError>> =
            stream::iter((0..plans.len()).step_by(PLAN_GROUP))
                .map(|start| async move {
                    let end = (start + PLAN_GROUP).min(plans.len());
                    let claim = fresh.filter(|_| start == 0);
                    // The time of the transaction, not of the pass's start:
                    // a claim is judged against its window when it is taken
                    // (a window that expired or reopened since the pass
                    // began must be seen as it is now).
                    let now = self.clock.now();
                    self.store
                        .plan_and_claim(&plans[start..end], now, claim)
                        .await
                })
                .buffered(self.plan_concurrency())
                .collect()
                .await;
        let mut outcomes = Vec::with_capacity(plans.len());
        for group in grouped {
            outcomes.extend(group?);
        }
        let mut refusals = Vec::new();
        for (f, outcome) in folded.iter().zip(outcomes) {
            let refused = self.count_planned(&outcome, report, claimed);
            journal.planned(f.session_id, &outcome, refused.as_deref());
            if let Some(reason) = refused {
                refusals.push((f.session_id, reason, f.ids.clone()));
            }
        }
        Ok(refusals)
    }

    /// Counts one plan's outcome into `report` (a planned claim joins
    /// `claimed`); answers why the store refused it, if it did.
    fn count_planned(
        &self,
        outcome: &PlanOutcome,
        report: &mut PlanReport,
        claimed: &mut Vec<Delivery>,
    ) -> Option<String> {
        match outcome {
            PlanOutcome::Planned(d) => {
                report.planned += 1;
                if d.claim().is_some() {
                    claimed.push(d.clone());
                }
                None
            }
            PlanOutcome::AlreadyPlanned(_) => {
                report.planned += 1;
                None
            }
            PlanOutcome::SessionBusy { .. } => {
                report.busy += 1;
                None
            }
            PlanOutcome::LinkTaken { .. } => None,
            PlanOutcome::NoWindow | PlanOutcome::WindowClosed => {
                Some("assent window closed (checked by the host)".to_string())
            }
            PlanOutcome::CapReached { continuations } => Some(format!(
                "loop guard: {continuations} automatic continuations in this assent window reached the host's hard cap of {}",
                self.config.hard_cap
            )),
        }
    }

    /// Settles every session's dropped links, a few sessions at once;
    /// returns how many links were dropped, or the first error.
    pub(super) async fn drop_all(
        &self,
        sessions: BTreeMap<Uuid, SessionDecisions>,
        now: DateTime<Utc>,
    ) -> Result<usize, WorkerError> {
        let dropped: Vec<Result<usize, WorkerError>> = stream::iter(sessions)
            .filter(|(_, decided)| std::future::ready(!decided.drops.is_empty()))
            .map(|(session_id, decided)| async move {
                self.drop_session(session_id, decided, now).await
            })
            .buffer_unordered(self.plan_concurrency())
            .collect()
            .await;
        dropped.into_iter().sum()
    }

    /// Settles a session's dropped links, one notice per reason; returns how
    /// many links were dropped.
    async fn drop_session(
        &self,
        session_id: Uuid,
        decided: SessionDecisions,
        now: DateTime<Utc>,
    ) -> Result<usize, WorkerError> {
        let mut dropped = 0;
        for (reason, ids) in decided.drops {
            let key = idempotency_key("n", session_id, &ids, &reason);
            let message = crate::worker::notices::not_continued(&ids, &reason);
            let notice = Notice {
                idempotency_key: &key,
                message: &message,
                policy_revision: &decided.revision,
            };
            let outcome = self
                .store
                .drop_links_seen(
                    session_id,
                    &ids,
                    &reason,
                    Some(notice),
                    now,
                    Some(decided.window_seen),
                )
                .await?;
            dropped += outcome.dropped.len();
        }
        Ok(dropped)
    }
}

/// One session's continues folded into one continuation: its executions,
/// the note and the idempotency key.
struct Folded<'a> {
    revision: &'a str,
    session_id: Uuid,
    ids: Vec<Uuid>,
    note: String,
    key: String,
}

/// The sessions that continue anything, each folded into one continuation.
fn fold_sessions(sessions: &BTreeMap<Uuid, SessionDecisions>) -> Vec<Folded<'_>> {
    sessions
        .iter()
        .filter(|(_, decided)| !decided.continues.is_empty())
        .map(|(session_id, decided)| {
            let ids: Vec<Uuid> = decided.continues.iter().map(|f| f.id).collect();
            let note = fold_notes(&decided.continues);
            let key = idempotency_key("c", *session_id, &ids, "");
            Folded {
                revision: &decided.revision,
                session_id: *session_id,
                ids,
                note,
                key,
            }
        })
        .collect()
}
