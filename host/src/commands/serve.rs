//! `nomos-continue serve`: the worker, the rescuer, the policy watchers and
//! the API in one process, until SIGINT or SIGTERM.
//!
//! The process registers its worker id in the database before its worker
//! starts and keeps the registration alive with a heartbeat (see
//! [`Store::register_worker`]): leases are named by worker id, so a second
//! process under the same id would take this one's leases for its own. It
//! refuses to start instead.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::agent::{Agent, ChatAgent, ChatConfig, StoreHistory, WebhookAgent, WebhookConfig};
use crate::api::{self, AppState};
use crate::clock::{Clock, OffsetClock, SystemClock};
use crate::deploy::{PolicyDeployment, WatchOutcome};
use crate::metrics::Metrics;
use crate::policy::watch::read_policy_file;
use crate::policy::{Limits, PolicyRuntime};
use crate::store::{Registration, Store};
use crate::worker::{spawn_pg_listener, Rescuer, Worker, WorkerConfig};

use super::log_agent::LogAgent;

/// The default database: an SQLite file in the working directory.
pub const DEFAULT_DATABASE_URL: &str = "sqlite:nomos-continue.db";
/// The default API address: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7300";
/// The model `chatWith` asks for when none is named: a common name that
/// OpenAI and most compatible servers (vLLM, llama.cpp aliases) accept;
/// local servers usually want `--openai-model` set to what they serve.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4o-mini";
/// How often a running process refreshes its worker registration.
pub const DEFAULT_WORKER_HEARTBEAT: Duration = Duration::from_secs(5);
/// Age of a registration's last heartbeat after which its process counts as
/// dead and a new process may take the worker id over: three heartbeats, so
/// one late or lost heartbeat (a slow database, a reconnect) does not free
/// the id of a live process.
pub const DEFAULT_WORKER_STALE_AFTER: Duration = Duration::from_secs(15);

/// Everything `serve` can be told.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub database_url: String,
    pub listen: SocketAddr,
    pub token: Option<String>,
    /// Where continuations are POSTed (the runtime's webhook).
    pub agent_webhook: Option<String>,
    /// The bearer token for the webhook.
    pub agent_token: Option<String>,
    /// An OpenAI-compatible chat endpoint for the built-in `chatWith`
    /// (history from the store); exclusive with `agent_webhook`.
    pub agent_openai: Option<String>,
    /// The `model` of every chat request.
    pub openai_model: String,
    /// Sent as the chat endpoint's bearer token.
    pub openai_key: Option<String>,
    /// A policy file, watched for changes; `None` is the built-in policy.
    pub policy: Option<PathBuf>,
    pub worker: WorkerConfig,
    pub limits: Limits,
    /// How often the policy file and the database's active revision are
    /// checked.
    pub policy_poll: Duration,
    pub rescue_interval: Duration,
    /// How often the worker registration's heartbeat is written.
    pub worker_heartbeat: Duration,
    /// How old a registration's heartbeat must be before another process
    /// may take its worker id over; also how long a restart under the id of
    /// a process killed without shutting down is refused. Several heartbeats.
    pub worker_stale_after: Duration,
    /// LISTEN for PostgreSQL wake-ups; `false` leaves the worker to its
    /// poll (and the API's in-process signal).
    pub wake_listener: bool,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            database_url: DEFAULT_DATABASE_URL.into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 7300)),
            token: None,
            agent_webhook: None,
            agent_token: None,
            agent_openai: None,
            openai_model: DEFAULT_OPENAI_MODEL.into(),
            openai_key: None,
            policy: None,
            worker: WorkerConfig::default(),
            limits: Limits::default(),
            policy_poll: Duration::from_secs(2),
            rescue_interval: Duration::from_secs(15),
            worker_heartbeat: DEFAULT_WORKER_HEARTBEAT,
            worker_stale_after: DEFAULT_WORKER_STALE_AFTER,
            wake_listener: true,
        }
    }
}

/// Runs `serve` on its own runtime until a signal arrives.
pub fn run(config: ServeConfig) -> Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("start the async runtime")?;
    runtime.block_on(async {
        let shutdown = CancellationToken::new();
        let signal = shutdown.clone();
        tokio::spawn(async move {
            wait_for_signal().await;
            tracing::info!("shutting down: no new claims; finishing deliveries in flight");
            signal.cancel();
        });
        serve(config, shutdown).await
    })
}

async fn wait_for_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
}

/// Builds everything from `config` and runs it until `shutdown`.
pub async fn serve(config: ServeConfig, shutdown: CancellationToken) -> Result<()> {
    let store = Store::connect(&config.database_url)
        .await
        .context("connect to the database")?;
    store.migrate().await.context("migrate the database")?;
    let policy = Arc::new(load_policy(&config)?);
    let agent = build_agent(&config, &store)?;
    // Windows are timed by the database's clock on every replica.
    let db_clock = Arc::new(OffsetClock::new(Arc::new(SystemClock)));
    let offset = db_clock
        .sync(store.database_now())
        .await
        .context("read the database's clock")?;
    tracing::info!(%offset, "timing windows by the database's clock");
    let clock: Arc<dyn Clock> = db_clock.clone();
    let metrics = Arc::new(Metrics::default());
    let worker = Worker::new(
        store.clone(),
        policy.clone(),
        agent,
        clock.clone(),
        config.worker.clone(),
        metrics.clone(),
    );

    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("listen on {}", config.listen))?;
    let bound = listener.local_addr().context("bound address")?;
    // Registered after the last start-up step that can fail, so a failed
    // start leaves no registration behind; before the worker starts.
    let instance = Uuid::new_v4();
    register(&store, &config, instance, clock.now()).await?;

    // The database decides which revision runs (see `deploy`). Both looks
    // happen once before anything is served, so the first decision is made
    // by the revision this replica converges on.
    let deployment = PolicyDeployment::new(policy.clone(), store.clone(), clock.clone());
    let mut file_watcher = config
        .policy
        .as_ref()
        .map(|path| deployment.watch_file(path.clone(), config.policy_poll));
    if let Some(watcher) = file_watcher.as_mut() {
        if let WatchOutcome::Failed(why) = watcher.run_once().await {
            tracing::warn!("policy file at start-up: {why}");
        }
    }
    let mut db_watcher = deployment.watch_database(config.policy_poll);
    if let WatchOutcome::Failed(why) = db_watcher.run_once().await {
        tracing::warn!("database policy at start-up: {why}");
    }

    println!(
        "nomos-continue listening on http://{bound} (worker {}, policy {})",
        config.worker.worker_id,
        policy.active_revision().short()
    );

    let heartbeat = tokio::spawn(keep_registered(
        store.clone(),
        clock.clone(),
        config.worker.worker_id.clone(),
        instance,
        config.worker_heartbeat,
        shutdown.clone(),
    ));
    let mut tasks = tokio::task::JoinSet::new();
    let listener_task = if config.wake_listener {
        spawn_pg_listener(&store, worker.waker(), shutdown.clone())
    } else {
        None
    };
    if let Some(handle) = listener_task {
        tasks.spawn(async move {
            let _ = handle.await;
        });
    }
    tasks.spawn(worker.clone().run(shutdown.clone()));
    tasks.spawn(resync_clock(db_clock, store.clone(), shutdown.clone()));
    let rescuer = Rescuer::new(
        store.clone(),
        clock.clone(),
        metrics.clone(),
        config.rescue_interval,
    );
    tasks.spawn(rescuer.run(shutdown.clone()));
    if let Some(watcher) = file_watcher {
        tasks.spawn(watcher.run(shutdown.clone()));
    }
    tasks.spawn(db_watcher.run(shutdown.clone()));

    let state = AppState {
        store: store.clone(),
        policy,
        clock,
        metrics,
        wake: worker.waker(),
        token: config.token.clone(),
    };
    let app = api::router(state);
    let api_shutdown = shutdown.clone();
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(async move { api_shutdown.cancelled().await })
        .await;
    shutdown.cancel();
    while tasks.join_next().await.is_some() {}
    let kept = heartbeat
        .await
        .context("the worker heartbeat task failed")
        .and_then(|kept| kept);
    let worker_id = &config.worker.worker_id;
    if let Err(e) = store.unregister_worker(worker_id, instance).await {
        tracing::warn!(worker = %worker_id, "could not unregister the worker id: {e}");
    }
    store.close().await;
    kept?;
    served.context("serve the API")
}

/// Claims the worker id for this process, or fails start-up naming the id
/// and when a dead holder's registration lapses.
async fn register(
    store: &Store,
    config: &ServeConfig,
    instance: Uuid,
    now: time::OffsetDateTime,
) -> Result<()> {
    let worker_id = &config.worker.worker_id;
    let stale_after = time::Duration::try_from(config.worker_stale_after)
        .context("the worker registration's staleness limit")?;
    let registration = store
        .register_worker(worker_id, instance, now, stale_after)
        .await
        .context("register the worker id")?;
    match registration {
        Registration::Registered => Ok(()),
        Registration::Duplicate { heartbeat_at } => {
            let lapses_in = (heartbeat_at + stale_after - now).max(time::Duration::ZERO);
            anyhow::bail!(
                "worker id {worker_id:?} is in use by another live process (its last \
                 heartbeat was {:.1} s ago); leases are named by worker id, so give each \
                 replica its own --worker-id. If that process is dead, its registration goes \
                 stale {:.0} s after its last heartbeat, in {:.1} s, and the id can be used again",
                (now - heartbeat_at).as_seconds_f64(),
                stale_after.as_seconds_f64(),
                lapses_in.as_seconds_f64(),
            )
        }
    }
}

/// Refreshes the worker registration every `every` until `shutdown`. A
/// failed write is retried at the next beat (the staleness limit spans
/// several). If another process took the id over (this one's heartbeats
/// stopped reaching the database for too long), two processes share the
/// id's leases: this one shuts down and says so.
async fn keep_registered(
    store: Store,
    clock: Arc<dyn Clock>,
    worker_id: String,
    instance: Uuid,
    every: Duration,
    shutdown: CancellationToken,
) -> Result<()> {
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tokio::time::sleep(every) => {}
        }
        match store
            .worker_heartbeat(&worker_id, instance, clock.now())
            .await
        {
            Ok(true) => {}
            Ok(false) => {
                shutdown.cancel();
                anyhow::bail!(
                    "worker id {worker_id:?} was taken over by another process after this \
                     one's heartbeats went stale; shutting down"
                );
            }
            Err(e) => tracing::warn!(worker = %worker_id, "worker heartbeat failed: {e}"),
        }
    }
}

/// How often the offset to the database's clock is measured again.
const CLOCK_RESYNC: Duration = Duration::from_secs(60);

/// Keeps the offset to the database's clock current (local clocks drift and
/// get stepped); a failed reading keeps the last offset.
async fn resync_clock(clock: Arc<OffsetClock>, store: Store, shutdown: CancellationToken) {
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(CLOCK_RESYNC) => {}
        }
        if let Err(e) = clock.sync(store.database_now()).await {
            tracing::warn!("reading the database's clock failed: {e}");
        }
    }
}

fn load_policy(config: &ServeConfig) -> Result<PolicyRuntime> {
    match &config.policy {
        None => PolicyRuntime::new(config.limits.clone()).context("load the built-in policy"),
        Some(path) => {
            let bytes = read_policy_file(path)?;
            PolicyRuntime::with_policy(config.limits.clone(), &bytes)
                .with_context(|| format!("load the policy {}", path.display()))
        }
    }
}

/// The webhook, `chatWith` over the store's history, or (neither set) the
/// agent that prints. Both set is refused rather than one silently winning.
fn build_agent(config: &ServeConfig, store: &Store) -> Result<Arc<dyn Agent>> {
    match (&config.agent_webhook, &config.agent_openai) {
        (Some(_), Some(_)) => {
            anyhow::bail!("--agent-webhook and --agent-openai exclude each other")
        }
        (Some(url), None) => {
            let mut webhook = WebhookConfig::new(url.clone());
            webhook.token = config.agent_token.clone();
            Ok(Arc::new(
                WebhookAgent::new(webhook).context("configure the agent webhook")?,
            ))
        }
        (None, Some(url)) => {
            let mut chat = ChatConfig::new(url.clone(), config.openai_model.clone());
            chat.api_key = config.openai_key.clone();
            // Stamped by the wall clock, as before; the database clock
            // comes with the one assembly.
            let history = Arc::new(StoreHistory::new(store.clone(), Arc::new(SystemClock)));
            let agent = ChatAgent::new(chat, history).context("configure chatWith")?;
            tracing::info!(
                endpoint = agent.endpoint(),
                "chatWith: history from the store"
            );
            Ok(Arc::new(agent))
        }
        (None, None) => {
            tracing::warn!("no agent configured: continuations are printed on stdout");
            Ok(Arc::new(LogAgent))
        }
    }
}
