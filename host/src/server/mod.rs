//! The one assembly of the system: the worker, the rescuer, the decision
//! log's retention, the policy watchers, the worker registration and the
//! API, wired over one store,
//! one policy runtime and one clock, until a shutdown token is cancelled.
//!
//! `nomos-continue serve` calls [`serve`]; the demo and the tests build a
//! [`Server`] and replace the parts they stage (the agent, the clock, the
//! policy runtime) before starting it, so every caller runs the same wiring.
//!
//! - `config`: [`ServeConfig`] and its defaults.
//! - `parts`: the policy, agent and clock a config names.
//! - `registration`: the worker id's registration and the upkeep tasks.
//! - `exposure`: which addresses may be served without a token or TLS.
//! - `http`: the API's router with its layers, served on the listener.
//! - `start`: [`Server::start`] (and in process, without the API), one
//!   step a function.
//! - `running`: [`Running`], the system while it runs, and its stop.
//! - `timed`: the agent with every call timed into the metrics.
//! - `tls`: TLS termination (rustls).
//! - `connections`: the cap on open connections, refused at accept past it.

mod config;
mod connections;
mod exposure;
mod http;
mod parts;
mod registration;
mod running;
mod start;
mod timed;
mod tls;

use std::sync::Arc;

use anyhow::{Context, Result};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, Operator};
use crate::clock::Clock;
use crate::metrics::Metrics;
use crate::policy::PolicyRuntime;
use crate::redact;
use crate::store::{Database, Store};
use crate::telemetry::Telemetry;

pub use connections::DEFAULT_MAX_CONNECTIONS;
#[cfg(feature = "test-support")]
pub use exposure::ExposureError;
pub use exposure::Insecure;
pub use http::serve_http;
pub use running::Running;
pub use tls::{TlsError, TlsFiles, TlsListener};

pub use config::{ServeConfig, DEFAULT_DATABASE_URL, DEFAULT_OPENAI_MODEL, MIN_LINK_RETENTION};
#[cfg(feature = "test-support")]
pub use config::{DEFAULT_WORKER_HEARTBEAT, DEFAULT_WORKER_STALE_AFTER};

/// Builds everything from `config`, serves the API on `listener` and runs
/// until `shutdown` is cancelled (or the worker id is taken over); then
/// finishes deliveries in flight, unregisters, closes the store and exports
/// the spans not yet sent (with `config.otlp_endpoint`). Prints
/// one line with the address once the first requests can be decided.
pub async fn serve(
    listener: TcpListener,
    config: ServeConfig,
    shutdown: CancellationToken,
) -> Result<()> {
    // Before the database is touched: a refused address migrates nothing.
    check_exposure(&listener, &config)?;
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    // Before the first span: the provider that makes it is the process's.
    let telemetry =
        Telemetry::install(config.otlp_endpoint.as_deref()).context("set up the span export")?;
    // Which database, for the start's log line: never its password.
    let databases = (config.database_urls.iter())
        .map(|url| redact::database_url(url))
        .collect::<Vec<_>>()
        .join(", ");
    let addr = listener.local_addr().context("bound address")?;
    let server = Server::connect(config).await?;
    let store = server.store().clone();
    let stopped = async {
        let running = server.start(listener, shutdown).await?;
        let policy = running.policy().active_revision().short().to_owned();
        println!(
            "nomos-continue listening on {scheme}://{} (worker {}, policy {policy})",
            addr,
            running.worker_id(),
        );
        tracing::info!(
            address = %format!("{scheme}://{addr}"),
            database = %databases,
            worker = running.worker_id(),
            %policy,
            version = env!("CARGO_PKG_VERSION"),
            "started"
        );
        running.wait().await
    }
    .await;
    match &stopped {
        Ok(()) => tracing::info!("stopped"),
        Err(e) => tracing::error!("stopped: {e:#}"),
    }
    store.close().await;
    telemetry.shutdown().await;
    stopped
}

/// Refuses to serve a non-loopback address without a token, or with one
/// over plain HTTP, unless the configuration overrides it (see `exposure`);
/// answers the override's warning, if one is in force.
fn check_exposure(listener: &TcpListener, config: &ServeConfig) -> Result<Option<&'static str>> {
    let addr = listener.local_addr().context("bound address")?;
    Ok(exposure::check(
        addr,
        config.auth().is_enforced(),
        config.tls.is_some(),
        config.insecure,
    )?)
}

/// The system before it starts: a store and a configuration, with every
/// other part either injected or (at [`Server::start`]) built from the
/// configuration as `serve` builds it.
pub struct Server {
    config: ServeConfig,
    store: Store,
    policy: Option<Arc<PolicyRuntime>>,
    agent: Option<Arc<dyn Agent>>,
    /// The operator's channel, if injected; else the configuration's.
    operator: Option<Arc<dyn Operator>>,
    clock: Option<Arc<dyn Clock>>,
    metrics: Arc<Metrics>,
    /// Whether the worker runs (the API tests leave it out).
    worker: bool,
    /// What the API notifies when work becomes ready; the worker's own
    /// unless set.
    wake: Option<Arc<Notify>>,
}

impl Server {
    /// Connects to `config.database_urls` and migrates it, or (with
    /// `config.migrate` off) checks that it is migrated.
    pub async fn connect(config: ServeConfig) -> Result<Self> {
        let urls: Vec<&str> = config.database_urls.iter().map(String::as_str).collect();
        if !config.migrate {
            // Checked as the read commands check, before anything opens
            // the database to write: a missing SQLite file is not created.
            Database::check_migrated_at(&urls)
                .await
                .context("--no-migrate: run `nomos-continue migrate` first")?;
        }
        let database = Database::connect_any(&urls)
            .await
            .context("connect to the database")?;
        if config.migrate {
            database.migrate().await.context("migrate the database")?;
        }
        Ok(Self::new(config, database))
    }

    /// Over a database the caller opened (and migrated);
    /// `config.database_urls` is not used.
    pub fn new(config: ServeConfig, database: Database) -> Self {
        Self {
            config,
            store: database.into_store(),
            policy: None,
            agent: None,
            operator: None,
            clock: None,
            metrics: Arc::new(Metrics::default()),
            worker: true,
            wake: None,
        }
    }

    /// Calls this agent instead of the adapter the configuration names.
    pub fn with_agent(mut self, agent: Arc<dyn Agent>) -> Self {
        self.agent = Some(agent);
        self
    }

    /// Tells this operator channel every notice instead of the webhook
    /// the configuration names (an embedding that pages people its own way).
    pub fn with_operator(mut self, operator: Arc<dyn Operator>) -> Self {
        self.operator = Some(operator);
        self
    }

    /// Acts on this clock instead of the database's (which is then neither
    /// read nor resynchronised).
    #[cfg_attr(feature = "test-support", visibility::make(pub))]
    pub(crate) fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    #[cfg(feature = "test-support")]
    /// Runs this policy runtime instead of loading the configured policy
    /// (tests share one compiled runtime; compiling is slow).
    #[cfg_attr(feature = "test-support", visibility::make(pub))]
    pub(crate) fn with_policy(mut self, policy: Arc<PolicyRuntime>) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Leaves the worker out: the API, the console and the upkeep run, but
    /// nothing plans or delivers. For tests of the API, whose set-ups a
    /// worker would act on (and whose wake-ups it would take).
    #[cfg_attr(feature = "test-support", visibility::make(pub))]
    #[cfg_attr(not(feature = "test-support"), allow(dead_code))]
    pub(crate) fn without_worker(mut self) -> Self {
        self.worker = false;
        self
    }

    /// The API notifies `wake` when work becomes ready (a worker the test
    /// runs itself, or a signal the test watches).
    #[cfg_attr(feature = "test-support", visibility::make(pub))]
    #[cfg_attr(not(feature = "test-support"), allow(dead_code))]
    pub(crate) fn with_waker(mut self, wake: Arc<Notify>) -> Self {
        self.wake = Some(wake);
        self
    }

    /// The store every part uses.
    #[cfg_attr(feature = "test-support", visibility::make(pub))]
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }
}
