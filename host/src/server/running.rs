//! The system while it runs, and how it stops.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::intake::Intake;
use crate::policy::PolicyRuntime;
use crate::store::Store;

/// The system while it runs; [`Running::wait`] is its end.
pub struct Running {
    pub(super) intake: Intake,
    pub(super) addr: Option<SocketAddr>,
    pub(super) worker_id: String,
    pub(super) instance: Uuid,
    pub(super) store: Store,
    pub(super) policy: Arc<PolicyRuntime>,
    pub(super) shutdown: CancellationToken,
    pub(super) api: Option<JoinHandle<std::io::Result<()>>>,
    pub(super) heartbeat: JoinHandle<Result<()>>,
    pub(super) tasks: JoinSet<()>,
}

impl Running {
    /// The engine's way in, in process: what the API's write routes call
    /// (link a tool result, report a status, approve, register a task,
    /// take a push), for a runtime that embeds the engine.
    pub fn intake(&self) -> &Intake {
        &self.intake
    }

    /// Where the API listens; `None` when started in process
    /// ([`super::Server::start_in_process`]).
    pub fn addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// Stops everything: cancels the shutdown token this was started with,
    /// then [`Running::wait`]s.
    pub async fn stop(self) -> Result<()> {
        self.shutdown.cancel();
        self.wait().await
    }

    /// The worker id this process registered.
    pub fn worker_id(&self) -> &str {
        &self.worker_id
    }

    /// The policy runtime (its active revision may change while it runs).
    #[cfg_attr(feature = "test-support", visibility::make(pub))]
    pub(crate) fn policy(&self) -> &Arc<PolicyRuntime> {
        &self.policy
    }

    /// Waits until the API stops (the shutdown token, or a failure; without
    /// an API, the shutdown token), then stops everything else, lets
    /// deliveries in flight finish and frees the worker id. The store stays
    /// open for the caller.
    pub async fn wait(mut self) -> Result<()> {
        let served = match self.api.take() {
            Some(api) => match api.await {
                Ok(served) => served.context("serve the API"),
                Err(e) => Err(anyhow::Error::new(e).context("the API task failed")),
            },
            None => {
                self.shutdown.cancelled().await;
                Ok(())
            }
        };
        self.shutdown.cancel();
        while self.tasks.join_next().await.is_some() {}
        let kept = self
            .heartbeat
            .await
            .context("the worker heartbeat task failed")
            .and_then(|kept| kept);
        let worker_id = &self.worker_id;
        if let Err(e) = self.store.unregister_worker(worker_id, self.instance).await {
            tracing::warn!(worker = %worker_id, "could not unregister the worker id: {e}");
        }
        kept?;
        served
    }
}
