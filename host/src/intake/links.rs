//! A tool result's links: the executions and protocol tasks the policy
//! finds in its text, linked to the session.

use uuid::Uuid;

use super::{cap_text, Intake, IntakeError};
use crate::policy::types::{LinkRef, TaskProtocol};
use crate::policy::{PolicyFailure, PolicyHandle, Revision};
use crate::store::{task_execution_id, LinkOutcome, LinkTask, TaskSource};
use crate::telemetry::{LinkSpan, TraceContext};

/// What a tool result linked.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Linked {
    /// The executions linked now, those this session held already, and
    /// those another session holds (the first link wins).
    pub outcome: LinkOutcome,
    /// The protocol tasks among them, each under its execution id.
    pub tasks: NamedTasks,
    /// The policy revision that read the text.
    pub revision: Revision,
}

impl Intake {
    /// Links every execution and protocol task the tool result `text`
    /// names to `session_id` (a task under its name-based execution id,
    /// with the task kept beside it), keeps `trace` with them, and wakes
    /// the worker when something was newly linked: the execution may have
    /// reported already, and then the link is what makes it ready.
    /// Idempotent by nature: the same text again links nothing new.
    pub async fn link_tool_result(
        &self,
        session_id: Uuid,
        text: String,
        trace: Option<&TraceContext>,
    ) -> Result<Linked, IntakeError> {
        let span = LinkSpan::start(trace, session_id);
        cap_text("text", &text, self.limits().max_text_bytes)?;
        let evaluated = PolicyHandle::from(&self.policy)
            .extract_links(text)
            .await
            .map_err(|e| IntakeError::PolicyUnavailable(format!("policy task failed: {e}")))?;
        let links = evaluated.value.map_err(extraction_failed)?;
        let (ids, tasks) = link_ids(&links)?;
        let now = self.clock.now();
        self.store.keep_tasks(&tasks, now).await?;
        let outcome = self.store.link(session_id, &ids, now).await?;
        span.linked(&self.store, &outcome, now).await;
        if !outcome.linked.is_empty() {
            self.wake.notify_one();
        }
        Ok(Linked {
            outcome,
            tasks,
            revision: evaluated.revision,
        })
    }
}

/// An extraction the policy could not answer: a text over the sandbox's
/// limit can never succeed as sent, any other failure may pass.
fn extraction_failed(e: PolicyFailure) -> IntakeError {
    match e {
        PolicyFailure::InputTooLarge(_, max) => IntakeError::TooLarge { limit: "text", max },
        e => IntakeError::PolicyUnavailable(e.to_string()),
    }
}

/// The tasks a tool result named, each with the execution id it is linked
/// under.
type NamedTasks = Vec<(Uuid, LinkTask)>;

/// The execution ids to link, in the policy's order (duplicates out), and
/// the tasks among them: an execution as named, a task under
/// [`task_execution_id`].
fn link_ids(links: &[LinkRef]) -> Result<(Vec<Uuid>, NamedTasks), IntakeError> {
    let mut ids = Vec::with_capacity(links.len());
    let mut tasks = Vec::new();
    for link in links {
        let id = match link {
            LinkRef::Execution(id) => crate::store::parse_uuid(id)
                .map_err(|_| IntakeError::Invalid(format!("execution id {id:?} is not a UUID")))?,
            LinkRef::Task(task) => {
                let source = match task.protocol {
                    TaskProtocol::Mcp => TaskSource::Mcp,
                    TaskProtocol::A2a => TaskSource::A2a,
                };
                let id = task_execution_id(source, &task.id);
                if !tasks.iter().any(|(known, _)| *known == id) {
                    let task_id = task.id.clone();
                    tasks.push((id, LinkTask { source, task_id }));
                }
                id
            }
        };
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok((ids, tasks))
}
