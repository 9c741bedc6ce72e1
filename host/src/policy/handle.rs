//! The policy runtime as async code meets it.
//!
//! A policy call compiles nothing but still runs wasm for up to its
//! deadline, and an activation compiles a whole component: on one of
//! tokio's worker threads either would stall every task queued behind it.
//! So the worker, the API and deployment reach the runtime through
//! [`PolicyHandle`], which runs each call on the blocking pool; this is the
//! one place that does.

use std::sync::Arc;

use tokio::task::JoinError;

use super::runtime::{Evaluated, PolicyRuntime};
use super::types::{Decision, DecisionInput, LinkRef, PolicyInfo, StatusClass};
use super::{PolicyError, Revision};

/// The blocking task running a policy call died (a panic in the host's
/// code or in the compiler; a failing *policy* is a [`PolicyFailure`]).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct PolicyTaskFailed(#[from] JoinError);

/// Async access to a shared [`PolicyRuntime`]. Cheap to clone.
#[derive(Clone)]
pub struct PolicyHandle {
    runtime: Arc<PolicyRuntime>,
}

impl From<&Arc<PolicyRuntime>> for PolicyHandle {
    fn from(runtime: &Arc<PolicyRuntime>) -> Self {
        Self {
            runtime: runtime.clone(),
        }
    }
}

impl PolicyHandle {
    /// The runtime, for what does not call the policy (the active
    /// revision, the limits, the counters).
    pub fn runtime(&self) -> &PolicyRuntime {
        &self.runtime
    }

    /// Runs `call` on the blocking pool. For a caller that makes several
    /// calls as one piece of work (say, splitting a batch the policy failed
    /// on), so the piece costs one hop off the async threads, not one each.
    pub async fn run<T: Send + 'static>(
        &self,
        call: impl FnOnce(&PolicyRuntime) -> T + Send + 'static,
    ) -> Result<T, PolicyTaskFailed> {
        let runtime = self.runtime.clone();
        Ok(tokio::task::spawn_blocking(move || call(&runtime)).await?)
    }

    /// [`PolicyRuntime::extract_links`].
    pub async fn extract_links(
        &self,
        text: String,
    ) -> Result<Evaluated<Vec<LinkRef>>, PolicyTaskFailed> {
        self.run(move |runtime| runtime.extract_links(&text)).await
    }

    #[cfg(feature = "test-support")]
    /// [`PolicyRuntime::classify`].
    pub async fn classify(
        &self,
        status: String,
    ) -> Result<Evaluated<StatusClass>, PolicyTaskFailed> {
        self.run(move |runtime| runtime.classify(&status)).await
    }

    /// Each distinct status of `statuses` classified once, sorted, in one
    /// task: a pass or a folded continuation repeats a few statuses many
    /// times. Each answer carries the revision that gave it, so it can be
    /// kept under that revision even if a swap lands mid-way.
    pub async fn classify_each(
        &self,
        mut statuses: Vec<String>,
    ) -> Result<Vec<(String, Evaluated<StatusClass>)>, PolicyTaskFailed> {
        statuses.sort();
        statuses.dedup();
        self.run(move |runtime| {
            statuses
                .into_iter()
                .map(|status| {
                    let class = runtime.classify(&status);
                    (status, class)
                })
                .collect()
        })
        .await
    }

    /// [`PolicyRuntime::decide_batch`].
    pub async fn decide_batch(
        &self,
        inputs: Vec<DecisionInput>,
    ) -> Result<Evaluated<Vec<Decision>>, PolicyTaskFailed> {
        self.run(move |runtime| runtime.decide_batch(&inputs)).await
    }

    /// [`PolicyRuntime::soul`].
    pub async fn soul(&self) -> Result<Evaluated<String>, PolicyTaskFailed> {
        self.run(PolicyRuntime::soul).await
    }

    /// [`PolicyRuntime::describe`].
    pub async fn describe(&self) -> Result<Evaluated<PolicyInfo>, PolicyTaskFailed> {
        self.run(PolicyRuntime::describe).await
    }

    /// [`PolicyRuntime::activate`]: vets `bytes` (a compile) and swaps them
    /// in.
    pub async fn activate(
        &self,
        bytes: Vec<u8>,
    ) -> Result<Result<Revision, PolicyError>, PolicyTaskFailed> {
        self.run(move |runtime| runtime.activate(&bytes)).await
    }
}
