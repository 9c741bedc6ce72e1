//! A remote A2A agent's word on its task: a push (1.0 and 0.3 bodies) or,
//! for a push that never came, its `GetTask` answer.
//!
//! Delivery is at least once and unordered across retries, so each update
//! is taken for what it adds: artifacts are gathered (compare-and-set, so
//! concurrent pushes do not lose one), and a state the execution does not
//! hold already is recorded through the one path every report takes
//! ([`Intake::record_status`]): a report after a terminal one is kept, not
//! applied. Nothing here calls the agent.

use uuid::Uuid;

use super::tasks::token_sha256;
use super::{max_result_bytes, Intake, IntakeError};
use crate::protocols::a2a::{self, Artifact, TaskUpdate};
use crate::protocols::{result, ProtocolError};
use crate::store::TaskRecord;

/// Tries of the artifacts' compare-and-set before giving up.
const GATHER_TRIES: usize = 5;

impl Intake {
    /// Checks the push token of `execution_id` (its stored hash and
    /// expiry; an unknown execution is answered as a wrong token), that
    /// the push `body` is about that task, and takes it.
    pub async fn take_push(
        &self,
        execution_id: Uuid,
        token: &str,
        body: &[u8],
    ) -> Result<(), IntakeError> {
        let record = self.push_record(execution_id, token).await?;
        let update = a2a::read_push(body).map_err(|e| IntakeError::Invalid(e.to_string()))?;
        self.take_update(record, update).await
    }

    /// The task a valid push token reports, or [`IntakeError::WrongToken`];
    /// `token`'s digest is what the caller may count it by.
    pub(crate) async fn push_record(
        &self,
        execution_id: Uuid,
        token: &str,
    ) -> Result<TaskRecord, IntakeError> {
        let now = self.clock.now();
        (self.store)
            .push_task(execution_id, &token_sha256(token), now)
            .await?
            .ok_or(IntakeError::WrongToken)
    }

    /// Takes `update` for `record`'s task, once it is known to be that
    /// task's: from a push, or from the poller's `GetTask`.
    pub(crate) async fn take_update(
        &self,
        record: TaskRecord,
        update: TaskUpdate,
    ) -> Result<(), IntakeError> {
        if update.task_id != record.task_id {
            return Err(IntakeError::OtherTask(
                ProtocolError::OtherTask {
                    expected: record.task_id,
                    named: update.task_id,
                }
                .to_string(),
            ));
        }
        self.apply(record, update).await
    }

    /// Gathers the update's artifacts and records its state if the
    /// execution does not hold it already.
    pub(super) async fn apply(
        &self,
        record: TaskRecord,
        update: TaskUpdate,
    ) -> Result<(), IntakeError> {
        let id = record.execution_id;
        let now = self.clock.now();
        let gathered = self.gather(record, &update).await?;
        let current = self.store.executions(&[id]).await?.pop();
        let status = match update.state.as_deref() {
            // A duplicate (or a repeat of a state already held) changes
            // nothing the execution holds; it is still word from the agent.
            Some(status) if current.is_some_and(|e| e.status == status) => None,
            status => status,
        };
        let Some(status) = status else {
            self.store.note_protocol(id, None, now).await?;
            return Ok(());
        };
        let max = max_result_bytes(self.limits());
        let text = result::a2a_result(&update.message_text, &gathered, max);
        self.record_status(id, status, &text, None).await?;
        self.store.note_protocol(id, Some(status), now).await?;
        Ok(())
    }

    /// The task's artifacts with the update's gathered in, kept by a
    /// compare-and-set: an update that lost the race to another reads
    /// again.
    async fn gather(
        &self,
        mut record: TaskRecord,
        update: &TaskUpdate,
    ) -> Result<Vec<Artifact>, IntakeError> {
        let id = record.execution_id;
        for _ in 0..GATHER_TRIES {
            let kept = kept_artifacts(&record);
            let gathered = result::gather(kept.clone(), &update.artifacts, update.whole_task);
            if gathered == kept {
                return Ok(gathered);
            }
            let text = serde_json::to_string(&gathered)
                .map_err(|e| IntakeError::Internal(format!("artifacts as JSON: {e}")))?;
            let seen = record.artifacts.as_deref();
            let now = self.clock.now();
            if self.store.gather_artifacts(id, seen, &text, now).await? {
                return Ok(gathered);
            }
            record = (self.store.task_record(id).await?)
                .ok_or_else(|| IntakeError::Internal(format!("the task of {id} vanished")))?;
        }
        Err(IntakeError::Unavailable(format!(
            "the artifacts of {id} changed under {GATHER_TRIES} pushes at once"
        )))
    }
}

/// The artifacts kept for the task; unreadable JSON (which only this
/// module writes) counts as none.
fn kept_artifacts(record: &TaskRecord) -> Vec<Artifact> {
    (record.artifacts.as_deref())
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default()
}
