//! What comes in, whoever brings it: the domain operations a runtime (or
//! an agent, or a poller) asks of the engine, as plain async methods over
//! the store and the policy, with domain errors.
//!
//! Why a layer of its own: the rules of a tool result's links, of a status
//! report's class and of a push's token are the same whether the request
//! came over HTTP, from the console, from the A2A poller, or from a
//! runtime that embeds the engine and calls [`Intake`] in process. `api`
//! parses, authorises and maps an [`IntakeError`] to a problem document;
//! it decides nothing here.
//!
//! - `links`: a tool result's executions and protocol tasks, linked.
//! - `reports`: one status report, the one path every report takes.
//! - `windows`: approving and denying (the assent window), chat turns.
//! - `deliveries`: the operator's retry and drop of a ledger row.
//! - `session_push`: a session's push configuration, and a push under it
//!   (which links its task on the first).
//! - `tasks`: a session's protocol task and its push configuration, an
//!   A2A push or `GetTask` answer, an MCP task update.

mod a2a;
mod deliveries;
mod links;
mod mcp;
mod reports;
mod session_push;
mod tasks;
mod windows;

use std::sync::Arc;

use tokio::sync::{mpsc, Notify};
use uuid::Uuid;

use crate::classes::StatusClasses;
use crate::clock::Clock;
use crate::policy::{Limits, PolicyRuntime};
use crate::store::{Store, StoreError};

pub use links::Linked;
pub use reports::Recorded;
pub use session_push::{SessionPushConfiguration, MAX_SESSION_TASKS};
pub(crate) use tasks::token_sha256;
pub use tasks::{McpRecorded, PushConfiguration, TaskRegistered, TaskRegistration};

/// Most bytes of an execution's status: statuses are short words
/// (`running`, `completed`); a longer one is not a status.
pub const MAX_STATUS_BYTES: usize = 1 << 10;
/// Most bytes of a chat turn: a turn this long is already beyond what
/// `chatWith` replays, so more would only fill the table.
pub const MAX_TURN_BYTES: usize = 1 << 20;

/// The most bytes of an execution's result: the policy's input cap less
/// the status, since the policy reads both.
pub fn max_result_bytes(limits: &Limits) -> usize {
    limits.max_text_bytes.saturating_sub(MAX_STATUS_BYTES)
}

/// Why an operation was refused or failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IntakeError {
    /// The input is malformed (a bad id, an empty status, a bad value).
    #[error("{0}")]
    Invalid(String),
    /// A text over its cap: it can never succeed as sent.
    #[error("{limit} is over its limit of {max} bytes")]
    TooLarge {
        /// The limit's name.
        limit: &'static str,
        /// Its size in bytes.
        max: usize,
    },
    /// Nothing has the id (a delivery).
    #[error("{0}")]
    NotFound(String),
    /// The input conflicts with what is stored (a task linked to another
    /// session, a delivery that cannot be retried or dropped now).
    #[error("{0}")]
    Conflict(String),
    /// A push token that opens nothing: missing, wrong, expired, or for an
    /// execution that does not exist (one answer for all, so a caller
    /// learns nothing of which executions exist).
    #[error("missing or wrong push token")]
    WrongToken,
    /// A push that names another task than its token's (or, under a
    /// session's token, another session's task, or a new one after the
    /// configuration stopped linking).
    #[error("{0}")]
    OtherTask(String),
    /// The session has linked its most tasks through its push
    /// configurations: a bound, not a rate; waiting does not lift it.
    #[error("the session has linked its {max} tasks through its push configurations")]
    TaskLimit {
        /// The bound.
        max: i64,
    },
    /// The policy could not answer (it trapped or timed out); worth
    /// retrying.
    #[error("policy unavailable: {0}")]
    PolicyUnavailable(String),
    /// A condition that passes (a slow read, a race lost too often);
    /// worth retrying.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// The store failed; [`StoreError::is_transient`] says whether a retry
    /// may succeed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A fault retrying cannot mend.
    #[error("internal error: {0}")]
    Internal(String),
}

/// Refuses text over `max` bytes, naming the limit.
pub(crate) fn cap_text(limit: &'static str, text: &str, max: usize) -> Result<(), IntakeError> {
    if text.len() > max {
        return Err(IntakeError::TooLarge { limit, max });
    }
    Ok(())
}

/// Refuses text with a NUL character before it reaches the store:
/// PostgreSQL cannot store one in a `TEXT` column while SQLite can, and the
/// same input must get the same answer from either backend.
pub(crate) fn storable(field: &str, text: &str) -> Result<(), IntakeError> {
    if text.contains('\0') {
        return Err(IntakeError::Invalid(format!(
            "{field} must not contain a NUL character"
        )));
    }
    Ok(())
}

/// The engine's way in: what a runtime writes, however it reaches this
/// process. Cheap to clone; every clone shares the store, the policy and
/// the worker's wake-up.
#[derive(Clone)]
pub struct Intake {
    store: Store,
    policy: Arc<PolicyRuntime>,
    classes: StatusClasses,
    clock: Arc<dyn Clock>,
    wake: Arc<Notify>,
    public_url: String,
    /// Where a task registered with its agent's address is announced, to
    /// be asked about soon (the A2A poller's, see `maintenance`).
    asks: Option<mpsc::UnboundedSender<Uuid>>,
}

impl std::fmt::Debug for Intake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Intake")
            .field("public_url", &self.public_url)
            .finish_non_exhaustive()
    }
}

impl Intake {
    /// Over `store` (the API's request store: its wait for a connection is
    /// short), the policy and its status classes, acting at `clock`'s now
    /// and waking the worker through `wake`; push URLs start with
    /// `public_url` (no trailing slash).
    pub(crate) fn new(
        store: Store,
        policy: Arc<PolicyRuntime>,
        classes: StatusClasses,
        clock: Arc<dyn Clock>,
        wake: Arc<Notify>,
        public_url: String,
    ) -> Self {
        let classes = classes.through(store.clone());
        Self {
            store,
            policy,
            classes,
            clock,
            wake,
            public_url,
            asks: None,
        }
    }

    /// Announces each task registered with its agent's address on
    /// `asks`, so the poller asks about it soon: a task that ended before
    /// its push configuration existed was never pushed.
    pub(crate) fn asking_soon(mut self, asks: mpsc::UnboundedSender<Uuid>) -> Self {
        self.asks = Some(asks);
        self
    }

    /// The policy's limits, which bound what comes in.
    pub fn limits(&self) -> &Limits {
        self.policy.limits()
    }

    /// The base URL minted push URLs start with.
    pub fn public_url(&self) -> &str {
        &self.public_url
    }
}
