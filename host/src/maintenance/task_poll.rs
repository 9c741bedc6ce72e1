//! The A2A poller: asks a remote agent for a task (`GetTask`; 0.3
//! `tasks/get`) when no push has been heard of it for a while, and once for
//! every such task when this process starts.
//!
//! Why: neither A2A SDK retries a push that failed, so a push sent while
//! nomos-continue restarted, or one lost on the way, is gone, and the task
//! would wait silently. Where the runtime named the agent's address with
//! the task (`POST /v1/sessions/{id}/tasks`, `agent`), the poller asks it.
//! What the agent answers goes through the intake's own path for a push
//! (the same de-duplication, the same recording). Without an address the
//! stuck watch's notice covers the task.
//!
//! A task registered with its agent's address is also asked about soon
//! after (1 s, then 2, 4, … until `--task-poll-after`), by the replica
//! that registered it: a task that ended before its push configuration
//! existed was never pushed, and its result would otherwise wait for the
//! next overdue pass. The asks stop once the task has ended.
//!
//! Every replica that runs a worker polls; two asking the same agent at
//! once record one state (a repeat changes nothing).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::clock::Clock;
use crate::intake::{Intake, IntakeError};
use crate::protocols::a2a;
use crate::redact;
use crate::store::{Store, TaskRecord};

/// Tasks asked about per pass; the rest wait for the next one.
const PER_PASS: i64 = 100;
/// How long one agent may take to answer.
const ASK_WITHIN: Duration = Duration::from_secs(10);
/// The first ask after a registration, doubled after each until the
/// overdue period.
const FIRST_ASK: Duration = Duration::from_secs(1);
/// Registered tasks waiting for an early ask, at most; past it a task is
/// left to the overdue pass.
const MAX_SOON: usize = 10_000;

/// One early ask: when, which task, and the wait before the next.
type Soon = Reverse<(Instant, Uuid, Duration)>;

/// Why a task could not be asked about (logged; it is asked again later).
#[derive(Debug, thiserror::Error)]
enum AskError {
    /// The agent's address by its origin alone, and what failed without
    /// the URL (see `redact`).
    #[error("the agent at {url} did not answer: {cause}")]
    Http { url: String, cause: String },
    #[error("the agent's answer is no task: {0}")]
    Shape(#[from] crate::protocols::ProtocolError),
    #[error("the answer could not be recorded: {0}")]
    Record(#[from] IntakeError),
}

/// Asks remote agents about their tasks whose pushes are overdue.
pub struct TaskPoller {
    intake: Intake,
    store: Store,
    clock: Arc<dyn Clock>,
    client: reqwest::Client,
    overdue: Duration,
    /// Tasks just registered with their agent's address
    /// ([`Intake::asking_soon`]).
    registered: Option<mpsc::UnboundedReceiver<Uuid>>,
}

impl TaskPoller {
    /// A poller that asks about a task when nothing was heard of it for
    /// `overdue` (`serve --task-poll-after`), reading the overdue tasks
    /// from `store` and taking the answers through `intake`.
    pub fn new(intake: Intake, store: Store, clock: Arc<dyn Clock>, overdue: Duration) -> Self {
        let client = reqwest::Client::builder()
            .timeout(ASK_WITHIN)
            .build()
            .unwrap_or_default();
        Self {
            intake,
            store,
            clock,
            client,
            overdue,
            registered: None,
        }
    }

    /// Also asks soon after each registration `registered` names (the
    /// other end is the intake's, see [`Intake::asking_soon`]).
    pub fn asking_soon(mut self, registered: mpsc::UnboundedReceiver<Uuid>) -> Self {
        self.registered = Some(registered);
        self
    }

    /// Asks about every task not heard of since now (what this process may
    /// have missed while it was down), then, every half of `overdue`, about
    /// those silent for longer than `overdue`; between, each task just
    /// registered soon after; until `shutdown`.
    pub async fn run(mut self, shutdown: CancellationToken) {
        let mut silent_for = chrono::Duration::zero();
        let mut next_pass = Instant::now();
        let mut soon: BinaryHeap<Soon> = BinaryHeap::new();
        loop {
            let next_soon = soon.peek().map(|Reverse((at, _, _))| *at);
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep_until(next_pass) => {
                    let asked = self.pass(silent_for).await;
                    if asked > 0 {
                        tracing::debug!("asked remote agents about {asked} tasks");
                    }
                    silent_for =
                        chrono::Duration::from_std(self.overdue).unwrap_or(chrono::Duration::MAX);
                    next_pass = Instant::now() + self.overdue / 2;
                }
                registered = next_registered(&mut self.registered) => match registered {
                    Some(id) if soon.len() < MAX_SOON => {
                        soon.push(Reverse((Instant::now() + FIRST_ASK, id, FIRST_ASK)));
                    }
                    Some(_) => {}
                    None => self.registered = None,
                },
                () = sleep_until(next_soon), if next_soon.is_some() => {
                    if let Some(Reverse((_, id, waited))) = soon.pop() {
                        let next = waited * 2;
                        if !self.ask_soon(id).await && next < self.overdue {
                            soon.push(Reverse((Instant::now() + next, id, next)));
                        }
                    }
                }
            }
        }
    }

    /// Asks about the task of `id` if it has not ended; answers whether it
    /// has ended (then nothing more is asked early).
    async fn ask_soon(&self, id: Uuid) -> bool {
        if self.ended(id).await {
            return true;
        }
        match self.store.task_record(id).await {
            Ok(Some(task)) => {
                if let Err(e) = self.ask(task).await {
                    tracing::debug!("asking about the task of execution {id} soon: {e}");
                }
            }
            Ok(None) => return true,
            Err(e) => tracing::debug!("reading the task of execution {id}: {e}"),
        }
        self.ended(id).await
    }

    /// Whether the execution `id` has ended (a read that fails says no).
    async fn ended(&self, id: Uuid) -> bool {
        let executions = self.store.executions(&[id]).await;
        executions.is_ok_and(|e| e.first().is_some_and(|e| e.finished_at.is_some()))
    }

    /// One pass over tasks silent for `silent_for`; returns how many were
    /// asked about.
    pub async fn pass(&self, silent_for: chrono::Duration) -> usize {
        let before = self.clock.now() - silent_for;
        let tasks = match self.store.overdue_tasks(before, PER_PASS).await {
            Ok(tasks) => tasks,
            Err(e) => {
                tracing::warn!("could not read the tasks to ask remote agents about: {e}");
                return 0;
            }
        };
        let asked = tasks.len();
        for task in tasks {
            let id = task.execution_id;
            if let Err(e) = self.ask(task).await {
                tracing::warn!("asking about the task of execution {id}: {e}");
            }
        }
        asked
    }

    /// Asks the task's agent for it and takes the answer as a push.
    async fn ask(&self, task: TaskRecord) -> Result<(), AskError> {
        let Some(agent) = task.agent.clone() else {
            return Ok(());
        };
        let method = if agent.version == "0.3" {
            "tasks/get"
        } else {
            "GetTask"
        };
        let body = json!({
            "jsonrpc": "2.0",
            "id": task.execution_id.to_string(),
            "method": method,
            "params": {"id": task.task_id},
        });
        let http = |e: reqwest::Error| AskError::Http {
            url: redact::endpoint(&agent.url),
            cause: crate::agent::http_causes(&e),
        };
        let answer: Value = self
            .client
            .post(&agent.url)
            .header("A2A-Version", &agent.version)
            .json(&body)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(http)?
            .json()
            .await
            .map_err(http)?;
        let update = a2a::read_get_task(&answer)?;
        self.intake.take_update(task, update).await?;
        Ok(())
    }
}

/// The next task registered, or never when nothing registers.
async fn next_registered(registered: &mut Option<mpsc::UnboundedReceiver<Uuid>>) -> Option<Uuid> {
    match registered {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

/// Until `at`, or never.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
