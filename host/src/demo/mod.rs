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
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::agent::{WebhookAgent, WebhookConfig};
use crate::api::{self, AppState};
use crate::clock::{Clock, SystemClock};
use crate::metrics::Metrics;
use crate::policy::{Limits, PolicyRuntime};
use crate::store::{DeliveryKind, DeliveryState, Role, Store};
use crate::worker::{Rescuer, Worker, WorkerConfig};

use agent::{ScriptedAgent, PLAN};
use client::ApiClient;
use executor::Executor;
pub use timeline::{Actor, Event, Timeline};

/// The demo gives up if the goal is not reached in this time.
const DEADLINE: Duration = Duration::from_secs(45);

/// What the demo counted from the ledger at the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoSummary {
    pub plan_steps: usize,
    pub fixes: u32,
    pub executions: usize,
    pub continuations: usize,
    pub operator_messages_after_approval: usize,
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
pub async fn replay(timeline: Arc<Timeline>) -> Result<DemoSummary> {
    let dir = tempfile::tempdir().context("create a temporary directory")?;
    let url = format!("sqlite:{}", dir.path().join("demo.db").display());
    let store = Store::connect(&url)
        .await
        .context("open the demo database")?;
    store.migrate().await.context("migrate the demo database")?;
    let shutdown = CancellationToken::new();
    let result = run_scenario(&store, timeline, &shutdown).await;
    shutdown.cancel();
    store.close().await;
    result
}

async fn run_scenario(
    store: &Store,
    timeline: Arc<Timeline>,
    shutdown: &CancellationToken,
) -> Result<DemoSummary> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let metrics = Arc::new(Metrics::default());
    let policy =
        Arc::new(PolicyRuntime::new(Limits::default()).context("load the built-in policy")?);
    let token = format!("demo-{}", Uuid::new_v4().simple());
    let session = Uuid::new_v4();
    let mut tasks = tokio::task::JoinSet::new();

    // The runtime's webhook, where the scripted agent lives.
    let hook_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("bind the agent webhook")?;
    let hook_addr = hook_listener.local_addr()?;
    // nomos-continue's API.
    let api_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("bind the API")?;
    let api_addr = api_listener.local_addr()?;
    let api_client = ApiClient::new(format!("http://{api_addr}"), token.clone());

    let executor = Arc::new(Executor::new(api_client.clone(), timeline.clone()));
    let agent = Arc::new(ScriptedAgent::new(
        session,
        api_client.clone(),
        executor.clone(),
        store.clone(),
        timeline.clone(),
    ));
    let hook_shutdown = shutdown.clone();
    let hook_app = agent.clone().router();
    tasks.spawn(async move {
        let _ = axum::serve(hook_listener, hook_app)
            .with_graceful_shutdown(async move { hook_shutdown.cancelled().await })
            .await;
    });

    let webhook = WebhookAgent::new(WebhookConfig::new(format!(
        "http://{hook_addr}/hooks/nomos"
    )))
    .context("configure the webhook")?;
    let config = WorkerConfig {
        poll_interval: Duration::from_millis(250),
        ..WorkerConfig::default()
    };
    let worker = Worker::new(
        store.clone(),
        policy.clone(),
        Arc::new(webhook),
        clock.clone(),
        config,
        metrics.clone(),
    );
    tasks.spawn(worker.clone().run(shutdown.clone()));
    tasks.spawn(
        Rescuer::new(
            store.clone(),
            clock.clone(),
            metrics.clone(),
            Duration::from_secs(5),
        )
        .run(shutdown.clone()),
    );
    let state = AppState {
        store: store.clone(),
        policy,
        clock: clock.clone(),
        metrics,
        wake: worker.waker(),
        token: Some(token),
    };
    let api_shutdown = shutdown.clone();
    tasks.spawn(async move {
        let _ = axum::serve(api_listener, api::router(state))
            .with_graceful_shutdown(async move { api_shutdown.cancelled().await })
            .await;
    });
    timeline.record(Actor::System, format!("API on http://{api_addr}, agent webhook on http://{hook_addr}, SQLite store, built-in policy"));

    let request = "Provision a web server: a container web-01 with nginx serving on 10.0.0.7.";
    store
        .append_turn(session, Role::User, request, clock.now())
        .await?;
    timeline.record(Actor::Operator, request);
    timeline.record(
        Actor::Agent,
        format!("Proposed plan: {}.", PLAN.join(" → ")),
    );
    api_client.approve(session, "button").await?;
    timeline.record(
        Actor::Operator,
        "approved the plan (button); nomos-continue opened a 30-minute assent window",
    );
    agent.begin().await?;

    let reached = tokio::time::timeout(DEADLINE, agent.finished.notified())
        .await
        .is_ok();
    executor.finish().await;
    // Let the last continuation's delivery be marked before counting.
    wait_until_settled(store, session).await?;
    shutdown.cancel();
    while tasks.join_next().await.is_some() {}
    if !reached {
        bail!("the goal was not reached within {DEADLINE:?}");
    }
    let summary = summarize(store, session, &timeline, agent.fixes()).await?;
    print_summary(&summary);
    Ok(summary)
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

/// Counts everything from the store: links, the ledger, the chat turns.
async fn summarize(
    store: &Store,
    session: Uuid,
    timeline: &Timeline,
    fixes: u32,
) -> Result<DemoSummary> {
    let summary = store.session_summary(session).await?;
    let window = summary.window.context("the session has no window")?;
    let continuations = summary
        .deliveries
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
        executions: summary.links.len(),
        continuations,
        operator_messages_after_approval,
        events: timeline.events().len(),
    })
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
