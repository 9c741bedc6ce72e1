//! The agent as the worker sees it: whichever adapter the configuration
//! names (or a caller injects), with every call timed into
//! `nomos_continue_agent_call_duration_seconds`. A decorator here, in the
//! one assembly, so neither the adapters nor the deliverer carry metrics.

use std::sync::Arc;
use std::time::Instant;

use crate::agent::{async_trait, Agent, AgentError, Continuation, Notice};
use crate::metrics::Metrics;

/// Times each call of the agent it wraps.
pub(super) struct TimedAgent {
    inner: Arc<dyn Agent>,
    metrics: Arc<Metrics>,
}

impl TimedAgent {
    pub(super) fn wrap(inner: Arc<dyn Agent>, metrics: Arc<Metrics>) -> Arc<dyn Agent> {
        Arc::new(Self { inner, metrics })
    }
}

/// The `result` label of a call's outcome.
fn result_label(answer: &Result<(), AgentError>) -> &'static str {
    match answer {
        Ok(()) => "ok",
        Err(AgentError::Unavailable { .. }) => "unavailable",
        Err(AgentError::Retryable(_)) => "retryable",
        Err(AgentError::Permanent(_)) => "permanent",
    }
}

#[async_trait]
impl Agent for TimedAgent {
    async fn continue_session(&self, continuation: &Continuation) -> Result<(), AgentError> {
        let started = Instant::now();
        let answer = self.inner.continue_session(continuation).await;
        self.metrics
            .agent_call("continuation", result_label(&answer), started.elapsed());
        answer
    }

    async fn notify(&self, notice: &Notice) -> Result<(), AgentError> {
        let started = Instant::now();
        let answer = self.inner.notify(notice).await;
        self.metrics
            .agent_call("notice", result_label(&answer), started.elapsed());
        answer
    }
}
