//! The shadow revision's side of a pass: the batch the active revision just
//! decided is decided again by the shadow, decision by decision, and every
//! difference is recorded. Only the active revision's verdicts act.
//!
//! Why it is off the pass: a shadow may be slow or broken, and the active
//! path must not wait for it or see its faults. So the pass hands the batch
//! over and goes on; the shadow decides on a blocking task the pass never
//! awaits, in its one slot. A batch that finds the slot busy (the previous
//! one still deciding or recording) is skipped and counted: under load the
//! shadow sees a sample of the traffic, never a queue of it. Recording is
//! bounded per batch ([`MAX_RECORDED_PER_BATCH`]); every difference is
//! counted whether recorded or not.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::decide::{chunks, Verdict, DECIDE_CHUNK};
use super::Planner;
use crate::policy::types as t;
use crate::policy::{PolicyRuntime, ShadowPermit};
use crate::store::Disagreement;

/// Disagreements of one batch written to the store at most; the rest are
/// only counted, so a shadow that disagrees with everything costs one small
/// transaction per batch.
pub const MAX_RECORDED_PER_BATCH: usize = 32;

impl Planner {
    /// Hands `inputs`, with the active revision's `verdicts` (same order),
    /// to the shadow revision if one is set and its slot is free. Returns at
    /// once.
    pub(super) fn shadow(&self, inputs: Vec<t::DecisionInput>, verdicts: &[Verdict]) {
        if inputs.is_empty() {
            return;
        }
        let Some(permit) = self.policy.runtime().shadow().try_begin() else {
            return;
        };
        // Only what the active revision decided is compared: an input it
        // failed on or deferred has nothing to compare with.
        let (inputs, active): (Vec<_>, Vec<_>) = inputs
            .into_iter()
            .zip(verdicts)
            .filter_map(|(input, verdict)| match verdict {
                Verdict::Decided(decision, revision) => {
                    Some((input, (decision.clone(), revision.clone())))
                }
                Verdict::Failed(..) | Verdict::Deferred => None,
            })
            .unzip();
        if inputs.is_empty() {
            return;
        }
        let policy = self.policy.clone();
        let store = self.store.clone();
        let at = self.clock.now();
        tokio::spawn(async move {
            let decided = policy
                .run(move |runtime| {
                    let rows = compare(runtime, &permit, &inputs, &active, at);
                    (rows, permit)
                })
                .await;
            let shadow = policy.runtime().shadow();
            // The permit is held until the record is written, so at most
            // one batch's rows are in flight.
            match decided {
                Ok((rows, _permit)) => {
                    if let Err(e) = store.record_disagreements(&rows).await {
                        tracing::warn!("record the policy shadow's disagreements: {e}");
                        shadow.count_failure();
                    }
                }
                Err(e) => {
                    tracing::warn!("policy shadow task failed: {e}");
                    shadow.count_failure();
                }
            }
        });
    }
}

/// Decides `inputs` with the shadow in the active path's chunks and
/// compares each decision with the active one (`active`, same order);
/// answers the disagreements to record.
fn compare(
    runtime: &PolicyRuntime,
    permit: &ShadowPermit,
    inputs: &[t::DecisionInput],
    active: &[(t::Decision, String)],
    at: DateTime<Utc>,
) -> Vec<Disagreement> {
    let shadow = runtime.shadow();
    let mut rows = Vec::new();
    let mut start = 0;
    for chunk in chunks(inputs, runtime.limits().max_text_bytes, DECIDE_CHUNK) {
        let actives = &active[start..start + chunk.len()];
        start += chunk.len();
        let Some((revision, value)) = runtime.shadow_decide_batch(permit, chunk) else {
            break; // dropped meanwhile
        };
        let decisions = match value {
            Ok(decisions) => decisions,
            Err(failure) if failure.is_shortage() => {
                shadow.count_skipped();
                continue;
            }
            Err(failure) => {
                tracing::debug!(revision = %revision.short(), "policy shadow failed: {failure}");
                shadow.count_failure();
                continue;
            }
        };
        let mut differ = 0;
        for ((input, (decision, active_revision)), theirs) in
            chunk.iter().zip(actives).zip(decisions)
        {
            if *decision == theirs {
                continue;
            }
            differ += 1;
            if rows.len() < MAX_RECORDED_PER_BATCH {
                match disagreement(input, decision, &theirs, active_revision, &revision.0, at) {
                    Some(row) => rows.push(row),
                    None => tracing::warn!(
                        execution = %input.execution.id,
                        "a policy shadow disagreement could not be written as JSON"
                    ),
                }
            }
        }
        shadow.count_compared(chunk.len() as u64, differ);
    }
    rows
}

/// The row for one difference, in the golden-file JSON; `None` for an
/// input whose ids are not UUIDs or that cannot be written as JSON, which
/// the host never builds (the caller logs it).
fn disagreement(
    input: &t::DecisionInput,
    active: &t::Decision,
    shadow: &t::Decision,
    active_revision: &str,
    shadow_revision: &str,
    at: DateTime<Utc>,
) -> Option<Disagreement> {
    Some(Disagreement {
        id: 0,
        at,
        session_id: Uuid::parse_str(&input.session.id).ok()?,
        execution_id: Uuid::parse_str(&input.execution.id).ok()?,
        active_revision: active_revision.to_owned(),
        shadow_revision: shadow_revision.to_owned(),
        input: serde_json::to_string(input).ok()?,
        active_output: serde_json::to_string(active).ok()?,
        shadow_output: serde_json::to_string(shadow).ok()?,
    })
}
