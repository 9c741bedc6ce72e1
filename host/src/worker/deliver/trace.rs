//! The deliver step's share of tracing: which kept trace context a call is
//! made under, and the `deliver` span around the agent call.

use std::collections::HashMap;

use uuid::Uuid;

use super::Deliverer;
use crate::agent::AgentError;
use crate::store::{Delivery, LinkTrace};
use crate::telemetry::DeliverSpan;

impl Deliverer {
    /// The trace context each of `deliveries` (by id) is delivered under.
    /// A continuation folds several executions but carries one
    /// `traceparent`: the context of the first of its executions, in the
    /// delivery's order, that has one kept. From `read` (the contexts the
    /// plan read, by execution) when given, else one read for the batch; if
    /// that fails, the calls start new traces (a lost trace never holds a
    /// delivery up).
    pub(super) async fn traces<'a>(
        &self,
        deliveries: impl Iterator<Item = &'a Delivery>,
        read: Option<HashMap<Uuid, LinkTrace>>,
    ) -> HashMap<Uuid, LinkTrace> {
        let deliveries: Vec<&Delivery> = deliveries.collect();
        let kept = match read {
            Some(kept) => kept,
            None => match self.store.link_traces(&execution_ids(&deliveries)).await {
                Ok(kept) => kept,
                Err(e) => {
                    tracing::debug!("delivering without the links' traces: {e}");
                    return HashMap::new();
                }
            },
        };
        (deliveries.iter())
            .filter_map(|d| {
                let first = d.execution_ids.iter().find_map(|id| kept.get(id))?;
                Some((d.id, first.clone()))
            })
            .collect()
    }
}

/// Every execution `deliveries` name, in their order.
fn execution_ids(deliveries: &[&Delivery]) -> Vec<Uuid> {
    (deliveries.iter())
        .flat_map(|d| d.execution_ids.iter().copied())
        .collect()
}

/// The `deliver` span of one call of `delivery`, under `parent`.
pub(super) fn span(delivery: &Delivery, parent: Option<&LinkTrace>) -> DeliverSpan {
    DeliverSpan::start(
        parent,
        delivery.kind.as_str(),
        delivery.id,
        delivery.session_id,
        &delivery.execution_ids,
    )
}

/// Ends the span with the call's outcome: `accepted`, or the class of its
/// failure with the message.
pub(super) fn end(span: DeliverSpan, result: &Result<(), AgentError>) {
    match result {
        Ok(()) => span.end("accepted", None),
        Err(e) => {
            let class = match e {
                AgentError::Unavailable { .. } => "unavailable",
                AgentError::Retryable(_) => "retryable",
                AgentError::Permanent(_) => "permanent",
            };
            span.end(class, Some(e.message()));
        }
    }
}
