//! Row types and small enums the store returns.
//!
//! They are plain data (with `Serialize`, times as RFC 3339) so the API can
//! return them as JSON without a second set of types.

pub use super::deliveries::row::*;
use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use super::StoreError;

/// Declares a string-backed enum whose text is what the migrations' CHECK
/// constraints allow, with `as_str`, `Display` and `FromStr`.
macro_rules! text_enum {
    ($(#[$meta:meta])* $name:ident, $field:literal { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// The text stored in the database and used on the wire.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = StoreError;

            /// Exact, lowercase match; anything else is
            /// [`StoreError::InvalidValue`].
            fn from_str(s: &str) -> Result<Self, StoreError> {
                match s {
                    $($text => Ok(Self::$variant),)+
                    other => Err(StoreError::InvalidValue {
                        field: $field,
                        reason: format!("unknown value {other:?}"),
                    }),
                }
            }
        }
    };
}

text_enum!(
    /// How the operator approved: every route opens the same window.
    Route, "route" {
        /// The approve button in the UI.
        Button => "button",
        /// Assent typed in the chat ("go ahead").
        Chat => "chat",
        /// `POST /v1/sessions/{id}/approvals`.
        Api => "api",
    }
);

text_enum!(
    /// Who spoke a chat turn.
    Role, "role" {
        /// The system prompt.
        System => "system",
        /// The operator.
        User => "user",
        /// The agent.
        Assistant => "assistant",
    }
);

text_enum!(
    /// What a ledger row delivers.
    DeliveryKind, "kind" {
        /// A re-invocation of the agent with a note about finished executions.
        Continuation => "continuation",
        /// A visible notice that results were dropped (no window, loop cap).
        Notice => "notice",
    }
);

text_enum!(
    /// Where a ledger row is in its life.
    DeliveryState, "state" {
        /// Waiting to be claimed and delivered (possibly after a failed attempt).
        Pending => "pending",
        /// Delivered; final.
        Delivered => "delivered",
        /// Gave up after the retry budget; final and visible.
        Failed => "failed",
        /// A continuation whose assent window closed before it could be
        /// sent (deny or expiry while it waited or between retries); never
        /// sent, final, and announced by one notice.
        Dropped => "dropped",
    }
);

text_enum!(
    /// Where a notice's copy for the operator's channel is in its life
    /// (`nomos_operator_notices.state`).
    OperatorState, "operator state" {
        /// Waiting to be sent (possibly after a failed attempt).
        Pending => "pending",
        /// The channel accepted it; final.
        Delivered => "delivered",
        /// The channel's retry budget ran out; final.
        Failed => "failed",
        /// Older than a channel will send late when one first looked at it.
        Expired => "expired",
        /// No operator channel was configured when it was due.
        None => "none",
    }
);

text_enum!(
    /// How a link was settled (column `outcome` of `nomos_plan_executions`).
    Settlement, "outcome" {
        /// Its result was fed back to the agent.
        Continued => "continued",
        /// Not fed back, on purpose (no open window, loop cap, policy).
        Dropped => "dropped",
        /// Its continuation gave up after the retry budget.
        Failed => "failed",
    }
);

text_enum!(
    /// Which write set a link's trace context (`trace_source` of
    /// `nomos_link_data`), and so whether a later write may replace it.
    TraceSource, "trace source" {
        /// The tool result that linked the execution: written over any
        /// context kept before.
        ToolResult => "tool_result",
        /// A status report: kept only where no context is kept yet.
        StatusReport => "status_report",
    }
);

text_enum!(
    /// The protocol a linked task belongs to (`task_source` of
    /// `nomos_link_data`): the task ids of MCP Tasks and A2A are strings of
    /// the remote side's choosing, kept here beside the execution id they
    /// are linked under.
    TaskSource, "task source" {
        /// A task of the Model Context Protocol (a task-augmented
        /// `tools/call`).
        Mcp => "mcp",
        /// A task of a remote agent spoken to over A2A.
        A2a => "a2a",
    }
);

/// The namespace of the execution ids nomos-continue mints for protocol
/// tasks (a random v4 UUID, fixed forever: changing it would move every
/// linked task to another execution id).
const TASK_NAMESPACE: Uuid = Uuid::from_u128(0x6c1f_9a52_3b7e_4d0a_9f41_0c5e_8d27_b3a6);

/// The execution id a protocol's task is linked under: a name-based (v5)
/// UUID over its source and id, so the seed's link table keeps its UUID
/// column and every replica, and every restart, maps a task to the same
/// execution without asking the database.
pub fn task_execution_id(source: TaskSource, task_id: &str) -> Uuid {
    Uuid::new_v5(
        &TASK_NAMESPACE,
        format!("{}:{task_id}", source.as_str()).as_bytes(),
    )
}

#[cfg(feature = "test-support")]
/// Where a link is, derived from its columns (for the API and the worker).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkState {
    /// Linked, not yet folded into a continuation.
    Pending,
    /// Folded into a continuation that has not been delivered yet.
    Planned,
    /// Settled: fed back to the agent.
    Continued,
    /// Settled: dropped.
    Dropped,
    /// Settled: its continuation failed.
    Failed,
}

/// A session's assent window (table `nomos_assent_windows`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Window {
    /// The chat session.
    pub session_id: Uuid,
    /// When the current window was opened; kept when an approval extends it.
    pub opened_at: DateTime<Utc>,
    /// The window is open strictly before this instant. A denial sets it to
    /// the denial time, so a closed window is also not open by times alone.
    pub expires_at: DateTime<Utc>,
    /// The route of the latest approval.
    pub route: Route,
    /// Continuations planned in this window (the loop guard's counter).
    pub continuations: i32,
    /// Set by a denial.
    pub closed_at: Option<DateTime<Utc>>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl Window {
    /// Open at `now`: not closed and `now < expires_at`, the rule every
    /// query of the store uses too.
    ///
    /// Why `opened_at` is not compared: a window is only ever stamped with
    /// the approving replica's "now", so it never opens in the future. A
    /// replica whose clock is a few milliseconds behind that one (clocks
    /// synced to the database's still differ by their sync error) would
    /// otherwise see a window just approved as "not open yet" and drop the
    /// continuation it was approved for. Expiry is judged exactly, so skew
    /// never lengthens a window by more than the sync error.
    pub fn is_open_at(&self, now: DateTime<Utc>) -> bool {
        self.closed_at.is_none() && now < self.expires_at
    }
}

/// What `Store::link` did with each id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LinkOutcome {
    /// Newly linked to the session by this call.
    pub linked: Vec<Uuid>,
    /// Already linked to this same session before (idempotent repeat).
    pub already_linked: Vec<Uuid>,
    /// Already linked to another session: `(execution_id, owning session)`.
    /// The first link wins and is left alone.
    pub already_linked_elsewhere: Vec<(Uuid, Uuid)>,
}

/// An unsettled, unplanned link whose execution has a row in `executions`:
/// the worker's input. The status is raw text; the policy decides whether it
/// is terminal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReadyLink {
    /// The execution.
    pub execution_id: Uuid,
    /// The session it is linked to.
    pub session_id: Uuid,
    /// When the link was made (the ordering key).
    pub linked_at: DateTime<Utc>,
    /// `executions.status`, as reported.
    pub status: String,
    /// The length of `executions.result` in bytes (0 when NULL). The text
    /// itself is not read by the poll: a pass loads it only for the
    /// executions it decides, within its byte budget
    /// ([`Store::executions`](crate::store::Store::executions)).
    pub result_bytes: i64,
    /// `executions.updated_at`.
    pub updated_at: DateTime<Utc>,
    /// `executions.finished_at`.
    pub finished_at: Option<DateTime<Utc>>,
}

impl ReadyLink {
    /// The keyset cursor to continue after this row.
    pub fn cursor(&self) -> PendingCursor {
        PendingCursor {
            linked_at: self.linked_at,
            execution_id: self.execution_id,
        }
    }
}

/// Keyset position in the pending-links order `(linked_at, execution_id)`.
///
/// Why a cursor: links whose executions are still running stay pending, so a
/// plain `LIMIT` would return the same running ones on every poll and starve
/// the finished ones behind them. The worker pages through with the cursor of
/// the last row until a page comes back short.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingCursor {
    /// `created_at` of the last row seen.
    pub linked_at: DateTime<Utc>,
    /// `execution_id` of the last row seen.
    pub execution_id: Uuid,
}

/// One link with its state, for the API and the worker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Link {
    /// The execution.
    pub execution_id: Uuid,
    /// The session.
    pub session_id: Uuid,
    /// When linked.
    pub created_at: DateTime<Utc>,
    /// When settled (whatever the outcome).
    pub continued_at: Option<DateTime<Utc>>,
    /// The continuation it is folded into, if planned.
    pub delivery_id: Option<Uuid>,
    /// How it was settled.
    pub outcome: Option<Settlement>,
    /// Why it was dropped or failed.
    pub reason: Option<String>,
    /// `executions.status`, if the execution has reported yet.
    pub execution_status: Option<String>,
    /// The protocol task the execution id stands for, if it stands for one.
    pub task: Option<super::LinkTask>,
}

#[cfg(feature = "test-support")]
impl Link {
    /// The state derived from the columns.
    pub fn state(&self) -> LinkState {
        match (self.outcome, self.delivery_id) {
            (Some(Settlement::Continued), _) => LinkState::Continued,
            (Some(Settlement::Dropped), _) => LinkState::Dropped,
            (Some(Settlement::Failed), _) => LinkState::Failed,
            (None, Some(_)) => LinkState::Planned,
            (None, None) => LinkState::Pending,
        }
    }
}

/// What the policy's decision input needs about a session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SessionSnapshot {
    /// The session.
    pub session_id: Uuid,
    /// Its window row, open or not (`None` if never approved).
    pub window: Option<Window>,
    /// Whether that window is open at the `now` passed in.
    pub window_open: bool,
    /// The window's continuation count (0 without a window).
    pub continuations_in_window: i32,
    /// The session's unsettled links (pending or planned) with their
    /// execution's status, in link order. Which of them are still running
    /// is the policy's call, so the worker works it out from the classes
    /// of these statuses (see `Store::status_classes`).
    pub unsettled: Vec<Link>,
}

impl SessionSnapshot {
    /// A session with no window and no unsettled links.
    pub fn empty(session_id: Uuid) -> Self {
        Self {
            session_id,
            window: None,
            window_open: false,
            continuations_in_window: 0,
            unsettled: Vec::new(),
        }
    }
}

/// A row of `executions`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Execution {
    /// The execution.
    pub id: Uuid,
    /// Raw status text as reported.
    pub status: String,
    /// Result text (output or error).
    pub result: String,
    /// Last report.
    pub updated_at: DateTime<Utc>,
    /// First report that said "finished".
    pub finished_at: Option<DateTime<Utc>>,
}

/// A stored chat turn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Turn {
    /// Monotonic id; orders the turns of a session.
    pub id: i64,
    /// The session.
    pub session_id: Uuid,
    /// Who spoke.
    pub role: Role,
    /// What was said.
    pub content: String,
    /// The continuation an assistant reply answers (`chatWith`); `None` for
    /// turns the operator recorded.
    pub idempotency_key: Option<String>,
    /// When.
    pub created_at: DateTime<Utc>,
}

/// A stored policy revision, without its bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PolicyRevision {
    /// SHA-256 of the wasm, lowercase hex.
    pub hash: String,
    /// Name the policy declares.
    pub name: String,
    /// Version the policy declares.
    pub version: String,
    /// When saved.
    pub created_at: DateTime<Utc>,
    /// The id of the key its recorded signature names; `None` if it was
    /// stored unsigned (see [`super::Store::record_policy_signature`]).
    pub key_id: Option<String>,
}

/// The active policy with its bytes, ready to compile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActivePolicy {
    /// SHA-256 of the wasm, lowercase hex.
    pub hash: String,
    /// The component.
    pub wasm: Vec<u8>,
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
    /// When it became active.
    pub activated_at: DateTime<Utc>,
    /// The signature line it was stored with, verified (by a replica with
    /// a verify key) before it is activated; `None` if stored unsigned.
    pub signature: Option<String>,
}

/// Which revision is active (or in shadow), without its bytes: what the
/// policy watcher reads on every look, so a replica reads a component of
/// tens of MB only when the revision it runs is no longer the one named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyHead {
    /// SHA-256 of the wasm, lowercase hex.
    pub hash: String,
    /// The signature line it was stored with.
    pub signature: Option<String>,
}

/// What [`super::Store::upsert_execution_status`] did with a report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReportOutcome {
    /// The execution as stored after the report.
    pub execution: Execution,
    /// False when the execution had already finished: terminal is final, so
    /// the report was kept in the late reports and changed nothing.
    pub applied: bool,
}

/// A report that arrived after its execution's first terminal one: kept
/// for the record, never applied.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LateReport {
    /// The execution.
    pub execution_id: Uuid,
    /// The status reported (trimmed).
    pub status: String,
    /// The result reported.
    pub result: String,
    /// When it was reported.
    pub reported_at: DateTime<Utc>,
}

/// What [`Store::register_worker`](super::Store::register_worker) found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registration {
    /// The worker id is this instance's: newly registered, registered by it
    /// already, or taken over from a holder whose heartbeat went stale.
    Registered,
    /// A live process holds the worker id; when it last beat.
    Duplicate {
        /// The holder's last heartbeat.
        heartbeat_at: DateTime<Utc>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_keeps_its_execution_id_and_sources_never_share_one() {
        let id = "9f1c2d3e4a5b6c7d8e9f0a1b2c3d4e5f:0b6e4b8a-2f0c-4e7e-9d43-5a1c3c7f2e10";
        let mcp = task_execution_id(TaskSource::Mcp, id);
        // Pinned: a change of namespace or of the name's form would move
        // every task linked before it to another execution.
        assert_eq!(mcp, task_execution_id(TaskSource::Mcp, id));
        assert_eq!(mcp.get_version_num(), 5);
        assert_ne!(mcp, task_execution_id(TaskSource::A2a, id));
        assert_ne!(mcp, task_execution_id(TaskSource::Mcp, "other"));
        assert_eq!(
            task_execution_id(TaskSource::A2a, "task-1").to_string(),
            Uuid::new_v5(&TASK_NAMESPACE, b"a2a:task-1").to_string()
        );
    }
}
