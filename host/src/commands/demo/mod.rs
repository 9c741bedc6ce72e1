//! `nomos-continue demo`: the seed's situation replayed with the real host,
//! the real policy guest, the real store and worker, on an SQLite file that
//! is deleted afterwards.
//!
//! An operator asks for a web server and approves the plan once. A
//! scripted agent (standing in for the LLM, behind the runtime's webhook)
//! starts each provisioning step as an asynchronous execution run by a
//! simulated executor; the package install fails the first time (SSH
//! refused). nomos-continue re-invokes the agent after every step, the agent
//! diagnoses the failure, fixes it, retries and verifies the goal, and the
//! operator never types "continue". The summary is counted from the ledger.
//!
//! - `timeline`: the printed events.
//! - `executor`: the simulated asynchronous executor.
//! - `client`: the runtime's calls to the API.
//! - `agent`: the scripted agent behind the webhook.

mod agent;
mod client;
mod executor;
mod timeline;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::clock::{Clock, SystemClock};
use crate::server::{serve_http, ServeConfig, Server};
use crate::store::{DeliveryKind, DeliveryState, Role, Store};
use crate::worker::WorkerConfig;

use agent::{ScriptedAgent, PLAN};
use client::ApiClient;
use executor::Executor;
pub use timeline::{Actor, Event, Timeline};

/// The demo gives up if the goal is not reached in this time.
const DEADLINE: Duration = Duration::from_secs(45);

/// What the demo counted from the ledger at the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoSummary {
    /// Steps of the plan the operator approved.
    pub plan_steps: usize,
    /// Failures the agent diagnosed and fixed.
    pub fixes: u32,
    /// Executions linked to the session.
    pub executions: usize,
    /// Continuations delivered to the agent.
    pub continuations: usize,
    /// Messages the operator had to type after approving (the point: 0).
    pub operator_messages_after_approval: usize,
    /// Lines of the printed timeline.
    pub events: usize,
}

/// Runs the demo and prints its timeline and summary.
pub fn run() -> Result<DemoSummary> {
    let runtime = tokio::runtime::Runtime::new().context("start the async runtime")?;
    let summary = runtime.block_on(replay(Arc::new(Timeline::new(false))))?;
    runtime.shutdown_timeout(Duration::from_secs(5));
    Ok(summary)
}

/// The replay itself, with the timeline it prints to; tests call this.
///
/// The system is the one `serve` runs ([`Server`]), configured as an
/// operator would (the runtime's webhook, a token, a quick poll), on the
/// system clock the scripted runtime also writes its turns with: the count
/// of operator messages after approval compares the two.
pub async fn replay(timeline: Arc<Timeline>) -> Result<DemoSummary> {
    let dir = tempfile::tempdir().context("create a temporary directory")?;
    // The runtime's webhook, where the scripted agent lives.
    let hook_listener = bind("the agent webhook").await?;
    let hook_addr = hook_listener.local_addr()?;
    // nomos-continue's API.
    let api_listener = bind("the API").await?;
    let api_addr = api_listener.local_addr()?;
    let token = format!("demo-{}", Uuid::new_v4().simple());
    let config = ServeConfig {
        database_urls: vec![format!("sqlite:{}", dir.path().join("demo.db").display())],
        token: Some(token.clone()),
        agent_webhook: Some(format!("http://{hook_addr}/hooks/nomos")),
        worker: WorkerConfig {
            poll_interval: Duration::from_millis(250),
            ..WorkerConfig::default()
        },
        rescue_interval: Duration::from_secs(5),
        ..ServeConfig::default()
    };
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let server = Server::connect(config)
        .await
        .context("open the demo database")?
        .with_clock(clock.clone());
    let store = server.store().clone();
    let stage = Stage {
        store: store.clone(),
        clock,
        timeline,
        api: ApiClient::new(format!("http://{api_addr}"), token),
        session: Uuid::new_v4(),
    };
    let shutdown = CancellationToken::new();
    let result = async {
        let running = server.start(api_listener, shutdown.clone()).await?;
        stage.timeline.record(Actor::System, format!("API on http://{api_addr}, agent webhook on http://{hook_addr}, SQLite store, built-in policy"));
        let played = stage.play(hook_listener, &shutdown).await;
        shutdown.cancel();
        let stopped = running.wait().await;
        let fixes = played?;
        stopped?;
        let summary = stage.summarize(fixes).await?;
        print_summary(&summary);
        Ok::<_, anyhow::Error>(summary)
    }
    .await;
    shutdown.cancel();
    store.close().await;
    result
}

async fn bind(what: &str) -> Result<TcpListener> {
    TcpListener::bind("127.0.0.1:0")
        .await
        .with_context(|| format!("bind {what}"))
}

/// What the scenario plays on: the system's store and clock, the runtime's
/// client of its API, and the operator's session.
struct Stage {
    store: Store,
    clock: Arc<dyn Clock>,
    timeline: Arc<Timeline>,
    api: ApiClient,
    session: Uuid,
}

impl Stage {
    /// The operator's request and approval, then the scripted runtime until
    /// the goal is verified and every delivery settled. Returns the fixes
    /// the agent found.
    async fn play(&self, hook_listener: TcpListener, shutdown: &CancellationToken) -> Result<u32> {
        let executor = Arc::new(Executor::new(self.api.clone(), self.timeline.clone()));
        let agent = Arc::new(ScriptedAgent::new(
            self.session,
            self.api.clone(),
            executor.clone(),
            self.store.clone(),
            self.clock.clone(),
            self.timeline.clone(),
        ));
        let hook = tokio::spawn(serve_http(
            hook_listener,
            agent.clone().router(),
            shutdown.clone(),
        ));

        let request = "Provision a web server: a container web-01 with nginx serving on 10.0.0.7.";
        self.store
            .append_turn(self.session, Role::User, request, self.clock.now())
            .await?;
        self.timeline.record(Actor::Operator, request);
        self.timeline.record(
            Actor::Agent,
            format!("Proposed plan: {}.", PLAN.join(" → ")),
        );
        self.api.approve(self.session, "button").await?;
        self.timeline.record(
            Actor::Operator,
            "approved the plan (button); nomos-continue opened a 30-minute assent window",
        );
        agent.begin().await?;

        let reached = tokio::time::timeout(DEADLINE, agent.finished.notified())
            .await
            .is_ok();
        executor.finish().await;
        // Let the last continuation's delivery be marked before counting.
        wait_until_settled(&self.store, self.session).await?;
        shutdown.cancel();
        let _ = hook.await;
        if !reached {
            bail!("the goal was not reached within {DEADLINE:?}");
        }
        Ok(agent.fixes())
    }

    /// Counts everything from the store: links, the ledger, the chat turns.
    async fn summarize(&self, fixes: u32) -> Result<DemoSummary> {
        let (store, session) = (&self.store, self.session);
        let window = store
            .window(session)
            .await?
            .context("the session has no window")?;
        let counts = store.session_counts(session).await?;
        let continuations = store
            .deliveries_for_session(session)
            .await?
            .iter()
            .filter(|d| d.kind == DeliveryKind::Continuation && d.state == DeliveryState::Delivered)
            .count();
        let operator_messages_after_approval = store
            .turns(session)
            .await?
            .iter()
            .filter(|t| t.role == Role::User && t.created_at >= window.opened_at)
            .count();
        Ok(DemoSummary {
            plan_steps: PLAN.len(),
            fixes,
            executions: usize::try_from(counts.links)?,
            continuations,
            operator_messages_after_approval,
            events: self.timeline.events().len(),
        })
    }
}

/// Waits (bounded) until no delivery of the session is pending.
async fn wait_until_settled(store: &Store, session: Uuid) -> Result<()> {
    for _ in 0..200 {
        let deliveries = store.deliveries_for_session(session).await?;
        if deliveries.iter().all(|d| d.state != DeliveryState::Pending) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    bail!("deliveries of session {session} still pending")
}

fn print_summary(s: &DemoSummary) {
    println!();
    println!("summary (counted from the store)");
    println!(
        "  plan steps:                        {} (+{} fix found by the agent)",
        s.plan_steps, s.fixes
    );
    println!("  asynchronous executions:           {}", s.executions);
    println!("  automatic continuations:           {}", s.continuations);
    println!(
        "operator messages after approval: {}",
        s.operator_messages_after_approval
    );
}
