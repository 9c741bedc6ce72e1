//! The plan step's decision log: for every decision the policy took, the
//! input it saw, its answer and what the host then did, written in one
//! statement at the end of the pass (see
//! [`Store::record_decisions`](crate::store::Store::record_decisions)).
//!
//! Why the host writes it, not the policy: the log is what `policy replay`
//! and `policy capture` work from, so it must give back exactly the input
//! the sandbox was given (results already cut: kept compactly, see
//! `worker::recorded`) and what followed from the answer, including the
//! host's own guards, which the policy never sees.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use uuid::Uuid;

use chrono::{DateTime, Utc};

use super::context::Context;
use super::recorded::{input_parts, log_hash};
use super::Verdict;
use crate::policy::codec;
use crate::policy::types as t;
use crate::policy::Evaluated;
use crate::store::{Delivery, InputParts, NewDecision, PlanOutcome, Recorded, Store};

/// A plan step's decision log, not yet written. The worker writes it while
/// the step's calls go out: nothing in the pass reads it, so its commit
/// need not stand between a status and its call. A crash before it is
/// written loses those entries, as a failed write does (counted by
/// `nomos_continue_decision_log_failures_total`); the decisions themselves
/// are in the ledger.
pub(crate) struct Unlogged {
    journal: Journal,
    now: DateTime<Utc>,
}

impl Unlogged {
    pub(super) fn new(journal: Journal, now: DateTime<Utc>) -> Self {
        Self { journal, now }
    }

    /// Writes it, if there is one; a failure is counted and logged as one
    /// episode, never failing the pass.
    pub(crate) async fn write(unlogged: Option<Self>, cx: &Context) {
        let Some(Self { journal, now }) = unlogged else {
            return;
        };
        let written = journal.write(&cx.store, now).await;
        if cx.decision_log.observe(written).is_err() {
            cx.metrics.decision_log_failed();
        }
    }
}

/// Executions remembered with their last logged decision, at most.
const MAX_REMEMBERED: usize = 100_000;

/// The last decision logged for each execution, shared by a worker's
/// passes. An execution the policy keeps answering `wait` for (its session
/// has work still running), or whose `continue` waits behind a session's
/// continuation in flight, is decided again on every pass; logging each
/// would write the same input every poll interval. A decision is logged
/// when it differs from the last one logged for the execution (revision,
/// answer, action or detail; the input's `now` aside).
#[derive(Clone, Default)]
pub(super) struct LoggedRepeats(Arc<Mutex<HashMap<Uuid, u64>>>);

impl LoggedRepeats {
    /// Whether `d` differs from the last decision logged for its execution
    /// (and remembers it).
    fn is_new(&self, d: &NewDecision) -> bool {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        let answer = match &d.recorded {
            Recorded::Compact { answer_hash, .. } => answer_hash.as_slice(),
            Recorded::Whole { output, .. } => output.as_bytes(),
        };
        (&d.revision, answer, &d.action, &d.detail).hash(&mut hasher);
        let fingerprint = hasher.finish();
        let mut last = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if last.get(&d.execution_id) == Some(&fingerprint) {
            return false;
        }
        if last.len() >= MAX_REMEMBERED {
            // Forgetting only logs a repeat once more.
            last.clear();
        }
        last.insert(d.execution_id, fingerprint);
        true
    }
}

/// One pass's decisions, as they are taken and acted on.
pub(super) struct Journal {
    /// What the log keeps of each input, by position; empty when the log
    /// is off.
    inputs: Vec<Option<InputParts>>,
    entries: Vec<NewDecision>,
    /// Entries of `continue`s, by session, until the plan answers.
    continues: HashMap<Uuid, Vec<usize>>,
    repeats: LoggedRepeats,
}

/// The action of a `continue` not yet planned.
const PENDING: &str = "";

impl Journal {
    /// A journal for these inputs, whose results were cut to
    /// `result_limit` bytes, or one that records nothing when `enabled` is
    /// false.
    pub(super) fn start(
        enabled: bool,
        inputs: &[t::DecisionInput],
        result_limit: usize,
        repeats: LoggedRepeats,
    ) -> Self {
        let inputs = match enabled {
            true => (inputs.iter())
                .map(|i| input_parts(i, result_limit))
                .collect(),
            false => Vec::new(),
        };
        Self {
            inputs,
            entries: Vec::new(),
            continues: HashMap::new(),
            repeats,
        }
    }

    /// The verdict on input `index`, of `execution` in `session`.
    pub(super) fn decided(
        &mut self,
        index: usize,
        session_id: Uuid,
        execution_id: Uuid,
        verdict: &Verdict,
    ) {
        let Some(input) = self.inputs.get_mut(index).and_then(Option::take) else {
            return;
        };
        let (revision, output, action, detail) = match verdict {
            Verdict::Deferred => return,
            Verdict::Decided(decision, revision) => {
                let output = logged_answer(decision);
                match decision {
                    t::Decision::Wait => (revision, output, "waited", None),
                    t::Decision::Continue { .. } => (revision, output, PENDING, None),
                    t::Decision::Drop { reason } => {
                        (revision, output, "dropped", Some(reason.clone()))
                    }
                }
            }
            Verdict::Failed(reason, revision) => {
                let output = codec::failure_line(reason);
                (revision, output, "failed", Some(reason.clone()))
            }
        };
        if action == PENDING {
            (self.continues.entry(session_id).or_default()).push(self.entries.len());
        }
        self.entries.push(NewDecision {
            session_id,
            execution_id,
            revision: revision.clone(),
            recorded: compact(input, &output),
            action: action.to_string(),
            idempotency_key: None,
            detail,
        });
    }

    /// What the plan did with a session's `continue`s; `refusal` is the
    /// notice's reason when a host guard refused them.
    pub(super) fn planned(
        &mut self,
        session_id: Uuid,
        outcome: &PlanOutcome,
        refusal: Option<&str>,
    ) {
        let (action, key, detail) = match outcome {
            PlanOutcome::Planned(d) | PlanOutcome::AlreadyPlanned(d) => {
                ("continued", Some(d.idempotency_key.clone()), None)
            }
            PlanOutcome::SessionBusy { .. } => (
                "deferred",
                None,
                Some("a continuation of this session is in flight"),
            ),
            PlanOutcome::LinkTaken { .. } => {
                ("deferred", None, Some("linked to another continuation"))
            }
            _ => ("refused", None, refusal),
        };
        for &i in self.continues.remove(&session_id).iter().flatten() {
            let entry = &mut self.entries[i];
            entry.action = action.to_string();
            entry.idempotency_key = key.clone();
            entry.detail = detail.map(str::to_string);
        }
    }

    /// Writes the pass's entries. The caller logs a failure rather than
    /// failing the pass: the log is an audit of decisions already acted on,
    /// and failing the pass would not bring it back.
    pub(super) async fn write(
        mut self,
        store: &Store,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<u64, crate::store::StoreError> {
        // A continue whose plan never answered (its plan group failed) was
        // not acted on: the next pass decides it again.
        let unanswered: Vec<usize> = self.continues.drain().flat_map(|(_, v)| v).collect();
        for i in unanswered {
            self.entries[i].action = "deferred".into();
        }
        let repeats = self.repeats;
        self.entries.retain(|d| repeats.is_new(d));
        store.record_decisions(&self.entries, now).await
    }
}

/// The log entries of a retry's re-decision (see `Deliverer::redecide`): when
/// the policy drops any execution the delivery ends, so every entry is
/// `dropped` with that reason; otherwise the retry goes on under the
/// delivery's key (a policy failure does not stop it either).
pub(super) fn redecided(
    delivery: &Delivery,
    inputs: Vec<(Uuid, InputParts)>,
    evaluated: &Evaluated<Vec<t::Decision>>,
) -> Vec<NewDecision> {
    let dropped = evaluated.value.as_ref().ok().and_then(|decisions| {
        decisions.iter().find_map(|d| match d {
            t::Decision::Drop { reason } => Some(reason.clone()),
            _ => None,
        })
    });
    let outputs: Vec<String> = match &evaluated.value {
        Ok(decisions) => (decisions.iter()).map(logged_answer).collect(),
        Err(f) => {
            let failed = codec::failure_line(&f.to_string());
            vec![failed; inputs.len()]
        }
    };
    let (action, key, detail) = match dropped {
        Some(reason) => ("dropped", None, Some(reason)),
        None => (
            "continued",
            Some(delivery.idempotency_key.clone()),
            Some(format!("retry after {} failed calls", delivery.attempts)),
        ),
    };
    (inputs.into_iter().zip(outputs))
        .map(|((execution_id, input), output)| NewDecision {
            session_id: delivery.session_id,
            execution_id,
            revision: evaluated.revision.0.clone(),
            recorded: compact(input, &output),
            action: action.to_string(),
            idempotency_key: key.clone(),
            detail: detail.clone(),
        })
        .collect()
}

/// What the log keeps of an input and the answer `output` (an answer line
/// or a failure's): the input's parts, the answer's kind and its hash.
fn compact(input: InputParts, output: &str) -> Recorded {
    Recorded::Compact {
        input,
        answer: answer_kind(output).to_string(),
        answer_hash: log_hash(output),
    }
}

/// An answer line's kind: its `decision`, or `error` for a failure's.
pub(crate) fn answer_kind(output: &str) -> &'static str {
    let v: serde_json::Value = serde_json::from_str(output).unwrap_or_default();
    match v.get("decision").and_then(serde_json::Value::as_str) {
        Some("wait") => "wait",
        Some("continue") => "continue",
        Some("drop") => "drop",
        _ => "error",
    }
}

/// A decision as the log writes it: its answer line, without the newline.
pub(crate) fn logged_answer(decision: &t::Decision) -> String {
    codec::answer_line(decision)
        .map(|line| line.trim_end().to_string())
        .unwrap_or_default()
}

/// A verdict as the log writes it: the revision that answered and the
/// output; `None` for a deferred one, which nobody decided.
pub(crate) fn logged_verdict(verdict: &Verdict) -> Option<(&str, String)> {
    match verdict {
        Verdict::Decided(decision, revision) => Some((revision, logged_answer(decision))),
        Verdict::Failed(reason, revision) => Some((revision, codec::failure_line(reason))),
        Verdict::Deferred => None,
    }
}
