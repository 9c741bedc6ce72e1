//! Asking the policy about a pass's executions, so that a fault stays with
//! its own execution (P5): decisions go in chunks sized by bytes under the
//! policy's input cap, a chunk the policy fails on is split until the input
//! that fails is isolated, and a shortage (every sandbox slot busy) defers
//! the chunk to the next pass instead of dropping it. A revision in shadow
//! then decides the same batch off the pass (see `shadow`).

use std::collections::HashMap;

use uuid::Uuid;

use super::Planner;
use crate::policy::types as t;
use crate::policy::PolicyRuntime;
use crate::store::LinkTrace;
use crate::telemetry::DecideSpan;
use crate::worker::WorkerError;

/// Decisions per sandbox call at most, whatever their size.
pub(super) const DECIDE_CHUNK: usize = 256;

/// What became of one decision input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The policy decided, under this revision.
    Decided(t::Decision, String),
    /// The policy failed on this input alone (isolated), under this revision.
    Failed(String, String),
    /// A shortage: decided on a later pass.
    Deferred,
}

impl Verdict {
    /// What the `decide` span records as its outcome.
    pub(super) fn label(&self) -> &'static str {
        match self {
            Self::Decided(t::Decision::Wait, _) => "wait",
            Self::Decided(t::Decision::Continue { .. }, _) => "continue",
            Self::Decided(t::Decision::Drop { .. }, _) => "drop",
            Self::Failed(..) => "policy_error",
            Self::Deferred => "deferred",
        }
    }
}

impl Planner {
    /// The `decide` span of each `(session, execution)` about to be
    /// decided, under the trace context kept with its link in `traces`.
    pub(super) fn decide_spans(
        &self,
        owners: Vec<(Uuid, Uuid)>,
        traces: &HashMap<Uuid, LinkTrace>,
    ) -> Vec<DecideSpan> {
        (owners.into_iter())
            .map(|(session, execution)| {
                DecideSpan::start(traces.get(&execution), session, execution)
            })
            .collect()
    }

    /// One verdict per input, in order.
    pub(super) async fn decide_all(
        &self,
        inputs: Vec<t::DecisionInput>,
    ) -> Result<Vec<Verdict>, WorkerError> {
        let (verdicts, inputs) = self
            .policy
            .run(move |policy| (decide_chunked(policy, &inputs), inputs))
            .await?;
        self.shadow(inputs, &verdicts);
        Ok(verdicts)
    }
}

/// One verdict per input, in order, decided in chunks within the policy's
/// input cap, each fault isolated to the input it comes from. `policy
/// replay` decides recorded inputs with this too, so a candidate is judged
/// exactly as the worker would run it.
pub(crate) fn decide_chunked(policy: &PolicyRuntime, inputs: &[t::DecisionInput]) -> Vec<Verdict> {
    let cap = policy.limits().max_text_bytes;
    let mut out = Vec::with_capacity(inputs.len());
    for chunk in chunks(inputs, cap, DECIDE_CHUNK) {
        decide_isolating(policy, chunk, &mut out);
    }
    out
}

/// The bytes of an input the policy's input cap counts.
fn input_bytes(input: &t::DecisionInput) -> usize {
    input.execution.result.len() + input.execution.status.len()
}

/// Consecutive slices of `inputs`, each within `max_bytes` (an input larger
/// than that alone gets a slice of its own, and fails alone) and at most
/// `max_count` long.
pub(super) fn chunks(
    inputs: &[t::DecisionInput],
    max_bytes: usize,
    max_count: usize,
) -> Vec<&[t::DecisionInput]> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0usize);
    for (i, input) in inputs.iter().enumerate() {
        let size = input_bytes(input);
        let full = i > start && (bytes + size > max_bytes || i - start >= max_count);
        if full {
            out.push(&inputs[start..i]);
            start = i;
            bytes = 0;
        }
        bytes += size;
    }
    if start < inputs.len() {
        out.push(&inputs[start..]);
    }
    out
}

/// Decides `inputs` in one call; on a fault, halves and tries each half, so
/// only the inputs the policy fails on alone are failed.
fn decide_isolating(policy: &PolicyRuntime, inputs: &[t::DecisionInput], out: &mut Vec<Verdict>) {
    let evaluated = policy.decide_batch(inputs);
    let revision = evaluated.revision.0;
    match evaluated.value {
        Ok(decisions) => out.extend(
            decisions
                .into_iter()
                .map(|d| Verdict::Decided(d, revision.clone())),
        ),
        Err(f) if f.is_shortage() => out.extend(inputs.iter().map(|_| Verdict::Deferred)),
        Err(f) if inputs.len() == 1 => out.push(Verdict::Failed(
            format!("policy failed, so no automatic continuation: {f}"),
            revision,
        )),
        Err(_) => {
            let (left, right) = inputs.split_at(inputs.len() / 2);
            decide_isolating(policy, left, out);
            decide_isolating(policy, right, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(bytes: usize) -> t::DecisionInput {
        t::DecisionInput {
            now: t::Timestamp {
                seconds: 0,
                nanoseconds: 0,
            },
            execution: t::Execution {
                id: "3f2504e0-4f89-11d3-9a0c-0305e82c3301".into(),
                status: String::new(),
                result: "x".repeat(bytes),
                finished_at: None,
                task: None,
            },
            session: t::Session {
                id: "3f2504e0-4f89-11d3-9a0c-0305e82c3302".into(),
                window: None,
                continuations_in_window: 0,
                still_running: Vec::new(),
            },
            attempts: 0,
        }
    }

    #[test]
    fn chunks_stay_under_the_byte_cap_and_the_count() {
        let inputs: Vec<_> = (0..17).map(|_| input(300)).collect();
        let got = chunks(&inputs, 1000, 256);
        assert_eq!(
            got.iter().map(|c| c.len()).collect::<Vec<_>>(),
            [3, 3, 3, 3, 3, 2]
        );
        assert!(got
            .iter()
            .all(|c| c.iter().map(input_bytes).sum::<usize>() <= 1000));
        let got = chunks(&inputs, usize::MAX, 5);
        assert_eq!(
            got.iter().map(|c| c.len()).collect::<Vec<_>>(),
            [5, 5, 5, 2]
        );
    }

    #[test]
    fn an_input_over_the_cap_gets_a_chunk_of_its_own() {
        let inputs = vec![input(10), input(5000), input(10)];
        let got = chunks(&inputs, 1000, 256);
        assert_eq!(got.iter().map(|c| c.len()).collect::<Vec<_>>(), [1, 1, 1]);
        assert!(chunks(&[], 1000, 256).is_empty());
    }
}
