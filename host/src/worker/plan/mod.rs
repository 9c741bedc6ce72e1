//! The plan step: decisions for finished executions, folded per session
//! into one pending continuation, or settled as dropped with one notice.

mod decide;
mod fold;
mod ready;
mod shadow;

use std::collections::{BTreeMap, HashMap};
use std::ops::Deref;
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Utc};
use futures_util::stream::{self, StreamExt};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::classes::{still_running, Class};
use crate::policy::types as t;
use crate::store::{
    Backend, ContinuationPlan, Delivery, FreshClaim, Notice, PlanOutcome, Poll, SessionSnapshot,
    StoreError,
};
use crate::worker::context::Context;
use crate::worker::journal::{Journal, LoggedRepeats, Unlogged};
use crate::worker::WorkerError;
use fold::{fold_notes, Finished};

/// The most sessions the plan step reads or settles at once (the PostgreSQL
/// pool has 16 connections).
const MAX_PLAN_CONCURRENCY: usize = 8;

/// Sessions planned per store transaction: the transaction is a fixed
/// number of set-based statements, so larger groups mean fewer commits;
/// smaller ones keep each transaction's locks short.
const PLAN_GROUP: usize = 512;

pub(crate) use decide::{decide_chunked, Verdict};
#[cfg(feature = "test-support")]
pub use fold::{FOLD_SEPARATOR, MAX_FOLDED_NOTE_BYTES, MAX_REST_LINE_BYTES};
#[cfg(feature = "test-support")]
pub use shadow::MAX_RECORDED_PER_BATCH;

/// The plan step's side of the worker: reads what finished, asks the
/// policy, writes continuations (claiming them for the deliverer in the
/// same transaction) or drops with one notice. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Planner {
    cx: Context,
    /// The policy revision the last sweep ran under (see
    /// [`Planner::plan_pass`]).
    swept: Arc<Mutex<Option<String>>>,
    /// The last decision logged per execution (see [`LoggedRepeats`]).
    repeats: LoggedRepeats,
}

impl Deref for Planner {
    type Target = Context;

    fn deref(&self) -> &Context {
        &self.cx
    }
}

impl Planner {
    pub(crate) fn new(cx: Context) -> Self {
        Self {
            cx,
            swept: Arc::default(),
            repeats: LoggedRepeats::default(),
        }
    }

    fn lock_swept(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.swept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What one plan step did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PlanReport {
    /// Links read whose execution has reported.
    pub examined: usize,
    /// Links still waiting (not terminal, or the policy said wait).
    pub waiting: usize,
    /// Continuations written (one per session per pass at most).
    pub planned: usize,
    /// Links settled as dropped.
    pub dropped: usize,
    /// Sessions skipped because a continuation of theirs is in flight.
    pub busy: usize,
    /// Executions the policy failed on alone (dropped with a notice).
    pub policy_failures: usize,
    /// Executions left for a later pass because no policy sandbox was free.
    pub deferred: usize,
    /// Finished executions left for the next pass, which follows at once,
    /// because this pass's result texts reached the byte budget.
    pub over_budget: usize,
    /// Continuations planned and claimed in the same transaction, for this
    /// pass's deliver step to call first (see
    /// [`Store::plan_and_claim`](crate::store::Store::plan_and_claim)).
    pub claimed: Vec<Delivery>,
}

/// A session's finished links and what the policy said about each.
#[derive(Default)]
struct SessionDecisions {
    /// The policy revision that decided (recorded with the continuation).
    revision: String,
    continues: Vec<Finished>,
    drops: BTreeMap<String, Vec<Uuid>>,
    /// The window row's `updated_at` when the snapshot was read (`None`: no
    /// row): drops are written only while it is unchanged.
    window_seen: Option<DateTime<Utc>>,
}

impl Planner {
    #[cfg(feature = "test-support")]
    /// One plan step that sweeps (reads parked links too). Tests call this
    /// directly.
    pub async fn plan_once(&self) -> Result<PlanReport, WorkerError> {
        let (report, unlogged) = self.plan_pass(Poll::Sweep, false).await?;
        Unlogged::write(unlogged, &self.cx).await;
        Ok(report)
    }

    /// One plan step reading what `poll` names. An [`Poll::Unparked`] pass
    /// under a policy revision no sweep has run under yet sweeps instead:
    /// what is parked was parked by another revision's classes. With
    /// `claim`, some of what it plans is claimed for the deliver step that
    /// follows in the same pass (see [`PlanReport::claimed`]). The step's
    /// decision log is returned unwritten (see [`Unlogged`]).
    pub(crate) async fn plan_pass(
        &self,
        poll: Poll,
        claim: bool,
    ) -> Result<(PlanReport, Option<Unlogged>), WorkerError> {
        let revision = self.policy.runtime().active_revision().0;
        let poll = {
            let mut swept = self.lock_swept();
            let poll = if swept.as_deref() == Some(revision.as_str()) {
                poll
            } else {
                Poll::Sweep
            };
            if poll == Poll::Sweep {
                *swept = Some(revision.clone());
            }
            poll
        };
        let now = self.clock.now();
        let ready = self.read_ready(poll, &revision).await?;
        let mut report = PlanReport {
            examined: ready.len(),
            ..PlanReport::default()
        };
        self.metrics.set_pending_links(ready.len() as u64);
        if ready.is_empty() {
            return Ok((report, None));
        }
        let statuses: Vec<String> = ready.iter().map(|l| l.status.clone()).collect();
        let mut classes = self.classes.classes(statuses).await?;

        let by_session = self.sort_ready(&ready, &classes, &mut report, now).await?;
        // Every session's snapshot, the chosen results, their tasks and
        // their traces: independent reads, made at once (each is one or two
        // queries whatever the number of sessions), so the pass waits for
        // the slowest rather than for their sum.
        let session_ids: Vec<Uuid> = by_session.keys().copied().collect();
        let pairs: Vec<(Uuid, Uuid)> = (by_session.iter())
            .flat_map(|(s, links)| links.iter().map(|(l, _)| (*s, l.execution_id)))
            .collect();
        let chosen: Vec<Uuid> = pairs.iter().map(|(_, e)| *e).collect();
        let (snapshots, results, tasks, spans) = tokio::join!(
            self.store.session_snapshots(&session_ids, now),
            self.store.executions(&chosen),
            self.store.link_tasks(&chosen),
            self.decide_spans(pairs),
        );
        let mut snapshots: HashMap<Uuid, SessionSnapshot> = (snapshots?.into_iter())
            .map(|s| (s.session_id, s))
            .collect();
        let mut results: HashMap<Uuid, String> =
            results?.into_iter().map(|e| (e.id, e.result)).collect();
        let tasks = tasks?;
        // A session's other unsettled links (planned ones, or ones beyond
        // this pass's pages) may have statuses not seen above.
        let unseen: Vec<String> = snapshots
            .values()
            .flat_map(|s| s.unsettled.iter())
            .filter_map(|l| l.execution_status.clone())
            .filter(|status| !classes.contains_key(status))
            .collect();
        if !unseen.is_empty() {
            classes.extend(self.classes.classes(unseen).await?);
        }
        let is_terminal = |status: &str| classes.get(status).is_some_and(Class::is_terminal);
        let mut inputs = Vec::new();
        let mut owners = Vec::new();
        let mut sessions: BTreeMap<Uuid, SessionDecisions> = BTreeMap::new();
        for (session_id, links) in &by_session {
            let snapshot = snapshots
                .remove(session_id)
                .unwrap_or_else(|| SessionSnapshot::empty(*session_id));
            sessions.entry(*session_id).or_default().window_seen =
                snapshot.window.as_ref().map(|w| w.updated_at);
            let running = still_running(&snapshot, is_terminal);
            for (link, outcome) in links {
                // An execution whose row vanished since the poll (a
                // runtime's own relation) is decided on an empty result.
                let result = results.remove(&link.execution_id).unwrap_or_default();
                let task = tasks.get(&link.execution_id);
                inputs.push(self.decision_input(link, result, &snapshot, &running, task, now));
                owners.push((*session_id, link.execution_id, *outcome));
            }
        }
        self.metrics.decision("wait", report.waiting as u64);

        let mut journal = Journal::start(
            self.config.log_decisions,
            &inputs,
            self.config.max_result_bytes,
            self.repeats.clone(),
        );
        let verdicts = self.decide_all(inputs).await?;
        let decided = owners.into_iter().zip(verdicts).zip(spans).enumerate();
        for (i, (((session_id, execution_id, outcome), verdict), span)) in decided {
            span.end(verdict.label());
            journal.decided(i, session_id, execution_id, &verdict);
            let entry = sessions.entry(session_id).or_default();
            match verdict {
                Verdict::Decided(decision, revision) => {
                    entry.revision = revision;
                    match decision {
                        t::Decision::Wait => {
                            report.waiting += 1;
                            self.metrics.decision("wait", 1);
                        }
                        t::Decision::Continue { note } => {
                            self.metrics.decision("continue", 1);
                            entry.continues.push(Finished {
                                id: execution_id,
                                outcome,
                                note,
                            });
                        }
                        t::Decision::Drop { reason } => {
                            self.metrics.decision("drop", 1);
                            entry.drops.entry(reason).or_default().push(execution_id);
                        }
                    }
                }
                Verdict::Failed(reason, revision) => {
                    entry.revision = revision;
                    report.policy_failures += 1;
                    self.metrics.decision("policy_error", 1);
                    entry.drops.entry(reason).or_default().push(execution_id);
                }
                Verdict::Deferred => {
                    report.deferred += 1;
                    self.metrics.decision("deferred", 1);
                }
            }
        }
        // The continuations, set-based, a group of sessions per transaction;
        // then the drops, which are rarer, a few sessions at a time.
        let refusals = self
            .plan_all(&sessions, claim, &mut report, &mut journal)
            .await?;
        for (session_id, reason, ids) in refusals {
            if let Some(decided) = sessions.get_mut(&session_id) {
                decided.drops.entry(reason).or_default().extend(ids);
            }
        }
        let dropped: Vec<Result<usize, WorkerError>> = stream::iter(sessions)
            .filter(|(_, decided)| std::future::ready(!decided.drops.is_empty()))
            .map(|(session_id, decided)| async move {
                self.drop_session(session_id, decided, now).await
            })
            .buffer_unordered(self.plan_concurrency())
            .collect()
            .await;
        let unlogged = Some(Unlogged::new(journal, now));
        for count in dropped {
            match count {
                Ok(count) => report.dropped += count,
                Err(e) => {
                    Unlogged::write(unlogged, &self.cx).await;
                    return Err(e);
                }
            }
        }
        Ok((report, unlogged))
    }

    /// Plan transactions run at once: the delivery concurrency, but at most
    /// [`MAX_PLAN_CONCURRENCY`] so the pool keeps connections for the API
    /// and the deliveries; one on SQLite, whose writers take turns anyway
    /// and wait for the file lock in the busy handler's sleeps (5.5 s of a
    /// 6 s pass over 10,000 sessions, measured, when eight were started
    /// together).
    fn plan_concurrency(&self) -> usize {
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
    async fn plan_all(
        &self,
        sessions: &BTreeMap<Uuid, SessionDecisions>,
        claim: bool,
        report: &mut PlanReport,
        journal: &mut Journal,
    ) -> Result<Vec<(Uuid, String, Vec<Uuid>)>, WorkerError> {
        struct Folded<'a> {
            revision: &'a str,
            session_id: Uuid,
            ids: Vec<Uuid>,
            note: String,
            key: String,
        }
        let folded: Vec<Folded> = sessions
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
            .collect();
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
            let refused = match &outcome {
                PlanOutcome::Planned(d) => {
                    report.planned += 1;
                    if d.claim().is_some() {
                        report.claimed.push(d.clone());
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
            };
            journal.planned(f.session_id, &outcome, refused.as_deref());
            if let Some(reason) = refused {
                refusals.push((f.session_id, reason, f.ids.clone()));
            }
        }
        Ok(refusals)
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

/// A key that is the same for the same session, executions and reason, so
/// two replicas planning the same work write one row, not two.
pub(super) fn idempotency_key(
    prefix: &str,
    session_id: Uuid,
    ids: &[Uuid],
    reason: &str,
) -> String {
    let mut sorted = ids.to_vec();
    sorted.sort();
    let mut hash = Sha256::new();
    hash.update(session_id.as_bytes());
    for id in &sorted {
        hash.update(id.as_bytes());
    }
    hash.update(reason.as_bytes());
    format!("{prefix}-{}", &hex::encode(hash.finalize())[..32])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_ignore_order_and_separate_reasons() {
        let s = Uuid::from_u128(1);
        let (a, b) = (Uuid::from_u128(2), Uuid::from_u128(3));
        assert_eq!(
            idempotency_key("c", s, &[a, b], ""),
            idempotency_key("c", s, &[b, a], "")
        );
        assert_ne!(
            idempotency_key("n", s, &[a], "x"),
            idempotency_key("n", s, &[a], "y")
        );
    }
}
