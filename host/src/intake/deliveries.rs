//! The operator's hand on the ledger: send a failed delivery again, or
//! drop a pending one. The API's routes, the `retry` command and an
//! embedding runtime call these alike.

use uuid::Uuid;

use super::{Intake, IntakeError};
use crate::store::{Delivery, OperatorDrop, RetryOutcome};

impl Intake {
    /// Makes a `failed` delivery (or a continuation dropped when its window
    /// closed) pending again, due now, under its idempotency key, and wakes
    /// every worker: this process's and, on PostgreSQL, the others'.
    /// Refused (`Conflict`) when it has not ended, its window is closed,
    /// its session has another continuation pending, or its note was
    /// purged; `NotFound` when no delivery has the id.
    pub async fn retry_delivery(&self, delivery_id: Uuid) -> Result<Delivery, IntakeError> {
        let outcome = self
            .store
            .retry_delivery(delivery_id, self.clock.now())
            .await?;
        match outcome {
            RetryOutcome::Retried(delivery) => {
                self.store.notify_wake().await?;
                self.wake.notify_one();
                Ok(*delivery)
            }
            RetryOutcome::NotFound => Err(IntakeError::NotFound(outcome.explain(delivery_id))),
            other => Err(IntakeError::Conflict(other.explain(delivery_id))),
        }
    }

    /// Drops a pending delivery: it is never sent. A continuation's
    /// executions are settled `dropped` with one notice saying so; a
    /// notice's agent copy is only ended. Refused (`Conflict`) while a call
    /// of it is in flight, or when it is not pending.
    pub async fn drop_delivery(&self, delivery_id: Uuid) -> Result<Delivery, IntakeError> {
        let outcome = self
            .store
            .drop_delivery(delivery_id, self.clock.now())
            .await?;
        match outcome {
            OperatorDrop::Dropped(delivery) => {
                tracing::info!(delivery = %delivery_id, "the operator dropped a delivery");
                Ok(*delivery)
            }
            OperatorDrop::NotFound => Err(IntakeError::NotFound(outcome.explain(delivery_id))),
            other => Err(IntakeError::Conflict(other.explain(delivery_id))),
        }
    }
}
