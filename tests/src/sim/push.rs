//! Executions that are A2A tasks: linked from the task a tool result
//! carries (the policy's `extract-links` finds it), reported by A2A 1.0
//! push bodies read by the host's own reader and let in by their push
//! token, as the receiver does. The driver sends some pushes twice (the
//! senders' at-least-once), lets scripted regressions arrive after the
//! terminal push (unordered retries), and forges pushes with another task's
//! token, which the store must never let in.

use chrono::Duration;
use nomos_continue::clock::{Clock, ManualClock};
use nomos_continue::policy::types::{LinkRef, StatusClass, TaskProtocol};
use nomos_continue::policy::PolicyRuntime;
use nomos_continue::protocols::a2a;
use nomos_continue::store::{task_execution_id, LinkTask, Store, TaskSource};
use rand::rngs::StdRng;
use serde_json::json;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::model::{ExecutionModel, SimTask};

/// How long a simulated push token lasts: longer than any run.
const TOKEN_LIFE: Duration = Duration::days(7);

/// The A2A 1.0 state a scripted status stands for.
fn state(status: &str) -> &'static str {
    match status {
        "completed" => "TASK_STATE_COMPLETED",
        "failed" => "TASK_STATE_FAILED",
        "cancelled" => "TASK_STATE_CANCELED",
        _ => "TASK_STATE_WORKING",
    }
}

fn sha256(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The `n`th task of a run: its id and push token. Unique per run, as the
/// executions' ids are: runs share a store, and a task id seen before
/// would stay linked to the earlier run's session (first link wins).
pub(super) fn new_task(n: usize, seed: u64, ids: &mut StdRng) -> SimTask {
    SimTask {
        task_id: format!("sim-{seed}-task-{n}-{}", super::new_id(ids).simple()),
        token: format!("token-{seed}-{n}-{}", super::new_id(ids)),
    }
}

/// The tool result a runtime posts for the task: the SendMessage answer.
pub(super) fn tool_result(task: &SimTask) -> String {
    json!({"task": {"id": task.task_id, "contextId": "sim",
        "status": {"state": "TASK_STATE_SUBMITTED"}}})
    .to_string()
}

/// The execution ids of what the policy found in a tool result, as the
/// API links them (a task under its name-based id).
pub(super) fn linked_ids(policy: &PolicyRuntime, text: &str) -> Vec<Uuid> {
    policy
        .extract_links(text)
        .value
        .unwrap_or_default()
        .into_iter()
        .filter_map(|link| match link {
            LinkRef::Execution(id) => Uuid::parse_str(&id).ok(),
            LinkRef::Task(t) => Some(task_execution_id(
                match t.protocol {
                    TaskProtocol::Mcp => TaskSource::Mcp,
                    TaskProtocol::A2a => TaskSource::A2a,
                },
                &t.id,
            )),
        })
        .collect()
}

/// Keeps the task beside its link and mints its push token, as
/// `POST /v1/sessions/{id}/tasks` does; false if the store refused either.
pub(super) async fn register(store: &Store, id: Uuid, task: &SimTask, clock: &ManualClock) -> bool {
    let now = clock.now();
    let kept = LinkTask {
        source: TaskSource::A2a,
        task_id: task.task_id.clone(),
    };
    store.keep_tasks(&[(id, kept)], now).await.is_ok()
        && store
            .mint_push(id, &sha256(&task.token), now + TOKEN_LIFE, None, now)
            .await
            .is_ok()
}

/// A report the store did not take (it refused the write): the sender
/// gets an error and sends it again.
#[derive(Debug)]
pub(super) struct NotStored;

/// Sends one push of `status` for the task: read by the host's reader, let
/// in by its token, recorded as a report. Returns a broken promise, if any,
/// or [`NotStored`] when the store refused it.
pub(super) async fn push(
    store: &Store,
    policy: &PolicyRuntime,
    clock: &ManualClock,
    execution: &mut ExecutionModel,
    task: &SimTask,
    (status, result): (&'static str, &str),
) -> Result<Option<String>, NotStored> {
    let body = json!({"statusUpdate": {"taskId": task.task_id, "contextId": "sim",
        "status": {"state": state(status),
            "message": {"role": "ROLE_AGENT", "parts": [{"text": result}]}}}})
    .to_string();
    let update = match a2a::read_push(body.as_bytes()) {
        Ok(update) => update,
        Err(e) => return Ok(Some(format!("the host could not read an A2A push: {e}"))),
    };
    let now = clock.now();
    match store
        .push_task(execution.id, &sha256(&task.token), now)
        .await
    {
        Ok(Some(record)) if record.task_id == update.task_id => {}
        Ok(Some(record)) => {
            return Ok(Some(format!(
                "the token of task {} let in task {}",
                update.task_id, record.task_id
            )))
        }
        // A task not registered yet has no token: the push is refused, as
        // the receiver's 401 would. When the store refused its registration,
        // the runtime posts the tool result again (`relink`) and the
        // status is sent after that.
        Ok(None) if execution.relink => return Err(NotStored),
        Ok(None) => return Ok(None),
        Err(_) => return Err(NotStored),
    }
    let Some(state) = update.state else {
        return Ok(Some("a status push without its state".into()));
    };
    let finished = matches!(policy.classify(&state).value, Ok(StatusClass::Terminal(_)));
    if store
        .upsert_execution_status(execution.id, &state, result, now, finished)
        .await
        .is_err()
    {
        return Err(NotStored);
    }
    if finished && execution.first_terminal.is_none() {
        execution.first_terminal = Some(state);
        execution.terminal_report = Some((status, result.to_string()));
    }
    Ok(None)
}

/// A push forged with `other`'s token for `victim`'s execution: the store
/// must refuse it. Returns a broken promise, if it did not.
pub(super) async fn forge(
    store: &Store,
    clock: &ManualClock,
    victim: Uuid,
    other: &SimTask,
) -> Option<String> {
    match store
        .push_task(victim, &sha256(&other.token), clock.now())
        .await
    {
        Ok(Some(record)) => Some(format!(
            "P: the push token of task {} let a push in for execution {victim} (task {})",
            other.task_id, record.task_id
        )),
        _ => None,
    }
}
