//! What the planner and the deliverer share: the store, the policy, the
//! status classes, the clock, the configuration and the counters.
//!
//! Why one value: both steps read the same parts, and a part added here is
//! added to both. What only one step keeps (the planner's sweep state, the
//! deliverer's claims in flight) stays in that step. Each step derefs to
//! its context, so a step's code reads `self.store` or `self.clock` without
//! naming the context at every use.

use std::sync::Arc;

use crate::classes::StatusClasses;
use crate::clock::Clock;
use crate::metrics::Metrics;
use crate::policy::PolicyHandle;
use crate::store::{Episode, Store};

use super::WorkerConfig;

/// The parts of a worker both of its steps use. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Context {
    pub(crate) store: Store,
    pub(crate) policy: PolicyHandle,
    /// Status classes under the active revision, asked of the policy once.
    pub(crate) classes: StatusClasses,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) config: WorkerConfig,
    pub(crate) metrics: Arc<Metrics>,
    /// Failed writes of the decision log (by plan passes and by retries),
    /// logged as one episode.
    pub(crate) decision_log: Arc<Episode>,
}
