//! The plan step: decisions for finished executions, folded per session
//! into one pending continuation, or settled as dropped with one notice.

mod decide;
mod fold;
mod gather;
mod ready;
mod shadow;
mod write;

use std::collections::BTreeMap;
use std::ops::Deref;
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::policy::types as t;
use crate::store::Poll;
use crate::telemetry::DecideSpan;
use crate::worker::context::Context;
use crate::worker::handover::Claimed;
use crate::worker::journal::{Journal, LoggedRepeats, Unlogged};
use crate::worker::WorkerError;
use fold::Finished;
use gather::Gathered;

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

/// What one plan step hands on.
pub(crate) struct Planned {
    pub(crate) report: PlanReport,
    /// What it claimed for the deliver step of its pass.
    pub(crate) claimed: Claimed,
    /// Its decision log, unwritten (see [`Unlogged`]).
    pub(crate) unlogged: Option<Unlogged>,
}

impl Planner {
    #[cfg(feature = "test-support")]
    /// One plan step that sweeps (reads parked links too). Tests call this
    /// directly.
    pub async fn plan_once(&self) -> Result<PlanReport, WorkerError> {
        let planned = self.plan_pass(Poll::Sweep, false).await?;
        Unlogged::write(planned.unlogged, &self.cx).await;
        Ok(planned.report)
    }

    /// One plan step reading what `poll` names: read, decide, write. An
    /// [`Poll::Unparked`] pass under a policy revision no sweep has run
    /// under yet sweeps instead: what is parked was parked by another
    /// revision's classes. With `claim`, some of what it plans is claimed
    /// for the deliver step that follows in the same pass (see
    /// [`Claimed`]). The step's decision log is returned unwritten.
    pub(crate) async fn plan_pass(&self, poll: Poll, claim: bool) -> Result<Planned, WorkerError> {
        // The era the plan's claims are taken in, for the standby fence.
        let mut claimed = Claimed::new(self.store.primary_era());
        let revision = self.policy.runtime().active_revision().0;
        let poll = self.sweep_if_new(poll, &revision);
        let now = self.clock.now();
        let ready = self.read_ready(poll, &revision).await?;
        let mut report = PlanReport {
            examined: ready.len(),
            ..PlanReport::default()
        };
        self.metrics.set_pending_links(ready.len() as u64);
        if ready.is_empty() {
            return Ok(Planned {
                report,
                claimed,
                unlogged: None,
            });
        }
        let Gathered {
            inputs,
            owners,
            mut sessions,
            spans,
            executions,
            traces,
        } = self.gather(&ready, &mut report, now).await?;
        self.metrics.decision("wait", report.waiting as u64);

        let mut journal = Journal::start(
            self.config.log_decisions,
            &inputs,
            self.config.max_result_bytes,
            self.repeats.clone(),
        );
        let verdicts = self.decide_all(inputs).await?;
        let decided = owners.into_iter().zip(verdicts).zip(spans);
        self.tally(decided, &mut sessions, &mut journal, &mut report);

        // The continuations, set-based, a group of sessions per transaction;
        // then the drops, which are rarer, a few sessions at a time.
        let refusals = self
            .plan_all(
                &sessions,
                claim,
                &mut report,
                &mut claimed.deliveries,
                &mut journal,
            )
            .await?;
        for (session_id, reason, ids) in refusals {
            if let Some(decided) = sessions.get_mut(&session_id) {
                decided.drops.entry(reason).or_default().extend(ids);
            }
        }
        claimed.keep(executions, traces);
        let dropped = self.drop_all(sessions, now).await;
        let unlogged = Some(Unlogged::new(journal, now));
        match dropped {
            Ok(count) => report.dropped += count,
            Err(e) => {
                Unlogged::write(unlogged, &self.cx).await;
                return Err(e);
            }
        }
        Ok(Planned {
            report,
            claimed,
            unlogged,
        })
    }

    /// `poll`, or a sweep if no sweep has run under `revision` yet (and
    /// from now on one has).
    fn sweep_if_new(&self, poll: Poll, revision: &str) -> Poll {
        let mut swept = self.lock_swept();
        let poll = if swept.as_deref() == Some(revision) {
            poll
        } else {
            Poll::Sweep
        };
        if poll == Poll::Sweep {
            *swept = Some(revision.to_string());
        }
        poll
    }

    /// Takes each verdict into its session's decisions, the report, the
    /// metrics and the decision log, and ends its `decide` span.
    fn tally(
        &self,
        decided: impl Iterator<Item = (((Uuid, Uuid, t::Outcome), Verdict), DecideSpan)>,
        sessions: &mut BTreeMap<Uuid, SessionDecisions>,
        journal: &mut Journal,
        report: &mut PlanReport,
    ) {
        for (i, (((session_id, execution_id, outcome), verdict), span)) in decided.enumerate() {
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
