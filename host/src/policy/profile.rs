//! What a policy costs to run, measured the way production runs it: a
//! fresh sandbox per batch. `policy check` prints it, so an author of an
//! interpreted policy (tens of MB, a runtime to set up per sandbox) sees
//! whether it fits the deadline before an upload does.

use std::time::{Duration, Instant};

use super::eval::{self, PolicyFailure};
use super::runtime::PolicyRuntime;
use super::types as t;
use super::vet;

/// Repetitions each timing is the median of.
const RUNS: usize = 11;

/// Decisions in the batch that is timed: the worker decides in batches.
pub const BATCH: usize = 100;

/// Calls on one instance that the amortised figure divides.
const LIVE_CALLS: u64 = 20;

/// The cost of the active revision of a runtime.
#[derive(Debug, Clone)]
pub struct Profile {
    /// A fresh sandbox: store, WASI context and instance, then dropped.
    pub instantiate: Duration,
    /// One decision on an instance already set up (the median over
    /// [`LIVE_CALLS`] calls on one instance): the call itself.
    pub amortised: Duration,
    /// One decision in a fresh sandbox: what a batch of one costs.
    pub decide_one: Duration,
    /// [`BATCH`] decisions in one fresh sandbox.
    pub decide_batch: Duration,
    /// The slowest single call on the vetting probes (one of them carries a
    /// 200 KB result): how close the largest ordinary input comes to the
    /// deadline.
    pub slowest_probe: Duration,
}

impl Profile {
    /// Measures the active revision of `runtime` (medians of [`RUNS`]).
    pub fn measure(runtime: &PolicyRuntime) -> Result<Self, PolicyFailure> {
        let sandbox = runtime.sandbox();
        let policy = runtime.active();
        let inputs = vet::probe_inputs();
        let one = &inputs[1..2];
        let batch: Vec<t::DecisionInput> = inputs
            .iter()
            .filter(|i| i.execution.result.len() < 1024)
            .cycle()
            .take(BATCH)
            .cloned()
            .collect();
        let instantiate = median(|| eval::instantiate_only(sandbox, &policy))?;
        let live = median(|| eval::live_decisions(sandbox, &policy, LIVE_CALLS, &one[0]))?;
        let amortised = live / LIVE_CALLS as u32;
        let decide_one = median(|| eval::decide_batch(sandbox, &policy, one).map(drop))?;
        let decide_batch = median(|| eval::decide_batch(sandbox, &policy, &batch).map(drop))?;
        let mut slowest_probe = Duration::ZERO;
        for input in &inputs {
            let single = std::slice::from_ref(input);
            let took = median(|| eval::decide_batch(sandbox, &policy, single).map(drop))?;
            slowest_probe = slowest_probe.max(took);
        }
        Ok(Self {
            instantiate,
            amortised,
            decide_one,
            decide_batch,
            slowest_probe,
        })
    }
}

/// The median wall time of [`RUNS`] calls of `call`; the first error ends it.
fn median(mut call: impl FnMut() -> Result<(), PolicyFailure>) -> Result<Duration, PolicyFailure> {
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let started = Instant::now();
        call()?;
        times.push(started.elapsed());
    }
    times.sort();
    Ok(times[RUNS / 2])
}
