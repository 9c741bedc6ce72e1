//! A seeded, randomized fault-injection simulator for the delivery promises
//! (P1–P6 in `docs/operations.md`), in process, on a real store.
//!
//! A driver takes random steps on an injected clock: approvals, denials and
//! expiries; tool results and status reports arriving out of order, late
//! regressions after a terminal status; worker passes running concurrently;
//! an agent runtime that is slow, answers 500, 409 or 429 with
//! `Retry-After`, times out, accepts and then resets, refuses with 404, or is
//! down for minutes; workers killed mid-pass or stalled past their lease;
//! a store that refuses every write for a while (`faults`), or fails over
//! to a standby that lacks its last commits (`failover`). Then it drains
//! (a calm runtime, time moving on, `drain`) and checks the promises
//! against the ledger and the runtime's own record of calls (`check`).
//!
//! What a seed fixes, and what it does not: the driver's steps and what
//! each chooses (the ids it makes up included) come from the seed alone,
//! and so do the agent's and the operator channel's answers to a given
//! call (`agent`); the SHA-256 of the driver's event log
//! ([`SimReport::digest`]) is the same in every run of a seed and mode.
//! How far a worker's pass, a spawned task, gets between two of the
//! driver's steps is real time: it waits on the database's answers
//! (SQLite's worker thread, PostgreSQL's server and its lock waits), and
//! the ids the store mints (deliveries, claim tokens, notices) are random.
//! So which calls a run makes, and its outcome counts, may differ between
//! runs of one seed; a failure that depends on them is replayed by running
//! its seed and store again a few times (the soak's `--runs`).

mod agent;
mod check;
mod config;
mod drain;
mod failover;
mod faults;
mod model;
mod operator;
mod passes;
mod push;
mod reports;

pub use config::{SimConfig, SimReport};

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use nomos_continue::clock::{Clock, ManualClock};
use nomos_continue::policy::PolicyRuntime;
use nomos_continue::store::testing::deadlocks_detected;
use nomos_continue::store::{task_execution_id, Backend, Poll, Route, Store, TaskSource};
use nomos_continue::worker::{Notifier, NotifyConfig, Worker, WorkerConfig};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use sha2::{Digest, Sha256};

use chrono::{DateTime, Duration, Utc};
use tokio::task::JoinHandle;
use uuid::Uuid;

use agent::{Runtime, SimAgent};
use model::{ExecutionModel, Windows};
use operator::SimOperator;
use passes::PassLog;
use reports::report_next;

/// The most simulated time that passes between two renewals of a live
/// worker's leases: a third of the simulated workers' lease.
const RENEW_STEP: Duration = Duration::seconds(2);

struct Incarnation {
    worker: Worker,
    pass: Option<JoinHandle<()>>,
}

/// The world the driver acts on.
struct Sim {
    config: SimConfig,
    rng: StdRng,
    store: Store,
    policy: Arc<PolicyRuntime>,
    clock: Arc<ManualClock>,
    windows: Arc<Mutex<Windows>>,
    runtime: Arc<Runtime>,
    operator: Arc<SimOperator>,
    notifier: Notifier,
    sessions: Vec<Uuid>,
    executions: Vec<ExecutionModel>,
    workers: Vec<Incarnation>,
    /// Keys whose call was in flight when its worker was killed or stalled
    /// past its lease: that call's outcome is unknown, so a repeat is allowed.
    unknown: HashSet<String>,
    next_worker: usize,
    /// Faults the driver injected.
    faults: usize,
    /// The ids the driver makes up, from the seed (`SimConfig::id_seed`).
    ids: StdRng,
    /// The driver's event log, hashed as it grows (`record`).
    log: Sha256,
    passes: Arc<PassLog>,
    /// While the store refuses writes: until when (`faults`).
    refusing_until: Option<DateTime<Utc>>,
    /// Promises seen broken while driving (a forged push let in).
    broken: Vec<String>,
    /// Keys of notices the operator's channel carried whose rows a
    /// failover lost (`failover`).
    lost_notices: HashSet<String>,
    /// Executions whose terminal status a failover lost: running again
    /// until the driver reports it again (`failover`).
    relapsed: HashSet<Uuid>,
    /// Failovers, and the records of accepted calls they lost.
    failovers: usize,
    lost_records: usize,
}

/// Runs one seeded simulation on `store` and checks the promises.
pub async fn run(store: Store, policy: Arc<PolicyRuntime>, config: SimConfig) -> SimReport {
    let clock = Arc::new(ManualClock::new(
        "2026-11-30T04:00:00Z"
            .parse::<chrono::DateTime<chrono::Utc>>()
            .expect("a valid time"),
    ));
    let windows = Arc::new(Mutex::new(Windows::default()));
    let runtime = Arc::new(Runtime::new(
        config.seed,
        clock.clone(),
        store.clone(),
        windows.clone(),
    ));
    runtime.weather_mut().dead_for_good = config.agent_down_for_good;
    let backend = match store.backend() {
        Backend::Postgres => "postgres",
        Backend::Sqlite => "sqlite",
    };
    let passes = Arc::new(PassLog::new(
        format!("seed {} on {backend}", config.seed),
        config.print_errors,
    ));
    let mut broken = Vec::new();
    if config.refusing_store {
        if let Err(e) = nomos_continue::store::testing::install_write_refusal(&store).await {
            broken.push(format!("could not install the refusal of writes: {e}"));
        }
    }
    if config.losing_store {
        if let Err(e) = nomos_continue::store::testing::install_lagging_standby(&store).await {
            broken.push(format!("could not install the lagging standby: {e}"));
        }
        runtime.weather_mut().lagging_standby = !config.unfenced_standby;
    }
    let deadlocks_before = deadlocks_detected(&store).await.unwrap_or(0);
    let mut ids = StdRng::seed_from_u64(config.id_seed());
    let operator = Arc::new(SimOperator::new(config.seed, config.operator_down_for_good));
    let notifier = Notifier::new(
        store.clone(),
        Some(operator.clone()),
        clock.clone(),
        Arc::default(),
        NotifyConfig::default(),
        format!("sim-{}-notifier", config.seed),
    );
    let mut sim = Sim {
        config,
        rng: StdRng::seed_from_u64(config.seed),
        store,
        policy,
        clock,
        windows,
        runtime,
        operator,
        notifier,
        sessions: (0..config.sessions).map(|_| new_id(&mut ids)).collect(),
        executions: Vec::new(),
        workers: Vec::new(),
        unknown: HashSet::new(),
        next_worker: 0,
        faults: 0,
        ids,
        log: Sha256::new(),
        passes,
        refusing_until: None,
        broken,
        lost_notices: HashSet::new(),
        relapsed: HashSet::new(),
        failovers: 0,
        lost_records: 0,
    };
    for _ in 0..config.workers {
        sim.spawn_worker();
    }
    for _ in 0..config.steps {
        sim.step().await;
        tokio::task::yield_now().await;
    }
    sim.drain().await;
    let mut report = check::check(&sim).await;
    report.seed = config.seed;
    report.operations = config.steps;
    report.driver_faults = sim.faults;
    report.faults = sim.faults + *lock(&sim.runtime.faults) + *lock(&sim.operator.faults);
    report.digest = hex::encode(sim.log.clone().finalize());
    let counts = sim.passes.end();
    report.pass_errors = counts.errors;
    // The database's own count also has the deadlocks of statements the
    // engine retries without failing a pass (lease renewals, records).
    let in_database = deadlocks_detected(&sim.store).await.unwrap_or(0) - deadlocks_before;
    report.deadlocks = counts
        .deadlocks
        .max(usize::try_from(in_database).unwrap_or(0));
    report.refused = counts.refused;
    report.failovers = sim.failovers;
    report.lost_records = sim.lost_records;
    report.violations.extend(sim.broken.iter().cloned());
    report
}

impl Sim {
    fn spawn_worker(&mut self) {
        let id = self.next_worker;
        self.next_worker += 1;
        let config = WorkerConfig::default()
            .with_worker_id(format!("sim-{}-{id}", self.config.seed))
            .with_lease(std::time::Duration::from_secs(6))
            // Renewals come from the driver as simulated time passes (see
            // `advance`); the real-time tick must not keep a dead worker's
            // leases alive.
            .with_renew_every(Some(std::time::Duration::from_secs(3600)))
            .with_delivery_concurrency(4)
            .with_batch(50);
        let agent = Arc::new(SimAgent {
            runtime: self.runtime.clone(),
            worker: id,
        });
        let worker = Worker::builder(self.store.clone(), self.policy.clone(), agent)
            .clock(self.clock.clone())
            .config(config)
            .build();
        lock(&self.runtime.workers).insert(id, worker.clone());
        self.workers.push(Incarnation { worker, pass: None });
    }

    async fn step(&mut self) {
        let roll: u32 = self.rng.gen_range(0..1000);
        self.record(format_args!("step {roll}"));
        match roll {
            0..=79 => self.approve().await,
            80..=109 => self.deny().await,
            110..=249 => self.new_execution().await,
            250..=499 => self.report().await,
            500..=699 => {
                let millis = self.rng.gen_range(1..3000);
                self.record(format_args!("advance {millis} ms"));
                self.advance(Duration::milliseconds(millis)).await;
            }
            700..=719 => {
                let minutes = self.rng.gen_range(1..12);
                self.record(format_args!("advance {minutes} min"));
                self.standby_streams().await;
                self.advance(Duration::minutes(minutes)).await;
            }
            720..=929 => self.start_pass(),
            930..=969 => self.runtime.release_held(),
            970..=979 => self.kill().await,
            980..=989 => self.stall().await,
            // A run with a refusing store turns half the outages into
            // refusals, one with a losing store the rest into failovers;
            // other runs take the same steps as before.
            995.. if self.config.refusing_store => self.refuse().await,
            990.. if self.config.losing_store => self.fail_over().await,
            _ => self.outage(),
        }
        if self.rng.gen_bool(0.05) {
            self.record(format_args!("notify"));
            self.notify().await;
        }
    }

    /// Adds one event to the driver's log (see [`SimReport::digest`]):
    /// what the driver chose, never what the engine answered, which is
    /// not fixed by the seed (see the module doc).
    fn record(&mut self, event: std::fmt::Arguments<'_>) {
        self.log.update(event.to_string().as_bytes());
        self.log.update(b"\n");
    }

    /// One pass of the operator channel's notifier; an error is a pass error.
    async fn notify(&mut self) -> bool {
        match self.notifier.pass().await {
            Ok(r) => r.delivered + r.retried + r.failed + r.expired > 0,
            Err(e) => {
                self.passes.failed("notifier", &e);
                false
            }
        }
    }

    async fn approve(&mut self) {
        let session = self.pick_session();
        let minutes = self.rng.gen_range(1..=30);
        self.record(format_args!("approve {session} {minutes} min"));
        let now = self.clock.now();
        if let Ok(w) = self
            .store
            .approve(session, Route::Button, now, Duration::minutes(minutes))
            .await
        {
            lock(&self.windows).approved(session, w.opened_at, w.expires_at);
        }
    }

    async fn deny(&mut self) {
        let session = self.pick_session();
        self.record(format_args!("deny {session}"));
        let now = self.clock.now();
        if let Ok(Some(_)) = self.store.deny(session, now).await {
            lock(&self.windows).denied(session, now);
        }
    }

    /// A tool result naming a new execution, whose statuses are scripted:
    /// some never finish, some regress after finishing, some report before
    /// their link, a few carry a big result.
    async fn new_execution(&mut self) {
        let session = self.pick_session();
        // Some executions are A2A tasks, reported by pushes.
        let task = self
            .rng
            .gen_bool(0.3)
            .then(|| push::new_task(self.executions.len(), self.config.seed, &mut self.ids));
        let id = match &task {
            Some(t) => task_execution_id(TaskSource::A2a, &t.task_id),
            None => new_id(&mut self.ids),
        };
        let mut script = Vec::new();
        for _ in 0..self.rng.gen_range(0..3) {
            script.push(("running", String::new()));
        }
        if self.rng.gen_bool(0.9) {
            let big = self.rng.gen_bool(0.02);
            if big {
                self.faults += 1;
            }
            let result = if big {
                "x".repeat(300_000)
            } else {
                format!("step {id} result")
            };
            let status = *["failed", "completed", "cancelled"]
                .choose(&mut self.rng)
                .unwrap_or(&"failed");
            script.push((status, result));
            if self.rng.gen_bool(0.1) {
                self.faults += 1;
                script.push(("running", "late regression".into()));
            }
        }
        script.reverse(); // popped from the end
        let statuses: Vec<String> = (script.iter())
            .map(|(status, result)| format!("{status}:{}", result.len()))
            .collect();
        self.record(format_args!("execution {id} of {session}: {statuses:?}"));
        let mut execution = ExecutionModel {
            id,
            session,
            linked: false,
            relink: false,
            script,
            first_terminal: None,
            terminal_report: None,
            task,
            last_push: None,
        };
        if self.rng.gen_bool(0.15) {
            // The status comes before the tool result.
            self.record(format_args!("report {id} before its link"));
            self.faults += 1;
            if let Some(broken) =
                report_next(&self.store, &self.policy, &self.clock, &mut execution).await
            {
                self.broken.push(broken);
            }
        }
        let text = match &execution.task {
            Some(task) => push::tool_result(task),
            None => format!("running, execution {id}"),
        };
        let ids = push::linked_ids(&self.policy, &text);
        if !ids.contains(&id) {
            self.broken
                .push(format!("the policy did not name {id} in {text:?}"));
        }
        if self
            .store
            .link(session, &ids, self.clock.now())
            .await
            .is_ok()
        {
            execution.linked = true;
            if let Some(task) = &execution.task {
                execution.relink = !push::register(&self.store, id, task, &self.clock).await;
            }
        } else {
            execution.relink = true;
        }
        self.executions.push(execution);
    }

    /// Moves the clock in steps no longer than a renewal period, letting
    /// every live worker renew its leases after each step, as its renewal
    /// ticks would have while that time passed.
    async fn advance(&mut self, by: Duration) {
        let mut left = by;
        while left > Duration::zero() {
            let step = left.min(RENEW_STEP);
            self.clock.advance(step);
            left -= step;
            self.while_refusing().await;
            for incarnation in &self.workers {
                incarnation.worker.renew_leases().await;
            }
        }
    }

    fn start_pass(&mut self) {
        // Half the passes read only unparked links, as a woken worker does;
        // the drain sweeps, so what a fast pass skipped must still settle.
        let poll = if self.rng.gen_bool(0.5) {
            Poll::Unparked
        } else {
            Poll::Sweep
        };
        let Some(i) = (0..self.workers.len())
            .collect::<Vec<_>>()
            .choose(&mut self.rng)
            .copied()
        else {
            return;
        };
        // Whether that worker's last pass has ended is real time (see the
        // module doc): the log has the choice, not whether a pass started.
        self.record(format_args!("pass {poll:?} on worker {i}"));
        let incarnation = &mut self.workers[i];
        if incarnation.pass.as_ref().is_some_and(|p| !p.is_finished()) {
            return;
        }
        let worker = incarnation.worker.clone();
        let passes = self.passes.clone();
        incarnation.pass = Some(tokio::spawn(async move {
            match worker.run_pass(poll).await {
                Ok(report) => passes.policy_failures(report.plan.policy_failures),
                Err(e) => passes.failed("worker", &e),
            }
        }));
    }

    fn pick_session(&mut self) -> Uuid {
        *self.sessions.choose(&mut self.rng).unwrap_or(&Uuid::nil())
    }
}

/// The incarnation number in a simulated worker's id (`sim-<seed>-<n>`).
fn worker_index(worker: &Worker) -> usize {
    worker
        .config()
        .worker_id
        .rsplit('-')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(usize::MAX)
}

/// A random (version 4) id drawn from `rng`: the seed's, not the system's.
fn new_id(rng: &mut StdRng) -> Uuid {
    uuid::Builder::from_random_bytes(rng.gen()).into_uuid()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
