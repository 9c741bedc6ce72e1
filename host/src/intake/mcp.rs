//! What the runtime's MCP client got about a task (MCP has no webhook:
//! updates reach only the client, which forwards them).
//!
//! Bodies of both versions, bare or in their JSON-RPC envelope
//! ([`crate::protocols::mcp`]). A `completed` or `failed` status without
//! its payload waits for it, so that the note carries the tool's result; a
//! tool result with `isError: true` is recorded `failed`. Everything
//! recorded goes through the one path every report takes
//! ([`Intake::record_status`]).

use super::tasks::MAX_TASK_ID_BYTES;
use super::{max_result_bytes, Intake, IntakeError, McpRecorded};
use crate::protocols::mcp::{self, McpUpdate};
use crate::protocols::result::capped;
use crate::store::{task_execution_id, LinkTask, TaskSource};
use crate::telemetry::TraceContext;

impl Intake {
    /// Records an MCP task update `body`, about `task_id` when the body
    /// does not say (a `tasks/result` answer without `_meta`). Idempotent
    /// by nature: the same update again changes nothing.
    pub async fn record_mcp(
        &self,
        body: &[u8],
        task_id: Option<&str>,
        trace: Option<&TraceContext>,
    ) -> Result<McpRecorded, IntakeError> {
        let update = mcp::read(body, task_id).map_err(|e| IntakeError::Invalid(e.to_string()))?;
        if update.task_id.len() > MAX_TASK_ID_BYTES {
            return Err(IntakeError::Invalid(format!(
                "task id over {MAX_TASK_ID_BYTES} bytes"
            )));
        }
        let now = self.clock.now();
        let execution_id = task_execution_id(TaskSource::Mcp, &update.task_id);
        let task = LinkTask {
            source: TaskSource::Mcp,
            task_id: update.task_id.clone(),
        };
        self.store.keep_tasks(&[(execution_id, task)], now).await?;
        let record = self.store.task_record(execution_id).await?;
        let wait = record.and_then(|r| r.result_wait.map(|s| (s, r.result_wait_message)));
        let max = max_result_bytes(self.limits());
        let Some((status, result)) = to_record(&update, wait.as_ref(), max) else {
            // A completed or failed status whose payload has not come yet.
            let status = update.status.as_deref().unwrap_or_default();
            let waiting = Some((status, update.status_message.as_str()));
            (self.store)
                .set_result_wait(execution_id, waiting, now)
                .await?;
            (self.store)
                .note_protocol(execution_id, Some(status), now)
                .await?;
            let execution = self.store.executions(&[execution_id]).await?.pop();
            return Ok(McpRecorded {
                execution_id,
                execution,
                applied: false,
                note: Some(format!(
                    "task {:?} is {status}: kept, waiting for its result (tasks/result)",
                    update.task_id
                )),
            });
        };
        let current = self.store.executions(&[execution_id]).await?.pop();
        if let Some(current) = current.filter(|e| e.status == status && e.result == result) {
            (self.store)
                .note_protocol(execution_id, update.status.as_deref(), now)
                .await?;
            return Ok(McpRecorded {
                execution_id,
                execution: Some(current),
                applied: false,
                note: Some(
                    "a duplicate: the execution holds this status and result already".into(),
                ),
            });
        }
        let recorded = self
            .record_status(execution_id, &status, &result, trace)
            .await?;
        if update.result.is_some() {
            self.store.set_result_wait(execution_id, None, now).await?;
        }
        (self.store)
            .note_protocol(execution_id, update.status.as_deref(), now)
            .await?;
        Ok(McpRecorded {
            execution_id,
            execution: Some(recorded.execution),
            applied: recorded.applied,
            note: recorded.note,
        })
    }
}

/// The status and result to record for `update`, or `None` when its
/// status waits for the payload. A result alone (a `tasks/result` answer)
/// ends the task with the status that waited for it (`completed` when
/// none did: the answer comes only once the task is terminal); a result
/// without text takes the status message's.
fn to_record(
    update: &McpUpdate,
    wait: Option<&(String, Option<String>)>,
    max: usize,
) -> Option<(String, String)> {
    match (&update.status, &update.result) {
        (Some(status), None) if mcp::waits_for_result(status) => None,
        (Some(status), None) => Some((status.clone(), capped(&update.status_message, max))),
        (status, Some(outcome)) => {
            let waited = wait.map(|(s, _)| s.as_str());
            let ended = status.as_deref().or(waited).unwrap_or("completed");
            let waited_message = wait.and_then(|(_, m)| m.as_deref()).unwrap_or_default();
            let text = [
                outcome.text.as_str(),
                update.status_message.as_str(),
                waited_message,
            ]
            .into_iter()
            .find(|t| !t.is_empty())
            .unwrap_or_default();
            Some((
                mcp::recorded_status(ended, Some(outcome)),
                capped(text, max),
            ))
        }
        (None, None) => Some(("completed".into(), String::new())),
    }
}
