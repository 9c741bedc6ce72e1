//! `nomos-continue serve`: the worker, the rescuer, the policy watchers and
//! the API in one process, until SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, ChatAgent, ChatConfig, WebhookAgent, WebhookConfig};
use crate::api::{self, AppState};
use crate::clock::{Clock, SystemClock};
use crate::metrics::Metrics;
use crate::policy::watch::{read_policy_file, FileWatcher};
use crate::policy::{DbPolicyWatcher, Limits, PolicyRuntime};
use crate::store::Store;
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
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
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
    println!(
        "nomos-continue listening on http://{bound} (worker {}, policy {})",
        config.worker.worker_id,
        policy.active_revision().short()
    );

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
    let rescuer = Rescuer::new(
        store.clone(),
        clock.clone(),
        metrics.clone(),
        config.rescue_interval,
    );
    tasks.spawn(rescuer.run(shutdown.clone()));
    if let Some(path) = &config.policy {
        tasks.spawn(
            FileWatcher::new(policy.clone(), path.clone(), config.policy_poll)
                .run(shutdown.clone()),
        );
    }
    tasks.spawn(
        DbPolicyWatcher::new(policy.clone(), store.clone(), config.policy_poll)
            .run(shutdown.clone()),
    );

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
    store.close().await;
    served.context("serve the API")
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
            let agent =
                ChatAgent::new(chat, Arc::new(store.clone())).context("configure chatWith")?;
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
