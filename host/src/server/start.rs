//! [`Server::start`] and [`Server::start_in_process`], one step a
//! function: build the parts not injected, register the worker id,
//! converge on the policy revision, start the loops, serve the API.

use std::sync::Arc;

use anyhow::{Context, Result};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::rustls::ServerConfig as TlsConfig;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::{check_exposure, http, parts, registration, timed, Running, ServeConfig, Server};
use crate::agent::{Agent, Operator};
use crate::api::{AppState, BodyCaps, PushLimiter};
use crate::clock::Clock;
use crate::deploy::{DbPolicyWatcher, FileWatcher, Look, PolicyDeployment, WatchOutcome};
use crate::intake::Intake;
use crate::maintenance::{self, Rescuer, StuckWatch, TaskPoller};
use crate::metrics::Metrics;
use crate::policy::PolicyRuntime;
use crate::store::Store;
use crate::worker::{spawn_pg_listener, Notifier, Worker};

/// What every loop of one process shares.
struct Shared {
    store: Store,
    clock: Arc<dyn Clock>,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
}

/// The policy watchers, each looked at once before anything is served.
struct Watchers {
    file: Option<FileWatcher>,
    database: DbPolicyWatcher,
}

impl Server {
    /// Builds the parts not injected, registers the worker id, converges on
    /// the policy revision the database names, starts every task and serves
    /// the API on `listener`. Fails (with nothing left registered or
    /// running) if a part cannot be built or another live process holds the
    /// worker id.
    pub async fn start(
        self,
        listener: TcpListener,
        shutdown: CancellationToken,
    ) -> Result<Running> {
        if let Some(warning) = check_exposure(&listener, &self.config)? {
            tracing::warn!("{warning}");
        }
        self.start_with(Some(listener), shutdown).await
    }

    /// As [`Server::start`], with no HTTP API: for a runtime that embeds
    /// the engine and calls it through [`Running::intake`] only. A2A push
    /// URLs it mints start with `config.public_url` (nothing here receives
    /// them: an agent's task is then followed by the poller alone).
    pub async fn start_in_process(self, shutdown: CancellationToken) -> Result<Running> {
        self.start_with(None, shutdown).await
    }

    async fn start_with(
        self,
        listener: Option<TcpListener>,
        shutdown: CancellationToken,
    ) -> Result<Running> {
        let Server {
            config,
            store,
            policy,
            agent,
            operator,
            clock,
            metrics,
            worker: with_worker,
            wake,
        } = self;
        let tls = match (&config.tls, &listener) {
            (Some(files), Some(_)) => Some(files.load()?),
            _ => None,
        };
        let mut tasks = JoinSet::new();
        // Before anything else runs on the store: every part follows the
        // primary through a failover (a no-op for one server).
        let (following, follow_stop) = (store.clone(), shutdown.clone());
        tasks.spawn(async move { following.follow_primary(follow_stop).await });
        maintenance::warn_if_unvacuumed(&store).await;
        let verify_keys = parts::load_verify_keys(&config)?;
        let policy = match policy {
            Some(policy) => policy,
            None => Arc::new(parts::load_policy(&config, verify_keys.as_ref()).await?),
        };
        let clock = start_clock(clock, &store, &mut tasks, &shutdown).await?;
        let shared = Shared {
            store,
            clock,
            metrics,
            shutdown,
        };
        let (agent, operator) = adapters(agent, operator, &config, &shared)?;

        // Registered after the last start-up step that can fail, so a failed
        // start leaves no registration behind; before the worker starts.
        let worker_id = config.worker.worker_id.clone();
        let instance = Uuid::new_v4();
        // (On failure, dropping `tasks` stops the clock's resync.)
        let (store, clock) = (&shared.store, &shared.clock);
        let stale_after = config.worker_stale_after;
        registration::register(store, &worker_id, instance, clock.now(), stale_after).await?;

        // The database decides which revision runs (see `deploy`).
        let deployment =
            PolicyDeployment::new(policy.clone(), store.clone(), clock.clone(), verify_keys);
        let worker = build_worker(&shared, &config, &policy, agent, &deployment);
        let watchers = converge(&deployment, &config).await;
        let heartbeat = spawn_heartbeat(&shared, &config, &worker_id, instance);
        let wake = wake.unwrap_or_else(|| worker.waker());
        if with_worker {
            spawn_worker(&mut tasks, &shared, &config, worker, operator, &worker_id);
        }
        spawn_upkeep(&mut tasks, &shared, &config, watchers);

        let requests = store.for_requests(http::REQUEST_ACQUIRE);
        let addr = match &listener {
            Some(listener) => Some(listener.local_addr().context("bound address")?),
            None => None,
        };
        let public_url = http::public_url(&config, addr, tls.is_some());
        let (asks, registered) = tokio::sync::mpsc::unbounded_channel();
        let intake = Intake::new(
            requests.clone(),
            policy.clone(),
            deployment.classes(),
            clock.clone(),
            wake,
            public_url,
        )
        .asking_soon(asks);
        if with_worker {
            spawn_task_poller(&mut tasks, &shared, &config, &intake, registered);
        }
        let state = app_state(&intake, requests, &policy, deployment, &config, &shared);
        let api = match listener {
            Some(listener) => Some(serve_api(listener, tls, state, &config, &shared).await?),
            None => None,
        };
        Ok(Running {
            intake,
            addr,
            worker_id,
            instance,
            store: shared.store,
            policy,
            shutdown: shared.shutdown,
            api,
            heartbeat,
            tasks,
        })
    }
}

/// The injected clock, or the database's, kept in step with it by a task
/// of its own.
async fn start_clock(
    clock: Option<Arc<dyn Clock>>,
    store: &Store,
    tasks: &mut JoinSet<()>,
    shutdown: &CancellationToken,
) -> Result<Arc<dyn Clock>> {
    if let Some(clock) = clock {
        return Ok(clock);
    }
    let synced = parts::database_clock(store).await?;
    let resync = registration::resync_clock(synced.clone(), store.clone(), shutdown.clone());
    tasks.spawn(resync);
    Ok(synced)
}

/// The agent every call goes to, and the operator's channel (if any).
type Adapters = (Arc<dyn Agent>, Option<Arc<dyn Operator>>);

/// The agent and the operator's channel: the injected ones, or those the
/// configuration names; every agent call timed into the metrics.
fn adapters(
    agent: Option<Arc<dyn Agent>>,
    operator: Option<Arc<dyn Operator>>,
    config: &ServeConfig,
    shared: &Shared,
) -> Result<Adapters> {
    let agent = match agent {
        Some(agent) => agent,
        None => parts::build_agent(config, &shared.store, shared.clock.clone())?,
    };
    let agent = timed::TimedAgent::wrap(agent, shared.metrics.clone());
    let operator = match operator {
        Some(operator) => Some(operator),
        None => parts::build_operator(config, shared.clock.clone())?,
    };
    Ok((agent, operator))
}

/// The A2A poller: a push lost while this replica was down is asked for,
/// as is one overdue, and a task this replica registers soon after. Only
/// where a worker runs, as the other loops that write.
fn spawn_task_poller(
    tasks: &mut JoinSet<()>,
    shared: &Shared,
    config: &ServeConfig,
    intake: &Intake,
    registered: tokio::sync::mpsc::UnboundedReceiver<Uuid>,
) {
    let (store, clock) = (shared.store.clone(), shared.clock.clone());
    let poller = TaskPoller::new(intake.clone(), store, clock, config.task_poll_after)
        .asking_soon(registered);
    tasks.spawn(poller.run(shared.shutdown.clone()));
}

/// The worker over the deployment's copy of the status classes, so that
/// an answer kept by the deployment, the worker or the API serves all.
fn build_worker(
    shared: &Shared,
    config: &ServeConfig,
    policy: &Arc<PolicyRuntime>,
    agent: Arc<dyn Agent>,
    deployment: &PolicyDeployment,
) -> Worker {
    Worker::builder(shared.store.clone(), policy.clone(), agent)
        .clock(shared.clock.clone())
        .config(config.worker.clone())
        .metrics(shared.metrics.clone())
        .classes(deployment.classes())
        .build()
}

/// Keeps the built-in policy for replay and looks once at the policy file
/// and the database's active revision, so the first decision is made by
/// the revision this replica converges on.
async fn converge(deployment: &PolicyDeployment, config: &ServeConfig) -> Watchers {
    if let Err(e) = deployment.keep_builtin().await {
        tracing::warn!("could not keep the built-in policy for replay: {e}");
    }
    let mut file = (config.policy.as_ref())
        .map(|path| deployment.watch_file(path.clone(), config.policy_poll));
    if let Some(watcher) = file.as_mut() {
        if let WatchOutcome::Failed(why) = watcher.run_once().await {
            tracing::warn!("policy file at start-up: {why}");
        }
    }
    let mut database = deployment.watch_database(config.policy_poll);
    if let WatchOutcome::Failed(why) = database.run_once().await {
        tracing::warn!("database policy at start-up: {why}");
    }
    Watchers { file, database }
}

/// The worker and the loops that act beside it: its PostgreSQL wake-ups,
/// the operator's channel and the stuck watch.
fn spawn_worker(
    tasks: &mut JoinSet<()>,
    shared: &Shared,
    config: &ServeConfig,
    worker: Worker,
    operator: Option<Arc<dyn Operator>>,
    worker_id: &str,
) {
    let shutdown = &shared.shutdown;
    if config.wake_listener {
        if let Some(listening) = spawn_pg_listener(&shared.store, worker.waker(), shutdown.clone())
        {
            tasks.spawn(async move {
                let _ = listening.await;
            });
        }
    }
    tasks.spawn(worker.run(shutdown.clone()));
    let notifier = Notifier::new(
        shared.store.clone(),
        operator,
        shared.clock.clone(),
        shared.metrics.clone(),
        config.notify_settings.clone(),
        worker_id.to_owned(),
    );
    tasks.spawn(notifier.run(shutdown.clone()));
    let stuck = StuckWatch::new(
        shared.store.clone(),
        shared.clock.clone(),
        config.stuck_after,
        config.rescue_interval,
    );
    tasks.spawn(stuck.run(shutdown.clone()));
}

/// What every replica runs, worker or not: the rescuer, the retention and
/// the policy watchers.
fn spawn_upkeep(
    tasks: &mut JoinSet<()>,
    shared: &Shared,
    config: &ServeConfig,
    watchers: Watchers,
) {
    let (store, clock, metrics) = (&shared.store, &shared.clock, &shared.metrics);
    let every = config.rescue_interval;
    let rescuer = Rescuer::new(store.clone(), clock.clone(), metrics.clone(), every);
    tasks.spawn(rescuer.run(shared.shutdown.clone()));
    let retention = config.retention(store.clone(), clock.clone(), metrics.clone());
    tasks.spawn(retention.run(every, shared.shutdown.clone()));
    if let Some(watcher) = watchers.file {
        tasks.spawn(watcher.run(shared.shutdown.clone()));
    }
    tasks.spawn(watchers.database.run(shared.shutdown.clone()));
}

/// Keeps the worker id's registration fresh until the shutdown.
fn spawn_heartbeat(
    shared: &Shared,
    config: &ServeConfig,
    worker_id: &str,
    instance: Uuid,
) -> JoinHandle<Result<()>> {
    tokio::spawn(registration::keep_registered(
        shared.store.clone(),
        shared.clock.clone(),
        worker_id.to_owned(),
        instance,
        config.worker_heartbeat,
        shared.shutdown.clone(),
    ))
}

/// What every request handler shares: the intake, the request pool
/// (`requests`, quick to give up) beside the worker's, and the tokens.
fn app_state(
    intake: &Intake,
    requests: Store,
    policy: &Arc<PolicyRuntime>,
    deployment: PolicyDeployment,
    config: &ServeConfig,
    shared: &Shared,
) -> AppState {
    AppState {
        intake: intake.clone(),
        store: requests,
        worker_store: shared.store.clone(),
        policy: policy.clone(),
        clock: shared.clock.clone(),
        metrics: shared.metrics.clone(),
        auth: config.auth(),
        caps: BodyCaps::for_limits(policy.limits()),
        deployment,
        stuck_after: config.stuck_after,
        push_limiter: Arc::new(PushLimiter::new(config.push_limits)),
    }
}

/// The API and the console on `listener`, until the shutdown.
async fn serve_api(
    listener: TcpListener,
    tls: Option<Arc<TlsConfig>>,
    state: AppState,
    config: &ServeConfig,
    shared: &Shared,
) -> Result<JoinHandle<std::io::Result<()>>> {
    let app = http::app(state, config.access_log);
    let (cap, metrics) = (config.max_connections, shared.metrics.clone());
    http::spawn(listener, tls, cap, metrics, app, shared.shutdown.clone()).await
}
