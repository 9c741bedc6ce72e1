//! The continuation worker: the system's event loop for asynchronous tools.
//!
//! One pass (of [`Worker::run`]'s loop; tests call `run_once`) has two
//! steps:
//!
//! 1. **Plan** (`plan`): read the links whose execution has reported, ask
//!    the policy for decisions in one batch, and for each session either
//!    write one pending continuation folding all its finished executions
//!    (the store re-checks the window, the hard cap and that no other
//!    continuation of the session is in flight, in one transaction), or
//!    settle the links as dropped with one notice.
//! 2. **Deliver** (`deliver`): claim pending deliveries with a lease, call
//!    the agent with the delivery's idempotency key, and on success mark the
//!    delivery delivered and its links continued in one transaction
//!    (compare-and-set on the lease). Failures back off and end in a visible
//!    `failed` state.
//!
//! The continuation row is written *before* the agent call and marked
//! delivered *after* it, so a crash at any point leaves a pending row whose
//! lease expires and which is redelivered with the same key: nothing is
//! lost, and the runtime can drop the duplicate.
//!
//! Waking: PostgreSQL `LISTEN`/`NOTIFY`, or an in-process signal, plus a
//! jittered poll; correctness never depends on a wake-up arriving.

mod builder;
mod context;
mod deliver;
mod handover;
mod input;
mod journal;
mod notices;
mod operator;
mod plan;
mod recorded;
mod wake;

use derive_setters::Setters;
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::agent::Agent;
use crate::classes::ClassError;
use crate::policy::{PolicyRuntime, PolicyTaskFailed};
#[cfg(feature = "test-support")]
use crate::store::Claim;
use crate::store::{Episode, Poll, Store, StoreError};

pub use builder::WorkerBuilder;
pub use deliver::DeliverReport;
pub(crate) use journal::{answer_kind, logged_verdict};
#[cfg(feature = "test-support")]
pub use operator::NotifyReport;
pub use operator::{Notifier, NotifyConfig};
pub use plan::PlanReport;
#[cfg(feature = "test-support")]
pub use plan::MAX_RECORDED_PER_BATCH;
pub(crate) use plan::{decide_chunked, Verdict};
#[cfg(feature = "test-support")]
pub use plan::{FOLD_SEPARATOR, MAX_FOLDED_NOTE_BYTES, MAX_REST_LINE_BYTES};
#[cfg(feature = "test-support")]
pub use recorded::input_parts;
pub use recorded::{log_hash, recorded_inputs, Unreadable};
pub use wake::spawn_pg_listener;

/// Why a worker pass failed. The pass is retried on the next wake-up or
/// poll; nothing is lost, because every state change is in the store.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error(transparent)]
    /// The database failed or refused the pass; retried on the next pass.
    Store(#[from] StoreError),
    #[error("policy task failed: {0}")]
    /// The blocking task that ran the policy panicked or was cancelled.
    PolicyTask(#[from] PolicyTaskFailed),
}

impl From<ClassError> for WorkerError {
    fn from(error: ClassError) -> Self {
        match error {
            ClassError::Store(e) => Self::Store(e),
            ClassError::PolicyTask(e) => Self::PolicyTask(e),
        }
    }
}

/// The worker's settings.
#[derive(Debug, Clone, Setters)]
#[setters(prefix = "with_")]
#[non_exhaustive]
pub struct WorkerConfig {
    /// Unique per process, so a lease names its holder.
    pub worker_id: String,
    /// How long a claimed delivery stays ours without a renewal before
    /// another worker may take it over. Renewed every [`Self::renew_every`]
    /// while its call runs, so it bounds how long a dead worker's claims
    /// wait, not how long a call may take.
    pub lease: Duration,
    /// How often the leases of calls in flight are renewed; `None` is a
    /// third of the lease, so two renewals may fail before one lapses.
    pub renew_every: Option<Duration>,
    /// The fallback poll when no wake-up arrives; jittered by ±20 %.
    pub poll_interval: Duration,
    /// Links read per plan page, and deliveries claimed per pass.
    pub batch: i64,
    /// How long a delivery keeps being retried after its first failed call
    /// before it ends as `failed` (wall time, so an agent runtime that is
    /// down for minutes only delays delivery).
    pub retry_budget: Duration,
    /// Earlier claims that recorded no result (their worker died mid-call)
    /// after which a delivery ends as `failed` instead of being tried again:
    /// a delivery that crashes every worker must not loop forever.
    pub max_lost_claims: i32,
    /// The first retry's delay; doubled per attempt up to `backoff_max`.
    pub backoff_base: Duration,
    /// The longest delay between two retries.
    pub backoff_max: Duration,
    /// The host's cap on continuations per window, enforced whatever the
    /// policy answers (the default policy's own cap is lower).
    pub hard_cap: i32,
    /// Bytes of an execution's result passed to the policy; the rest is cut
    /// from the middle before the policy sees it.
    pub max_result_bytes: usize,
    /// Agent calls in flight at once.
    pub delivery_concurrency: usize,
    /// Bytes of result text one plan pass reads (at least one execution's,
    /// whatever its size): what is over it waits for the next pass, which
    /// follows at once. Bounds a pass's memory when many large results
    /// finish together.
    pub pass_result_bytes: usize,
    /// How long a deliver step waits, before its agent calls, for every
    /// standby streaming from the PostgreSQL primary to flush the rows it
    /// planned and claimed (see `deliver::fence`); `None` calls at once.
    pub standby_fence: Option<Duration>,
    /// Record every decision in the store's decision log (see
    /// `Store::record_decisions`), for `policy replay` and `policy
    /// capture`.
    pub log_decisions: bool,
}

/// `--standby-fence-timeout`'s default: long enough for an asynchronous
/// standby under load, short enough that a lost one delays calls by seconds.
pub const DEFAULT_STANDBY_FENCE: Duration = Duration::from_secs(5);

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            worker_id: default_worker_id(),
            lease: Duration::from_secs(6),
            renew_every: None,
            poll_interval: Duration::from_secs(2),
            batch: 500,
            retry_budget: Duration::from_secs(15 * 60),
            max_lost_claims: 5,
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(60),
            hard_cap: 50,
            max_result_bytes: 256 << 10,
            delivery_concurrency: 32,
            pass_result_bytes: 64 << 20,
            standby_fence: Some(DEFAULT_STANDBY_FENCE),
            log_decisions: true,
        }
    }
}

impl WorkerConfig {
    /// The lease as the store takes it (a lease too long for `time` is a
    /// minute: a misconfiguration must not make claims permanent).
    pub fn lease_duration(&self) -> chrono::Duration {
        chrono::Duration::from_std(self.lease).unwrap_or(chrono::Duration::minutes(1))
    }

    /// The lease renewal period in effect.
    pub fn renew_interval(&self) -> Duration {
        self.renew_every
            .unwrap_or(self.lease / 3)
            .max(Duration::from_millis(1))
    }

    /// A deliver pass's call slots (calls at once) and its budget (calls
    /// in all), each at least one.
    pub(crate) fn call_slots(&self) -> (usize, usize) {
        let slots = self.delivery_concurrency.max(1);
        let budget = usize::try_from(self.batch).unwrap_or(usize::MAX).max(1);
        (slots, budget)
    }
}

/// `<host>-<pid>-<random>`: unique across replicas and restarts.
pub fn default_worker_id() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "nomos".into());
    let suffix: u32 = rand::thread_rng().gen();
    format!("{host}-{}-{suffix:08x}", std::process::id())
}

/// What one pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TickReport {
    /// What the plan step did.
    pub plan: PlanReport,
    /// What the deliver step did.
    pub deliver: DeliverReport,
}

/// The continuation worker: a planner (`plan::Planner`) that writes
/// continuations and claims them, and a deliverer (`deliver::Deliverer`)
/// that calls the agent with what was claimed. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Worker {
    planner: plan::Planner,
    deliverer: deliver::Deliverer,
    wake: Arc<Notify>,
}

impl Worker {
    /// A worker over the three parts it cannot run without; the builder
    /// sets the rest.
    pub fn builder(
        store: Store,
        policy: Arc<PolicyRuntime>,
        agent: Arc<dyn Agent>,
    ) -> WorkerBuilder {
        WorkerBuilder::new(store, policy, agent)
    }

    /// The in-process wake-up: notify it after recording a status (the API
    /// does) to skip the wait for the next poll.
    pub fn waker(&self) -> Arc<Notify> {
        self.wake.clone()
    }

    #[cfg(feature = "test-support")]
    /// One plan step that sweeps (reads parked links too). Tests call this
    /// to look at the plan step alone.
    pub async fn plan_once(&self) -> Result<PlanReport, WorkerError> {
        self.planner.plan_once().await
    }

    #[cfg(feature = "test-support")]
    /// One deliver step alone (claiming what is due). Tests call this.
    pub async fn deliver_once(&self) -> Result<DeliverReport, WorkerError> {
        self.deliverer.deliver_once().await
    }

    #[cfg(feature = "test-support")]
    /// Extends the leases of the calls in flight (the deliver step does
    /// this on its own while calls run).
    pub async fn renew_leases(&self) {
        self.deliverer.renew_leases().await;
    }

    #[cfg(feature = "test-support")]
    /// What the standby fence would let through now (see
    /// `deliver::fence`): `open`, `open after waiting` (each continuation's
    /// window is read again before its call) or `held`.
    pub async fn standby_gate(&self) -> &'static str {
        self.deliverer.standby_gate().await
    }

    #[cfg(feature = "test-support")]
    /// The claims whose calls are running now.
    pub fn claims_in_flight(&self) -> Vec<Claim> {
        self.deliverer.claims_in_flight()
    }

    /// The settings it runs with.
    pub fn config(&self) -> &WorkerConfig {
        &self.planner.config
    }

    #[cfg(feature = "test-support")]
    /// One pass: plan (sweeping), then deliver. Tests call this directly.
    pub async fn run_once(&self) -> Result<TickReport, WorkerError> {
        self.pass(&CancellationToken::new(), Poll::Sweep).await
    }

    #[cfg(feature = "test-support")]
    /// One pass whose plan step reads the links `poll` names.
    pub async fn run_pass(&self, poll: Poll) -> Result<TickReport, WorkerError> {
        self.pass(&CancellationToken::new(), poll).await
    }

    async fn pass(&self, stop: &CancellationToken, poll: Poll) -> Result<TickReport, WorkerError> {
        let planned = self.planner.plan_pass(poll, true).await?;
        // The decision log is written while the calls go out.
        let (deliver, ()) = tokio::join!(
            self.deliverer.deliver_pass(stop, planned.claimed, poll),
            journal::Unlogged::write(planned.unlogged, &self.planner)
        );
        Ok(TickReport {
            plan: planned.report,
            deliver: deliver?,
        })
    }

    /// Runs passes until `shutdown` is cancelled. A pass that planned or
    /// delivered something is followed at once by another; otherwise the
    /// worker waits for a wake-up or the jittered poll. A pass after a
    /// wake-up or a busy pass reads only unparked links; a pass after the
    /// poll's timer, or once a poll interval has passed since the last
    /// sweep, sweeps. On shutdown it stops claiming; deliveries already in
    /// flight finish within the pass.
    pub async fn run(self, shutdown: CancellationToken) {
        // While the database is down every pass fails: one episode, logged
        // when it starts and when it ends, not a line per pass.
        let episode = Episode::new("worker pass");
        let mut sweep = true;
        let mut last_sweep = tokio::time::Instant::now();
        loop {
            if shutdown.is_cancelled() {
                return;
            }
            if last_sweep.elapsed() >= self.config().poll_interval {
                sweep = true;
            }
            let poll = if sweep { Poll::Sweep } else { Poll::Unparked };
            if sweep {
                last_sweep = tokio::time::Instant::now();
            }
            let busy = match episode.observe(self.pass(&shutdown, poll).await) {
                Ok(report) => {
                    report.plan.planned
                        + report.plan.dropped
                        + report.plan.over_budget
                        + report.deliver.attempted
                        + report.deliver.dropped_unsent
                        > 0
                }
                Err(_) => false,
            };
            if busy {
                sweep = false;
                continue;
            }
            let pause = jittered(self.config().poll_interval);
            sweep = tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = self.wake.notified() => false,
                _ = tokio::time::sleep(pause) => true,
            };
        }
    }
}

/// `base` ± 20 %, so replicas started together do not poll in lockstep.
fn jittered(base: Duration) -> Duration {
    let factor = rand::thread_rng().gen_range(0.8..1.2);
    base.mul_f64(factor)
}

/// `base * 2^(attempts-1)`, capped at `max`: the longest wait before a
/// retry.
fn backoff_ceiling(base: Duration, max: Duration, attempts: i32) -> Duration {
    let exponent = u32::try_from(attempts.saturating_sub(1))
        .unwrap_or(0)
        .min(20);
    base.saturating_mul(1 << exponent).min(max)
}

/// The wait before retry `attempts` of `delivery`, with the worker's
/// backoff settings (see [`spread_backoff`]).
fn backoff(config: &WorkerConfig, delivery: Uuid, attempts: i32) -> Duration {
    spread_backoff(config.backoff_base, config.backoff_max, delivery, attempts)
}

/// The wait before retry `attempts` of the row `id`: a point in the upper
/// half of [`backoff_ceiling`], spread by the id. Why spread: after an
/// outage every delivery that failed with it has the same attempt count,
/// and the same wait would send them all again in the same instant. Why by
/// the id rather than a random draw: a delivery's waits are then the same
/// on every replica and in every run of a seeded simulation, while
/// different deliveries still land apart.
fn spread_backoff(base: Duration, max: Duration, id: Uuid, attempts: i32) -> Duration {
    let ceiling = backoff_ceiling(base, max, attempts);
    // SplitMix64's finaliser over the id and the attempt: well spread bits
    // from correlated inputs (v4 ids, consecutive attempts).
    let id = id.as_u128();
    let mut x = (id as u64) ^ ((id >> 64) as u64) ^ u64::from(attempts.unsigned_abs());
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    let unit = (x >> 11) as f64 / (1u64 << 53) as f64;
    ceiling.mul_f64(0.5 + 0.5 * unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let c = WorkerConfig::default();
        let ceiling = |n| backoff_ceiling(c.backoff_base, c.backoff_max, n);
        assert_eq!(ceiling(1), Duration::from_secs(1));
        assert_eq!(ceiling(3), Duration::from_secs(4));
        assert_eq!(ceiling(30), Duration::from_secs(60));
    }

    /// Retries of deliveries that failed together (same attempt count) are
    /// spread over the upper half of the ceiling, not sent in one instant.
    #[test]
    fn retries_of_one_attempt_count_do_not_line_up() {
        let config = WorkerConfig::default();
        let waits: std::collections::BTreeSet<Duration> = (0..200)
            .map(|_| backoff(&config, Uuid::new_v4(), 3))
            .collect();
        assert!(waits.len() > 100, "{} distinct waits of 200", waits.len());
        let (low, high) = (Duration::from_secs(2), Duration::from_secs(4));
        assert!(
            waits.iter().all(|w| (low..=high).contains(w)),
            "{waits:?} outside [{low:?}, {high:?}]"
        );
    }

    /// A delivery waits the same before the same retry, wherever and
    /// whenever it is asked (replicas agree; a seeded run repeats).
    #[test]
    fn a_delivery_waits_the_same_before_the_same_retry() {
        let config = WorkerConfig::default();
        let id = Uuid::new_v4();
        assert_eq!(backoff(&config, id, 3), backoff(&config, id, 3));
        assert_ne!(backoff(&config, id, 3), backoff(&config, id, 4));
    }

    #[test]
    fn jitter_stays_within_bounds() {
        for _ in 0..1000 {
            let d = jittered(Duration::from_secs(10));
            assert!(d >= Duration::from_secs(8) && d <= Duration::from_secs(12));
        }
    }
}
