//! One status report of an execution, whoever made it: the runtime's
//! `PUT`, an A2A push or `GetTask` answer, an MCP task update, or an
//! embedding runtime's call.

use std::time::Duration;

use uuid::Uuid;

use super::{cap_text, max_result_bytes, storable, Intake, IntakeError, MAX_STATUS_BYTES};
use crate::classes::ClassError;
use crate::store::{Execution, ReportOutcome};
use crate::telemetry::TraceContext;

/// How long a report waits for its status's class (a database read when
/// the status is new to this revision).
const CLASS_WITHIN: Duration = Duration::from_secs(2);

/// What a report did.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Recorded {
    /// The execution as stored after the report.
    pub execution: Execution,
    /// Whether the report was applied: `false` for one after a terminal
    /// report, which is kept, not applied (terminal is final).
    pub applied: bool,
    /// Why it was not applied, in words.
    pub note: Option<String>,
}

impl Intake {
    /// Records one status report of `execution_id`: the status's class
    /// under the active revision, the upsert under the late-report rule (a
    /// report after a terminal one is kept, not applied), the report's
    /// trace context where the link kept none, and the worker's wake-up.
    /// The one path every report takes. Idempotent by nature.
    pub async fn record_status(
        &self,
        execution_id: Uuid,
        status: &str,
        result: &str,
        trace: Option<&TraceContext>,
    ) -> Result<Recorded, IntakeError> {
        if status.trim().is_empty() {
            return Err(IntakeError::Invalid("status must not be empty".into()));
        }
        cap_text("status", status, MAX_STATUS_BYTES)?;
        cap_text("result", result, max_result_bytes(self.limits()))?;
        storable("status", status)?;
        storable("result", result)?;
        let finished = match tokio::time::timeout(CLASS_WITHIN, self.classes.class(status)).await {
            Ok(Ok(class)) => class.is_terminal(),
            Ok(Err(ClassError::Store(e))) => return Err(e.into()),
            Ok(Err(ClassError::PolicyTask(e))) => {
                return Err(IntakeError::PolicyUnavailable(format!(
                    "policy task failed: {e}"
                )))
            }
            Err(_) => {
                return Err(IntakeError::Unavailable(format!(
                    "the class of status {status:?} was not read in {CLASS_WITHIN:?}"
                )))
            }
        };
        let now = self.clock.now();
        let ReportOutcome { execution, applied } = self
            .store
            .upsert_execution_status(execution_id, status, result, now, finished)
            .await?;
        if let Some(trace) = trace {
            crate::telemetry::reported(&self.store, trace, execution_id, now).await;
        }
        let note = if applied {
            self.wake.notify_one();
            None
        } else {
            // "terminal" is the stored state, which a late report does not
            // change.
            Some(format!(
                "terminal is final: execution {execution_id} already reported '{}'; \
                 this report was recorded, not applied",
                execution.status
            ))
        };
        Ok(Recorded {
            execution,
            applied,
            note,
        })
    }
}
