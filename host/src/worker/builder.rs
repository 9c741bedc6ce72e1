//! How a [`Worker`] is put together: three parts it cannot run without,
//! and the rest with defaults the assembly (`server`) or a test replaces.
//!
//! Why a builder: the worker has seven parts, and positional arguments of
//! which four are `Arc`s read the same at every call site.

use std::sync::Arc;

use tokio::sync::Notify;

use super::context::Context;
use super::deliver::Deliverer;
use super::plan::Planner;
use super::{Worker, WorkerConfig};
use crate::agent::Agent;
use crate::classes::StatusClasses;
use crate::clock::{Clock, SystemClock};
use crate::metrics::Metrics;
use crate::policy::{PolicyHandle, PolicyRuntime};
use crate::store::{Episode, Store};

/// A [`Worker`] being put together; [`WorkerBuilder::build`] ends it.
#[must_use = "a builder does nothing until `build`"]
pub struct WorkerBuilder {
    store: Store,
    policy: Arc<PolicyRuntime>,
    agent: Arc<dyn Agent>,
    clock: Arc<dyn Clock>,
    config: WorkerConfig,
    metrics: Arc<Metrics>,
    classes: Option<StatusClasses>,
}

impl WorkerBuilder {
    pub(super) fn new(store: Store, policy: Arc<PolicyRuntime>, agent: Arc<dyn Agent>) -> Self {
        Self {
            store,
            policy,
            agent,
            clock: Arc::new(SystemClock),
            config: WorkerConfig::default(),
            metrics: Arc::default(),
            classes: None,
        }
    }

    /// The "now" the worker acts on (the system clock unless set).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Batch sizes, leases, retries and the worker's id.
    pub fn config(mut self, config: WorkerConfig) -> Self {
        self.config = config;
        self
    }

    /// Where the worker counts what it does (fresh counters unless set).
    pub fn metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// The status classes to share with the API and the deployment (see
    /// `deploy::PolicyDeployment::classes`); a copy of its own unless set.
    pub fn classes(mut self, classes: StatusClasses) -> Self {
        self.classes = Some(classes);
        self
    }

    /// The worker. It does nothing until `run` is called.
    pub fn build(self) -> Worker {
        let policy = PolicyHandle::from(&self.policy);
        let classes = self.classes.unwrap_or_else(|| {
            StatusClasses::new(self.store.clone(), policy.clone(), self.clock.clone())
        });
        let cx = Context {
            store: self.store,
            policy,
            classes,
            clock: self.clock,
            config: self.config,
            metrics: self.metrics,
            decision_log: Arc::new(Episode::new("writing the decision log")),
        };
        Worker {
            planner: Planner::new(cx.clone()),
            deliverer: Deliverer::new(cx, self.agent),
            wake: Arc::new(Notify::new()),
        }
    }
}
