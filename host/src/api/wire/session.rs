//! A session's shapes: its window, counts and lists, and what a runtime
//! writes to it (a tool result, an approval, a chat turn).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::ledger::Settlement;
use crate::store;

/// How the operator approved; every route opens the same window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalRoute {
    /// The approve button of the chat client.
    Button,
    /// Assent typed in the chat ("go ahead").
    Chat,
    /// A caller of this API.
    Api,
}

// Inherent conversions, not `From`: a `From` impl on the root's `Route`
// would make this wire type part of the library's public surface.
impl ApprovalRoute {
    /// The wire name of a stored route.
    pub(crate) fn of(route: store::Route) -> Self {
        match route {
            store::Route::Button => Self::Button,
            store::Route::Chat => Self::Chat,
            store::Route::Api => Self::Api,
        }
    }

    /// The route to store.
    pub(crate) fn stored(self) -> store::Route {
        match self {
            Self::Button => store::Route::Button,
            Self::Chat => store::Route::Chat,
            Self::Api => store::Route::Api,
        }
    }
}

/// A session's assent window: while it is open, finished executions are
/// fed back to the agent.
#[derive(Debug, Serialize, ToSchema)]
pub struct Window {
    /// When the window was opened; an approval that extends it keeps this.
    pub opened_at: DateTime<Utc>,
    /// The window is open strictly before this instant. A denial sets it to
    /// the time of the denial.
    pub expires_at: DateTime<Utc>,
    /// Whether the window is open at the time of the answer.
    pub open: bool,
    /// The route of the latest approval.
    pub route: ApprovalRoute,
    /// Continuations sent in this window (the loop guard counts them).
    pub continuations: i32,
    /// When a denial closed the window, or `null`.
    pub closed_at: Option<DateTime<Utc>>,
}

impl Window {
    /// The wire shape of a stored window, judged open at `now`.
    pub fn at(window: store::Window, now: DateTime<Utc>) -> Self {
        Self {
            open: window.is_open_at(now),
            opened_at: window.opened_at,
            expires_at: window.expires_at,
            route: ApprovalRoute::of(window.route),
            continuations: window.continuations,
            closed_at: window.closed_at,
        }
    }
}

/// How many rows each of a session's lists holds.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionCounts {
    /// Executions linked to the session.
    pub links: i64,
    /// Of those, the ones not settled yet (still running, or finished and
    /// waiting for their continuation).
    pub in_flight: i64,
    /// Deliveries to the agent (continuations and notices).
    pub deliveries: i64,
    /// Of those, the ones not sent yet (or being retried).
    pub pending_deliveries: i64,
    /// Of those, the ones that gave up after the retry budget.
    pub failed_deliveries: i64,
    /// Notices: deliveries of kind `notice` (`/notices` lists them).
    pub notices: i64,
}

/// `GET /v1/sessions/{id}`: the session's window and counts. Its lists are
/// sub-resources (`/links`, `/deliveries`, `/notices`).
#[derive(Debug, Serialize, ToSchema)]
pub struct Session {
    /// The chat session.
    pub session_id: Uuid,
    /// Its first link or approval.
    pub first_seen_at: DateTime<Utc>,
    /// Its assent window, or `null` if it was never approved.
    pub window: Option<Window>,
    /// Its lists' sizes.
    pub counts: SessionCounts,
    /// Its status now (see `SessionStatus`).
    pub status: SessionStatus,
    /// The last drop reason or delivery error recorded, or `null`.
    pub last_reason: Option<String>,
    /// The last time anything of the session was written.
    pub last_activity_at: DateTime<Utc>,
}

/// A session's status in one word; when several hold, the first of
/// `stuck`, `delivery-failed`, `dropped`, `execution-failed`, `waiting`
/// is shown (docs/console.md, "A session's status").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SessionStatus {
    /// Its window is open and a linked execution has not finished although
    /// it was linked longer ago than the server's `stuck_after`.
    Stuck,
    /// A delivery ended `failed` and was not retried.
    DeliveryFailed,
    /// An execution was settled `dropped`: its result was never fed back.
    Dropped,
    /// A linked execution finished with a status the policy classified
    /// `failed`.
    ExecutionFailed,
    /// An execution finished and its continuation is not settled yet.
    Waiting,
    /// None of the above.
    Ok,
}

impl From<store::SessionStatus> for SessionStatus {
    fn from(status: store::SessionStatus) -> Self {
        match status {
            store::SessionStatus::Stuck => Self::Stuck,
            store::SessionStatus::DeliveryFailed => Self::DeliveryFailed,
            store::SessionStatus::Dropped => Self::Dropped,
            store::SessionStatus::ExecutionFailed => Self::ExecutionFailed,
            store::SessionStatus::Waiting => Self::Waiting,
            store::SessionStatus::Ok => Self::Ok,
        }
    }
}

/// One session in `GET /v1/sessions`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionItem {
    /// The chat session.
    pub session_id: Uuid,
    /// Its first link or approval.
    pub first_seen_at: DateTime<Utc>,
    /// Its assent window, or `null` if it was never approved.
    pub window: Option<Window>,
    /// Linked executions not settled yet.
    pub in_flight: i64,
    /// Deliveries not sent yet.
    pub pending_deliveries: i64,
    /// Deliveries that gave up.
    pub failed_deliveries: i64,
    /// Linked executions that finished with a status classified `failed`.
    pub failed_executions: i64,
    /// Notices: deliveries of kind `notice` (each also queued for the
    /// operator's channel).
    pub notices: i64,
    /// Its status now.
    pub status: SessionStatus,
    /// When its oldest finished, unsettled execution finished (what
    /// `waiting` waits since), or `null`.
    pub waiting_since: Option<DateTime<Utc>>,
    /// The last drop reason or delivery error recorded, or `null`.
    pub last_reason: Option<String>,
    /// The last time anything of the session was written.
    pub last_activity_at: DateTime<Utc>,
}

impl SessionItem {
    /// The wire shape of a listed session, its window judged at `now`.
    pub fn at(row: store::SessionRow, now: DateTime<Utc>) -> Self {
        Self {
            session_id: row.session_id,
            first_seen_at: row.first_seen_at,
            window: row.window.map(|w| Window::at(w, now)),
            in_flight: row.in_flight,
            pending_deliveries: row.pending,
            failed_deliveries: row.failed,
            failed_executions: row.failed_executions,
            notices: row.notices,
            status: row.status.into(),
            waiting_since: row.waiting_since,
            last_reason: row.last_reason,
            last_activity_at: row.last_activity,
        }
    }
}

/// An execution linked to a session.
#[derive(Debug, Serialize, ToSchema)]
pub struct Link {
    /// The execution.
    pub execution_id: Uuid,
    /// When the tool result that named it was linked.
    pub linked_at: DateTime<Utc>,
    /// The execution's reported status, or `null` before its first report.
    pub execution_status: Option<String>,
    /// The delivery its result is (or was) sent in, or `null` before one
    /// is planned.
    pub delivery_id: Option<Uuid>,
    /// How it was settled, or `null` while it is not.
    pub outcome: Option<Settlement>,
    /// When it was settled, or `null`.
    pub settled_at: Option<DateTime<Utc>>,
    /// Why it was dropped or failed, or `null`.
    pub reason: Option<String>,
    /// The protocol task the execution id stands for (MCP Tasks, A2A), or
    /// `null` for an execution the runtime named by its own id.
    pub task: Option<TaskOfLink>,
}

/// The protocol task a link stands for, by the id the protocol gave it.
#[derive(Debug, Serialize, ToSchema)]
pub struct TaskOfLink {
    /// `mcp` or `a2a`.
    #[schema(example = "a2a")]
    pub protocol: String,
    /// The task's id, verbatim.
    pub task_id: String,
}

impl From<store::Link> for Link {
    fn from(link: store::Link) -> Self {
        Self {
            execution_id: link.execution_id,
            linked_at: link.created_at,
            execution_status: link.execution_status,
            delivery_id: link.delivery_id,
            outcome: link.outcome.map(Into::into),
            settled_at: link.continued_at,
            reason: link.reason,
            task: link.task.map(|t| TaskOfLink {
                protocol: t.source.as_str().to_owned(),
                task_id: t.task_id,
            }),
        }
    }
}

/// What the operator's channel (`serve --notify-webhook`) did with a
/// notice.
#[derive(Debug, Serialize, ToSchema)]
pub struct OperatorChannel {
    /// `pending`, `delivered`, `failed` (its retry budget ran out),
    /// `expired` (too old when a channel first saw it) or `none` (no
    /// operator channel was configured).
    pub state: String,
    /// Its failed attempts.
    pub attempts: i32,
    /// Its last failure, or `null`.
    pub last_error: Option<String>,
    /// When the channel accepted it, or `null`.
    pub delivered_at: Option<DateTime<Utc>>,
}

/// A notice: the delivery that tells the agent (kind `notice`) and what
/// the operator's channel did with it.
#[derive(Debug, Serialize, ToSchema)]
pub struct Notice {
    /// The delivery to the agent, its state the agent channel's.
    pub delivery: super::Delivery,
    /// The operator channel's side, or `null` for a notice written before
    /// that channel existed.
    pub operator: Option<OperatorChannel>,
    /// True when it reached no one: the agent's delivery ended `failed` or
    /// `dropped` and the operator's channel never had it or ended
    /// `failed`, `expired` or `none`.
    pub undelivered: bool,
}

impl From<store::NoticeRow> for Notice {
    fn from(n: store::NoticeRow) -> Self {
        let undelivered = n.undelivered();
        Self {
            delivery: n.delivery.into(),
            operator: n.operator.map(|o| OperatorChannel {
                state: o.state,
                attempts: o.attempts,
                last_error: o.last_error,
                delivered_at: o.delivered_at,
            }),
            undelivered,
        }
    }
}

/// `POST /v1/sessions/{id}/tool-results`: a tool's answer, as the agent saw
/// it; the policy finds the execution ids it names.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolResultRequest {
    /// The tool result's text.
    pub text: String,
}

/// An execution another session had linked first; the first link wins.
#[derive(Debug, Serialize, ToSchema)]
pub struct LinkedElsewhere {
    /// The execution.
    pub execution_id: Uuid,
    /// The session it stays linked to.
    pub session_id: Uuid,
}

/// A protocol task a tool result named, and the execution id it is linked
/// under (a name-based UUID over the protocol and the task id).
#[derive(Debug, Serialize, ToSchema)]
pub struct LinkedTask {
    /// The execution id the task is linked under; also listed in `linked`,
    /// `already_linked` or `linked_elsewhere`.
    pub execution_id: Uuid,
    /// `mcp` or `a2a`.
    #[schema(example = "mcp")]
    pub protocol: String,
    /// The task's id, as the protocol gave it.
    pub task_id: String,
}

/// What a tool result linked.
#[derive(Debug, Serialize, ToSchema)]
pub struct LinkResponse {
    /// Executions linked by this request.
    pub linked: Vec<Uuid>,
    /// Executions this session had linked already (a repeat is harmless).
    pub already_linked: Vec<Uuid>,
    /// Executions linked to another session, left there.
    pub linked_elsewhere: Vec<LinkedElsewhere>,
    /// The protocol tasks the text named, each with its execution id.
    pub tasks: Vec<LinkedTask>,
    /// The policy revision (SHA-256 of its component) that read the text.
    pub policy_revision: String,
}

/// Open, extend or close the session's assent window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Open the window, or extend it from now.
    Approve,
    /// Close the window now.
    Deny,
}

/// `POST /v1/sessions/{id}/approvals`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRequest {
    /// Approve or deny.
    pub decision: ApprovalDecision,
    /// How the operator approved (default `api`); ignored by a denial.
    #[serde(default)]
    pub route: Option<ApprovalRoute>,
    /// Minutes the window stays open, 1 to 30 (the default).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 30)]
    pub minutes: Option<i64>,
}

/// The window after an approval (`null` after a denial).
#[derive(Debug, Serialize, ToSchema)]
pub struct ApprovalResponse {
    /// The window as it is now, or `null` once denied.
    pub window: Option<Window>,
}

/// Who spoke a chat turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The system prompt.
    System,
    /// The operator.
    User,
    /// The agent.
    Assistant,
}

impl Role {
    /// The role to store.
    pub(crate) fn stored(self) -> store::Role {
        match self {
            Self::System => store::Role::System,
            Self::User => store::Role::User,
            Self::Assistant => store::Role::Assistant,
        }
    }

    /// The wire name of a stored role.
    pub(crate) fn of(role: store::Role) -> Self {
        match role {
            store::Role::System => Self::System,
            store::Role::User => Self::User,
            store::Role::Assistant => Self::Assistant,
        }
    }
}

/// `POST /v1/sessions/{id}/turns`: a turn of the chat as it happened, for
/// `chatWith` to replay.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnRequest {
    /// Who spoke.
    pub role: Role,
    /// What was said; not blank.
    #[schema(pattern = r"\S")]
    pub content: String,
}

/// A recorded chat turn.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Turn {
    /// Orders the session's turns.
    pub id: i64,
    /// Who spoke.
    pub role: Role,
    /// What was said.
    pub content: String,
    /// When it was recorded.
    pub created_at: DateTime<Utc>,
}

impl From<store::Turn> for Turn {
    fn from(t: store::Turn) -> Self {
        Self {
            id: t.id,
            role: Role::of(t.role),
            content: t.content,
            created_at: t.created_at,
        }
    }
}

/// The turn as recorded.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TurnResponse {
    /// The stored turn.
    pub turn: Turn,
}
