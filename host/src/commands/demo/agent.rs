//! The scripted agent: it stands in for the LLM behind the runtime's
//! webhook. It reads each note nomos-continue sends, diagnoses a failure,
//! fixes it, and takes the next step, ending its turn after each tool call,
//! exactly as the SOUL text asks. It never waits for the operator.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use tokio::sync::Notify;
use uuid::Uuid;

use super::client::ApiClient;
use super::executor::Executor;
use super::timeline::{Actor, Timeline};
use crate::agent::WebhookEvent;
use crate::clock::Clock;
use crate::store::{Role, Store};

/// The plan the operator approved, in order.
pub const PLAN: [&str; 4] = [
    "pct_create web-01",
    "apt-get install nginx",
    "configure nginx site",
    "verify http://10.0.0.7/",
];
const FIX_SSH: &str = "pct exec 101 -- systemctl enable --now ssh";

/// The agent's memory of its work.
#[derive(Default)]
struct Progress {
    /// The step each execution it started belongs to.
    steps: HashMap<Uuid, String>,
    /// Idempotency keys already handled: a redelivery is acknowledged, not
    /// acted on twice.
    seen: HashSet<String>,
    fixes: u32,
    done: bool,
}

/// The agent, reachable as a webhook.
pub struct ScriptedAgent {
    session: Uuid,
    api: ApiClient,
    executor: Arc<Executor>,
    store: Store,
    /// The system's clock, so the agent's turns and the window it is
    /// continued in are timed alike.
    clock: Arc<dyn Clock>,
    timeline: Arc<Timeline>,
    progress: Mutex<Progress>,
    /// Signalled when the goal is verified.
    pub finished: Notify,
}

impl ScriptedAgent {
    pub fn new(
        session: Uuid,
        api: ApiClient,
        executor: Arc<Executor>,
        store: Store,
        clock: Arc<dyn Clock>,
        timeline: Arc<Timeline>,
    ) -> Self {
        Self {
            session,
            api,
            executor,
            store,
            clock,
            timeline,
            progress: Mutex::new(Progress::default()),
            finished: Notify::new(),
        }
    }

    /// The webhook routes.
    pub fn router(self: Arc<Self>) -> Router {
        Router::new()
            .route("/hooks/nomos", post(webhook))
            .with_state(self)
    }

    /// Fixes made after diagnosing a failure.
    pub fn fixes(&self) -> u32 {
        self.lock().fixes
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The agent's first turn, right after the operator's approval.
    pub async fn begin(&self) -> anyhow::Result<()> {
        self.say(
            "Plan approved. Step 1: creating the container; I will be re-invoked when it finishes.",
        )
        .await?;
        self.run_step(PLAN[0]).await
    }

    async fn say(&self, text: &str) -> anyhow::Result<()> {
        self.timeline.record(Actor::Agent, text);
        self.store
            .append_turn(self.session, Role::Assistant, text, self.clock.now())
            .await?;
        Ok(())
    }

    /// Calls the tool and hands its result to nomos-continue to link.
    async fn run_step(&self, step: &str) -> anyhow::Result<()> {
        let (id, tool_result) = self.executor.start(step);
        self.lock().steps.insert(id, step.to_string());
        let linked = self.api.tool_result(self.session, &tool_result).await?;
        self.timeline.record(
            Actor::System,
            format!(
                "linked execution {} to the session; the agent's turn ends",
                linked.join(", ")
            ),
        );
        Ok(())
    }

    /// One re-invocation: decide the next move from each finished execution.
    async fn handle(&self, event: &WebhookEvent) -> anyhow::Result<()> {
        let key = event.idempotency_key().to_string();
        if !self.lock().seen.insert(key.clone()) {
            self.timeline
                .record(Actor::Agent, format!("redelivery of {key} ignored"));
            return Ok(());
        }
        let continuation = match event {
            WebhookEvent::Notice(notice) => {
                self.timeline
                    .record(Actor::System, format!("notice: {}", notice.data.notice));
                return Ok(());
            }
            WebhookEvent::Continuation(continuation) => &continuation.data,
        };
        let headline = continuation.note.lines().next().unwrap_or_default();
        self.timeline
            .record(Actor::System, format!("re-invoked the agent: {headline}"));
        for execution in &continuation.executions {
            let step = self
                .lock()
                .steps
                .get(&execution.id)
                .cloned()
                .unwrap_or_default();
            self.next_move(&step, &execution.outcome, &execution.result)
                .await?;
        }
        Ok(())
    }

    async fn next_move(&self, step: &str, outcome: &str, result: &str) -> anyhow::Result<()> {
        if outcome != "completed" {
            if step == PLAN[1] && result.contains("Connection refused") {
                self.lock().fixes += 1;
                self.say("The install failed: SSH to 10.0.0.7 was refused, so sshd in the new container is not running yet. Fix: enable and start ssh in CT 101, then retry the install.").await?;
                return self.run_step(FIX_SSH).await;
            }
            return self.say(&format!("{step} {outcome} and I have no fix for it: this is a genuine blocker for the operator.")).await;
        }
        if step == FIX_SSH {
            self.say("sshd is running in CT 101. Retrying step 2: installing nginx.")
                .await?;
            return self.run_step(PLAN[1]).await;
        }
        let Some(index) = PLAN.iter().position(|s| *s == step) else {
            return Ok(());
        };
        match PLAN.get(index + 1) {
            Some(next) => {
                self.say(&format!("{step} completed. Step {}: {next}.", index + 2))
                    .await?;
                self.run_step(next).await
            }
            None => {
                self.say("Verified: http://10.0.0.7/ answers 200 from nginx. The goal is reached; nothing left to do.").await?;
                self.lock().done = true;
                self.finished.notify_one();
                Ok(())
            }
        }
    }
}

async fn webhook(
    State(agent): State<Arc<ScriptedAgent>>,
    Json(event): Json<WebhookEvent>,
) -> StatusCode {
    match agent.handle(&event).await {
        Ok(()) => StatusCode::OK,
        Err(e) => {
            agent
                .timeline
                .record(Actor::Agent, format!("could not act on the note: {e:#}"));
            StatusCode::SERVICE_UNAVAILABLE
        }
    }
}
