//! The simulated agent runtime: answers each call as a seeded coin says
//! (accept, 500, 409, 429 with `Retry-After`, time-out, accept-then-reset,
//! 404, or hold the call until the driver lets it go), and keeps its own
//! record of every call, which the invariants are judged against.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use nomos_continue::agent::{Agent, AgentError, Continuation, Notice};
use nomos_continue::clock::{Clock, ManualClock};
use nomos_continue::store::Store;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sha2::{Digest, Sha256};
use tokio::sync::Notify;
use uuid::Uuid;

use super::model::Windows;

/// How the runtime answered one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// 2xx, and the host was told so.
    Accepted,
    /// Processed, then the connection reset: the host cannot know.
    AcceptedThenReset,
    /// A shortage or a failure the host retries.
    Retryable,
    /// A 4xx: the host gives up.
    Permanent,
}

/// One call, as the runtime saw it.
#[derive(Debug, Clone)]
pub struct Call {
    /// Continuation or notice.
    pub continuation: bool,
    pub key: String,
    /// The executions and the status each was reported with.
    pub executions: Vec<(Uuid, String)>,
    pub answer: Answer,
    /// When the call started and when it was answered, on one counter
    /// shared by all calls: P2 is about calls started after an answer.
    pub started: u64,
    pub answered: u64,
    /// The ledger row's holder and claim count when the call was made, and
    /// the simulated time: evidence for a broken promise.
    pub evidence: String,
}

/// A continuation's claim, read at its call, for P3.
#[derive(Debug)]
struct ClaimSeen {
    session: Uuid,
    key: String,
    claimed_at: DateTime<Utc>,
    /// The window the store held and the clock at the call.
    evidence: String,
}

/// The runtime's knobs, set by the driver.
#[derive(Debug, Default)]
pub struct Weather {
    /// Every call is refused until then (a runtime restarting).
    pub down_until: Option<DateTime<Utc>>,
    /// Drain mode: every call is accepted at once.
    pub calm: bool,
    /// The endpoint answers 500 to everything, calm or not.
    pub dead_for_good: bool,
    /// The store's standby is brought up to date before each call
    /// (`failover`).
    pub lagging_standby: bool,
}

/// What every worker incarnation's agent shares.
pub struct Runtime {
    pub clock: Arc<ManualClock>,
    pub store: Store,
    pub windows: Arc<Mutex<Windows>>,
    pub weather: Mutex<Weather>,
    dice: Dice,
    calls: Mutex<Vec<Call>>,
    /// Every continuation's claim, judged after the drain (P3).
    claims: Mutex<Vec<ClaimSeen>>,
    violations: Mutex<Vec<String>>,
    /// Held calls wait on this; the driver releases them all at once.
    release: Notify,
    pub faults: Mutex<usize>,
    /// Worker incarnations killed: their calls never return, as if their
    /// process had died (aborting their tasks instead would leave pooled
    /// connections mid-transaction, which no real death does).
    dead: Mutex<std::collections::HashSet<usize>>,
    /// The counter behind [`Call::started`] and [`Call::answered`].
    sequence: std::sync::atomic::AtomicU64,
    /// Each incarnation's worker, for the evidence kept with a call.
    pub workers: Mutex<HashMap<usize, nomos_continue::worker::Worker>>,
    /// Calls that asked for the standby to catch up, and how many of them
    /// a copy has served (`failover`).
    pub standby_asked: AtomicU64,
    pub standby_served: AtomicU64,
}

impl Runtime {
    /// The weather, to set before the run.
    pub fn weather_mut(&self) -> std::sync::MutexGuard<'_, Weather> {
        lock(&self.weather)
    }

    pub fn new(
        seed: u64,
        clock: Arc<ManualClock>,
        store: Store,
        windows: Arc<Mutex<Windows>>,
    ) -> Self {
        Self {
            clock,
            store,
            windows,
            weather: Mutex::default(),
            dice: Dice::new(seed ^ 0x5eed_a9e7),
            calls: Mutex::default(),
            claims: Mutex::default(),
            violations: Mutex::default(),
            release: Notify::new(),
            faults: Mutex::new(0),
            dead: Mutex::default(),
            sequence: std::sync::atomic::AtomicU64::new(0),
            workers: Mutex::default(),
            standby_asked: AtomicU64::new(0),
            standby_served: AtomicU64::new(0),
        }
    }

    pub(super) fn tick(&self) -> u64 {
        self.sequence
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    }

    /// Kills a worker incarnation: from now on its calls never return.
    pub fn kill(&self, worker: usize) {
        lock(&self.dead).insert(worker);
    }

    fn is_dead(&self, worker: usize) -> bool {
        lock(&self.dead).contains(&worker)
    }

    /// Lets every held call answer.
    pub fn release_held(&self) {
        self.release.notify_waiters();
    }

    pub fn calls(&self) -> Vec<Call> {
        lock(&self.calls).clone()
    }

    pub fn violations(&self) -> Vec<String> {
        lock(&self.violations).clone()
    }

    fn violation(&self, what: String) {
        lock(&self.violations).push(what);
    }

    fn fault(&self) {
        *lock(&self.faults) += 1;
    }

    /// The standby has every commit made before a call: what the worker's
    /// standby fence waits for. The first thing a call does: the call asks
    /// with no await since the worker's last look at the store's primary
    /// era, so a failover after that look serves the ask before it loses
    /// anything (`store::testing::fail_over`).
    async fn standby_catches_up(&self) {
        if !lock(&self.weather).lagging_standby {
            return;
        }
        let ask = self.standby_asked.fetch_add(1, Ordering::SeqCst) + 1;
        let caught_up =
            nomos_continue::store::testing::replicate(&self.store, || self.standby_serves(ask));
        if let Err(e) = caught_up.await {
            self.violation(format!("could not bring the standby up to date: {e}"));
        }
    }

    /// Whether a copy is needed to serve ask number `ask` (every ask made
    /// so far, if so, which the copy then serves).
    pub(super) fn standby_serves(&self, ask: u64) -> bool {
        if self.standby_served.load(Ordering::SeqCst) >= ask {
            return false;
        }
        let asked = self.standby_asked.load(Ordering::SeqCst);
        self.standby_served.store(asked, Ordering::SeqCst);
        true
    }

    /// P3, judged at the call: the continuation's claim was taken while the
    /// model says its window was open. The claim is read now; it is judged
    /// after the drain, against the model as it then is: a failover that
    /// opened a window again (its denial lost) is noted in the model only
    /// once the driver has read the store, and a call may come first.
    async fn check_window(&self, continuation: &Continuation) {
        let ledger = match self
            .store
            .deliveries_for_session(continuation.session_id)
            .await
        {
            Ok(ledger) => ledger,
            Err(e) => return self.violation(format!("P3 check could not read the ledger: {e}")),
        };
        let claimed_at = ledger
            .iter()
            .find(|d| d.idempotency_key == continuation.idempotency_key)
            .and_then(|d| d.claimed_at);
        let Some(claimed_at) = claimed_at else {
            return self.violation(format!(
                "P3: continuation {} called without a recorded claim",
                continuation.idempotency_key
            ));
        };
        let stored = self.store.window(continuation.session_id).await;
        lock(&self.claims).push(ClaimSeen {
            session: continuation.session_id,
            key: continuation.idempotency_key.clone(),
            claimed_at,
            evidence: format!("store {stored:?}; clock {}", self.clock.now()),
        });
    }

    /// P3 for every continuation called: its claim was taken while the
    /// model says its window was open.
    pub fn window_violations(&self) -> Vec<String> {
        let windows = lock(&self.windows);
        (lock(&self.claims).iter())
            .filter(|c| !windows.open_at(c.session, c.claimed_at))
            .map(|c| {
                format!(
                    "P3: continuation {} of session {} claimed at {} outside its window \
                     (model {:?}; at the call: {})",
                    c.key,
                    c.session,
                    c.claimed_at,
                    windows.spans(c.session),
                    c.evidence
                )
            })
            .collect()
    }

    async fn answer(&self, worker: usize, session: Uuid, mut call: Call) -> Result<(), AgentError> {
        if self.is_dead(worker) {
            return std::future::pending().await;
        }
        call.started = self.tick();
        let row = self
            .store
            .deliveries_for_session(session)
            .await
            .ok()
            .and_then(|l| l.into_iter().find(|d| d.idempotency_key == call.key));
        let caller_tokens: Vec<String> = lock(&self.workers)
            .get(&worker)
            .map(|w| w.claims_in_flight())
            .unwrap_or_default()
            .iter()
            .filter(|c| row.as_ref().is_some_and(|d| d.id == c.id))
            .map(|c| c.token.to_string()[..8].to_string())
            .collect();
        call.evidence = match row {
            Some(d) => format!(
                "caller {worker} (dead {}) holding {caller_tokens:?}; {:?} by {:?} claim {} token {:?} at {} (lease to {:?})",
                self.is_dead(worker),
                d.state,
                d.lease_owner,
                d.claims,
                d.claim_token.map(|t| t.to_string()[..8].to_string()),
                self.clock.now(),
                d.lease_expires_at
            ),
            None => "no ledger row".into(),
        };
        let (answer, error, hold) = self.roll(&call.key);
        if hold {
            self.fault();
            self.release.notified().await;
        }
        let answered = self.tick();
        lock(&self.calls).push(Call {
            answer,
            answered,
            ..call
        });
        if self.is_dead(worker) {
            // Died while the runtime handled the call: the runtime's record
            // has it, the engine never hears back.
            return std::future::pending().await;
        }
        match error {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }

    /// Picks this call's fate.
    fn roll(&self, key: &str) -> (Answer, Option<AgentError>, bool) {
        let weather = lock(&self.weather);
        if weather.dead_for_good {
            drop(weather);
            self.fault();
            return (
                Answer::Retryable,
                Some(AgentError::Retryable(
                    "HTTP 500: the endpoint is down".into(),
                )),
                false,
            );
        }
        if weather.calm {
            return (Answer::Accepted, None, false);
        }
        if weather.down_until.is_some_and(|t| self.clock.now() < t) {
            drop(weather);
            self.fault();
            return (
                Answer::Retryable,
                Some(AgentError::unavailable(
                    "connection refused (runtime restarting)",
                )),
                false,
            );
        }
        drop(weather);
        let mut rng = self.dice.next(key);
        let dice: u32 = rng.gen_range(0..100);
        let hold = rng.gen_bool(0.08);
        let retry_after = Duration::from_secs(rng.gen_range(1..30));
        let fault = |answer, error| {
            self.fault();
            (answer, Some(error), hold)
        };
        match dice {
            0..=59 => (Answer::Accepted, None, hold),
            60..=69 => fault(Answer::Retryable, AgentError::Retryable("HTTP 500".into())),
            70..=74 => fault(
                Answer::Retryable,
                AgentError::unavailable("HTTP 409: same key still in progress"),
            ),
            75..=79 => fault(
                Answer::Retryable,
                AgentError::Unavailable {
                    message: "HTTP 429".into(),
                    retry_after: Some(retry_after),
                },
            ),
            80..=86 => fault(Answer::Retryable, AgentError::unavailable("timed out")),
            87..=96 => fault(
                Answer::AcceptedThenReset,
                AgentError::unavailable("connection reset after sending"),
            ),
            _ => fault(Answer::Permanent, AgentError::Permanent("HTTP 404".into())),
        }
    }
}

/// Dice per call: each call's are drawn from the run's seed, the call's
/// key and how many calls of that key came before, not from one stream
/// shared by all calls, so that a call's answer does not depend on the
/// order in which concurrent calls arrive.
#[derive(Debug)]
pub(super) struct Dice {
    seed: u64,
    /// Calls seen per key.
    rolls: Mutex<HashMap<String, u64>>,
}

impl Dice {
    pub(super) fn new(seed: u64) -> Self {
        Self {
            seed,
            rolls: Mutex::default(),
        }
    }

    /// The dice of the next call of `key`.
    pub(super) fn next(&self, key: &str) -> StdRng {
        let nth = {
            let mut rolls = lock(&self.rolls);
            let n = rolls.entry(key.to_owned()).or_default();
            *n += 1;
            *n
        };
        let mut hash = Sha256::new();
        hash.update(self.seed.to_le_bytes());
        hash.update(nth.to_le_bytes());
        hash.update(key.as_bytes());
        let bytes: [u8; 8] = hash.finalize()[..8].try_into().unwrap_or_default();
        StdRng::seed_from_u64(u64::from_le_bytes(bytes))
    }
}

/// A worker incarnation's connection to the runtime.
pub struct SimAgent {
    pub runtime: Arc<Runtime>,
    pub worker: usize,
}

#[async_trait]
impl Agent for SimAgent {
    async fn continue_session(&self, continuation: &Continuation) -> Result<(), AgentError> {
        self.runtime.standby_catches_up().await;
        self.runtime.check_window(continuation).await;
        let call = Call {
            continuation: true,
            key: continuation.idempotency_key.clone(),
            executions: continuation
                .executions
                .iter()
                .map(|e| (e.id, e.status.clone()))
                .collect(),
            answer: Answer::Accepted,
            started: 0,
            answered: 0,
            evidence: String::new(),
        };
        self.runtime
            .answer(self.worker, continuation.session_id, call)
            .await
    }

    async fn notify(&self, notice: &Notice) -> Result<(), AgentError> {
        self.runtime.standby_catches_up().await;
        let call = Call {
            continuation: false,
            key: notice.idempotency_key.clone(),
            executions: Vec::new(),
            answer: Answer::Accepted,
            started: 0,
            answered: 0,
            evidence: String::new(),
        };
        self.runtime
            .answer(self.worker, notice.session_id, call)
            .await
    }
}

/// Calls grouped by key, in order.
pub fn by_key(calls: &[Call]) -> HashMap<&str, Vec<&Call>> {
    let mut out: HashMap<&str, Vec<&Call>> = HashMap::new();
    for call in calls {
        out.entry(call.key.as_str()).or_default().push(call);
    }
    out
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
