//! The wording of the notices the worker writes: one place, so every path
//! that settles an execution without continuing it says so the same way.

use chrono::{DateTime, SecondsFormat, Utc};
use uuid::Uuid;

use crate::policy::types::PersonNeed;
use crate::store::{Delivery, LinkTask, TaskSource, Window};

/// "execution a" or "executions a, b".
fn executions(ids: &[Uuid]) -> String {
    let list = ids
        .iter()
        .map(Uuid::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let noun = if ids.len() == 1 {
        "execution"
    } else {
        "executions"
    };
    format!("{noun} {list}")
}

/// Executions that were settled without re-invoking the agent, and why.
pub(crate) fn not_continued(ids: &[Uuid], reason: &str) -> String {
    format!(
        "nomos-continue did not re-invoke the agent for {}: {reason}",
        executions(ids)
    )
}

/// An execution waiting for a person (a protocol task's `input_required`
/// or `auth_required`): what it waits for, what it asked, and that it is
/// not continued meanwhile. `task` names the protocol's own task, when the
/// execution stands for one; `asks` is its last status message, already
/// cut to a notice's length.
pub(crate) fn awaiting_person(
    id: Uuid,
    task: Option<&LinkTask>,
    status: &str,
    need: PersonNeed,
    asks: &str,
) -> String {
    let what = match task {
        Some(t) => format!(
            "the {} task {:?} (execution {id})",
            match t.source {
                TaskSource::Mcp => "MCP",
                TaskSource::A2a => "A2A",
            },
            t.task_id
        ),
        None => format!("execution {id}"),
    };
    let need = match need {
        PersonNeed::Input => "input from a person",
        PersonNeed::Authorization => "a person to authorize it",
    };
    let asks = if asks.trim().is_empty() {
        "it said nothing more".to_string()
    } else {
        format!("it asks: {}", asks.trim())
    };
    format!(
        "{what} is waiting for {need} (status {status:?}); {asks}. nomos-continue does not \
         re-invoke the agent for it while it waits: answer the task where it runs, and its \
         next state is taken up as usual."
    )
}

/// A continuation whose delivery ended `failed`: what failed, and how an
/// operator sends it again.
pub(crate) fn gave_up(delivery: &Delivery, error: &str) -> String {
    format!(
        "nomos-continue could not deliver the continuation for {} (key {}): {error}. \
         An operator can send it again with `nomos-continue retry {}` or \
         POST /v1/deliveries/{}/retry.",
        executions(&delivery.execution_ids),
        delivery.idempotency_key,
        delivery.id,
        delivery.id
    )
}

/// Why a planned continuation was not sent: its window is not open.
pub(crate) fn window_closed_reason(window: Option<&Window>) -> String {
    let at = |t: DateTime<Utc>| t.to_rfc3339_opts(SecondsFormat::AutoSi, true);
    match window {
        None => "the session has no approved plan in flight".to_string(),
        Some(w) => match w.closed_at {
            Some(closed) => format!(
                "the operator denied the plan at {} before the continuation was delivered",
                at(closed)
            ),
            None => format!(
                "the assent window expired at {} before the continuation was delivered",
                at(w.expires_at)
            ),
        },
    }
}
