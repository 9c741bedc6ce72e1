//! A seeded, randomized fault-injection simulator for the delivery promises
//! (P1–P6 in `docs/operations.md`), in process, on a real store.
//!
//! A driver takes random steps on an injected clock: approvals, denials and
//! expiries; tool results and status reports arriving out of order, late
//! regressions after a terminal status; worker passes running concurrently;
//! an agent runtime that is slow, answers 500, 409 or 429 with
//! `Retry-After`, times out, accepts and then resets, refuses with 404, or is
//! down for minutes; workers killed mid-pass or stalled past their lease.
//! Then it drains (a calm runtime, time moving on) and checks the promises
//! against the ledger and the runtime's own record of calls (`check`).

mod agent;
mod check;
mod model;
mod operator;
mod push;
mod reports;

use reports::report_next;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use nomos_continue::clock::{Clock, ManualClock};
use nomos_continue::policy::PolicyRuntime;
use nomos_continue::store::{task_execution_id, DeliveryState, Poll, Route, Store, TaskSource};
use nomos_continue::worker::{Notifier, NotifyConfig, Worker, WorkerConfig};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use chrono::Duration;
use tokio::task::JoinHandle;
use uuid::Uuid;

use agent::{Runtime, SimAgent};
use model::{ExecutionModel, Windows};
use operator::SimOperator;

/// The most simulated time that passes between two renewals of a live
/// worker's leases: a third of the simulated workers' lease.
const RENEW_STEP: Duration = Duration::seconds(2);

/// One simulation's size.
#[derive(Debug, Clone, Copy)]
pub struct SimConfig {
    pub seed: u64,
    /// Random steps before the drain.
    pub steps: usize,
    /// Worker incarnations alive at once.
    pub workers: usize,
    pub sessions: usize,
    /// The agent's endpoint answers 500 to everything, the drain included:
    /// every continuation fails, and so does every notice's agent copy.
    pub agent_down_for_good: bool,
    /// The operator's channel answers 500 to everything too.
    pub operator_down_for_good: bool,
}

impl SimConfig {
    /// A size that runs in a couple of seconds.
    pub fn small(seed: u64) -> Self {
        Self {
            seed,
            steps: 300,
            workers: 3,
            sessions: 6,
            agent_down_for_good: false,
            operator_down_for_good: false,
        }
    }

    /// [`Self::small`] with the agent's endpoint down for good.
    pub fn agent_down(seed: u64) -> Self {
        Self {
            agent_down_for_good: true,
            ..Self::small(seed)
        }
    }
}

/// What a simulation did and found.
#[derive(Debug, Default, Clone)]
pub struct SimReport {
    pub seed: u64,
    /// Driver steps taken (each one operation on the engine or the world).
    pub operations: usize,
    /// Faults injected: failed or held agent calls, outages, kills, stalls,
    /// late regressions, reports before their link, big results.
    pub faults: usize,
    /// Agent calls made.
    pub calls: usize,
    /// Executions settled continued / dropped / failed at the end.
    pub continued: usize,
    pub dropped: usize,
    pub failed: usize,
    /// Worker passes that returned an error (a fault of the store).
    pub pass_errors: usize,
    /// Of those, the passes PostgreSQL failed with `deadlock detected`
    /// (counted apart: a known lock-order cycle between workers, retried by
    /// the next pass; they are not in `pass_errors`).
    pub deadlocks: usize,
    /// Notices whose copy reached the operator's channel, and notices that
    /// reached no one (counted as undelivered).
    pub told_operator: usize,
    pub reached_no_one: usize,
    /// Broken promises, each naming the promise; empty is a pass.
    pub violations: Vec<String>,
}

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
    faults: usize,
    pass_errors: Arc<Mutex<usize>>,
    deadlocks: Arc<Mutex<usize>>,
    policy_failures: Arc<Mutex<usize>>,
    /// Promises seen broken while driving (a forged push let in).
    broken: Vec<String>,
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
        sessions: (0..config.sessions).map(|_| Uuid::new_v4()).collect(),
        executions: Vec::new(),
        workers: Vec::new(),
        unknown: HashSet::new(),
        next_worker: 0,
        faults: 0,
        pass_errors: Arc::default(),
        deadlocks: Arc::default(),
        policy_failures: Arc::default(),
        broken: Vec::new(),
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
    report.faults = sim.faults + *lock(&sim.runtime.faults) + *lock(&sim.operator.faults);
    report.pass_errors = *lock(&sim.pass_errors);
    report.deadlocks = *lock(&sim.deadlocks);
    report.violations.extend(sim.broken.iter().cloned());
    report
}

impl Sim {
    fn spawn_worker(&mut self) {
        let id = self.next_worker;
        self.next_worker += 1;
        let config = WorkerConfig {
            worker_id: format!("sim-{}-{id}", self.config.seed),
            lease: std::time::Duration::from_secs(6),
            // Renewals come from the driver as simulated time passes (see
            // `advance`); the real-time tick must not keep a dead worker's
            // leases alive.
            renew_every: Some(std::time::Duration::from_secs(3600)),
            delivery_concurrency: 4,
            batch: 50,
            ..WorkerConfig::default()
        };
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
        match roll {
            0..=79 => self.approve().await,
            80..=109 => self.deny().await,
            110..=249 => self.new_execution().await,
            250..=499 => self.report().await,
            500..=699 => {
                let millis = self.rng.gen_range(1..3000);
                self.advance(Duration::milliseconds(millis)).await;
            }
            700..=719 => {
                let minutes = self.rng.gen_range(1..12);
                self.advance(Duration::minutes(minutes)).await;
            }
            720..=929 => self.start_pass(),
            930..=969 => self.runtime.release_held(),
            970..=979 => self.kill().await,
            980..=989 => self.stall().await,
            _ => self.outage(),
        }
        if self.rng.gen_bool(0.05) {
            self.notify().await;
        }
    }

    /// One pass of the operator channel's notifier; an error is a pass error.
    async fn notify(&mut self) -> bool {
        match self.notifier.pass().await {
            Ok(r) => r.delivered + r.retried + r.failed + r.expired > 0,
            Err(e) => {
                failed_pass(&self.pass_errors, &self.deadlocks, "notifier", &e);
                false
            }
        }
    }

    async fn approve(&mut self) {
        let session = self.pick_session();
        let minutes = self.rng.gen_range(1..=30);
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
            .then(|| push::new_task(self.executions.len(), self.config.seed));
        let id = match &task {
            Some(t) => task_execution_id(TaskSource::A2a, &t.task_id),
            None => Uuid::new_v4(),
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
        let mut execution = ExecutionModel {
            id,
            linked: false,
            script,
            first_terminal: None,
            task,
            last_push: None,
        };
        if self.rng.gen_bool(0.15) {
            // The status comes before the tool result.
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
                push::register(&self.store, id, task, &self.clock).await;
            }
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
        let Some(incarnation) = self.workers.choose_mut(&mut self.rng) else {
            return;
        };
        if incarnation.pass.as_ref().is_some_and(|p| !p.is_finished()) {
            return;
        }
        let worker = incarnation.worker.clone();
        let errors = self.pass_errors.clone();
        let deadlocks = self.deadlocks.clone();
        let failures = self.policy_failures.clone();
        incarnation.pass = Some(tokio::spawn(async move {
            match worker.run_pass(poll).await {
                Ok(report) => *lock(&failures) += report.plan.policy_failures,
                Err(e) => failed_pass(&errors, &deadlocks, "worker", &e),
            }
        }));
    }

    /// A worker killed mid-pass: its calls in flight never return (the
    /// runtime may or may not have acted on them), it renews nothing more,
    /// and a new incarnation (a new worker id) takes its place.
    async fn kill(&mut self) {
        if self.workers.is_empty() {
            return;
        }
        let i = self.rng.gen_range(0..self.workers.len());
        let dead = self.workers.swap_remove(i);
        self.runtime.kill(worker_index(&dead.worker));
        // Read with no await after the kill: later claims never get an answer.
        let held = dead.worker.claims_in_flight();
        self.mark_unknown(held).await;
        self.faults += 1;
        self.spawn_worker();
    }

    /// A worker that stalls past its lease: time moves on without its
    /// renewals, so its claims may be taken over while its calls still run.
    async fn stall(&mut self) {
        let Some(stalled) = self.workers.choose(&mut self.rng).map(|w| w.worker.clone()) else {
            return;
        };
        let index = worker_index(&stalled);
        self.faults += 1;
        // Seven seconds pass in renewal-sized steps; every other worker
        // renews after each step, as its ticks would. The stalled worker's
        // claims held at any point of the stall (read right after each
        // step, with no await in between) may lapse: their outcome becomes
        // unknown.
        let mut held = Vec::new();
        let mut left = Duration::seconds(7);
        while left > Duration::zero() {
            let step = left.min(RENEW_STEP);
            self.clock.advance(step);
            left -= step;
            held.extend(stalled.claims_in_flight());
            for incarnation in &self.workers {
                if worker_index(&incarnation.worker) != index {
                    incarnation.worker.renew_leases().await;
                }
            }
        }
        held.extend(stalled.claims_in_flight());
        self.mark_unknown(held).await;
    }

    /// Records the keys of these claims: their calls' outcome becomes
    /// unknown to the engine.
    async fn mark_unknown(&mut self, claims: Vec<nomos_continue::store::Claim>) {
        for claim in claims {
            if let Ok(Some(d)) = self.store.delivery(claim.id).await {
                self.unknown.insert(d.idempotency_key);
            }
        }
    }

    /// The runtime goes down for one to five minutes of simulated time.
    fn outage(&mut self) {
        let minutes = self.rng.gen_range(1..=5);
        lock(&self.runtime.weather).down_until =
            Some(self.clock.now() + Duration::minutes(minutes));
        self.faults += 1;
    }

    fn pick_session(&mut self) -> Uuid {
        *self.sessions.choose(&mut self.rng).unwrap_or(&Uuid::nil())
    }

    /// Calm weather, every status reported, every held call released, and
    /// time moving on until no pass finds anything to do.
    async fn drain(&mut self) {
        {
            let mut weather = lock(&self.runtime.weather);
            weather.calm = true;
            weather.down_until = None;
        }
        self.operator
            .calm
            .store(true, std::sync::atomic::Ordering::SeqCst);
        for incarnation in &mut self.workers {
            if let Some(pass) = incarnation.pass.take() {
                // Held calls must be let go for the pass to end.
                while !pass.is_finished() {
                    self.runtime.release_held();
                    tokio::task::yield_now().await;
                }
                let _ = pass.await;
            }
        }
        for i in 0..self.executions.len() {
            while !self.executions[i].script.is_empty() {
                let execution = &mut self.executions[i];
                let broken = report_next(&self.store, &self.policy, &self.clock, execution).await;
                self.broken.extend(broken);
            }
        }
        for _ in 0..60 {
            self.advance(Duration::seconds(61)).await;
            let mut busy = false;
            for incarnation in &self.workers {
                match incarnation.worker.run_once().await {
                    Ok(r) => {
                        *lock(&self.policy_failures) += r.plan.policy_failures;
                        busy |= r.plan.planned
                            + r.plan.dropped
                            + r.deliver.attempted
                            + r.deliver.dropped_unsent
                            > 0;
                    }
                    Err(e) => failed_pass(&self.pass_errors, &self.deadlocks, "worker", &e),
                }
            }
            busy |= self.notify().await;
            // A pass with nothing to do is not the end while a retry is
            // still waiting for its time (an agent's `Retry-After` may be
            // longer than one step).
            if !busy && !self.anything_pending().await {
                break;
            }
        }
    }

    /// Whether any session's ledger still holds a pending delivery, or
    /// the operator channel a copy to send.
    async fn anything_pending(&self) -> bool {
        if self.store.pending_operator_notices().await.unwrap_or(0) > 0 {
            return true;
        }
        for session in &self.sessions {
            match self.store.session_summary(*session).await {
                Ok(summary) => {
                    if (summary.deliveries.iter()).any(|d| d.state == DeliveryState::Pending) {
                        return true;
                    }
                }
                // The check after the drain reports an unreadable session.
                Err(_) => return false,
            }
        }
        false
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

/// Counts a failed pass (a deadlock apart from the rest) and shows it when
/// `SIM_LOG` is set.
fn failed_pass(
    errors: &Mutex<usize>,
    deadlocks: &Mutex<usize>,
    what: &str,
    e: &dyn std::fmt::Display,
) {
    let message = e.to_string();
    tracing_free_log(&format!("{what} pass failed: {message}"));
    if message.contains("deadlock detected") {
        *lock(deadlocks) += 1;
    } else {
        *lock(errors) += 1;
    }
}

/// Passes are spawned tasks with nowhere to return an error to; it is
/// counted, and shown when `SIM_LOG` is set.
fn tracing_free_log(message: &str) {
    if std::env::var_os("SIM_LOG").is_some() {
        eprintln!("{message}");
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
