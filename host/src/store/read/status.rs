//! A session's status in one word, judged in SQL so that a list can be
//! filtered by it: what an operator at 3 a.m. looks for first.
//!
//! # Precedence
//!
//! Several may hold at once (an execution failed, and another is stuck);
//! a session shows the first that holds, in this order, the most urgent
//! first:
//!
//! 1. `stuck`: its window is open now and a linked execution has not
//!    finished although it was linked more than `stuck_after` ago (the
//!    agent is waiting on work that may never end).
//! 2. `delivery-failed`: a delivery (continuation or notice) ended
//!    `failed` and was not retried (a result or a notice reached no one
//!    through the agent).
//! 3. `dropped`: an execution was settled `dropped` (its result was never
//!    fed back: the window closed, a loop guard, the policy said so).
//! 4. `execution-failed`: a linked execution finished with a status the
//!    policy classified `failed` (the agent was told, or will be).
//! 5. `waiting`: an execution finished and is not settled yet (its
//!    continuation is being decided or delivered); for how long is
//!    [`StatusSql::WAITING_SINCE`].
//! 6. `ok`: none of these.
//!
//! The conditions are index probes per session (its links through 020's
//! session index, its deliveries through the ledger's session index).

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::store::StoreError;

/// A session's status (see the module docs for when each holds and which
/// wins).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub enum SessionStatus {
    /// Nothing below holds.
    #[default]
    Ok,
    /// A linked execution finished with a status classified `failed`.
    ExecutionFailed,
    /// A delivery ended `failed` and was not retried.
    DeliveryFailed,
    /// An execution was settled `dropped`.
    Dropped,
    /// A finished execution waits for its continuation.
    Waiting,
    /// An execution linked in an open window has not finished after
    /// `stuck_after`.
    Stuck,
}

impl SessionStatus {
    /// Every status, in precedence order (the most urgent first).
    pub const PRECEDENCE: [SessionStatus; 6] = [
        Self::Stuck,
        Self::DeliveryFailed,
        Self::Dropped,
        Self::ExecutionFailed,
        Self::Waiting,
        Self::Ok,
    ];

    /// The name in a query string and on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::ExecutionFailed => "execution-failed",
            Self::DeliveryFailed => "delivery-failed",
            Self::Dropped => "dropped",
            Self::Waiting => "waiting",
            Self::Stuck => "stuck",
        }
    }

    /// Whether an operator should look (every status but `ok` and
    /// `waiting`).
    pub fn is_trouble(self) -> bool {
        !matches!(self, Self::Ok | Self::Waiting)
    }
}

impl fmt::Display for SessionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SessionStatus {
    type Err = StoreError;

    fn from_str(s: &str) -> Result<Self, StoreError> {
        Self::PRECEDENCE
            .into_iter()
            .find(|status| status.name() == s)
            .ok_or_else(|| StoreError::InvalidValue {
                field: "status",
                reason: format!(
                    "{s:?} is not one of stuck, delivery-failed, dropped, execution-failed, \
                     waiting, ok"
                ),
            })
    }
}

/// The instant statuses are judged at, and how long an execution may run
/// in an open window before it counts as stuck.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Judged {
    /// Now.
    pub now: DateTime<Utc>,
    /// The serve flag's `stuck_after` (default ten minutes).
    pub stuck_after: Duration,
}

impl Judged {
    /// At `now`, stuck after `stuck_after`.
    pub fn at(now: DateTime<Utc>, stuck_after: std::time::Duration) -> Self {
        Self {
            now,
            stuck_after: Duration::from_std(stuck_after).unwrap_or(Duration::MAX),
        }
    }

    /// Links created at or before this instant are old enough to be stuck.
    pub(crate) fn stuck_before(&self) -> DateTime<Utc> {
        self.now
            .checked_sub_signed(self.stuck_after)
            .unwrap_or(DateTime::<Utc>::MIN_UTC)
    }
}

/// The SQL of the statuses on `s` (a `nomos_sessions` row), with `now` and
/// the stuck instant bound as the placeholders given.
pub(crate) struct StatusSql;

impl StatusSql {
    /// When the session's oldest finished, unsettled execution finished.
    pub(crate) const WAITING_SINCE: &'static str = "(SELECT MIN(e.finished_at) \
         FROM nomos_plan_executions l JOIN executions e ON e.id = l.execution_id \
         WHERE l.session_id = s.session_id AND l.continued_at IS NULL \
           AND e.finished_at IS NOT NULL)";

    /// The last reason given for a drop or a failure, as two candidates
    /// the caller compares (a link's reason, a delivery's last error, each
    /// with its time): whichever was written last.
    pub(crate) const LAST_REASONS: &'static str = "(SELECT l.reason FROM nomos_plan_executions l \
           WHERE l.session_id = s.session_id AND l.reason IS NOT NULL \
           ORDER BY l.continued_at DESC LIMIT 1) AS link_reason, \
         (SELECT MAX(l.continued_at) FROM nomos_plan_executions l \
           WHERE l.session_id = s.session_id AND l.reason IS NOT NULL) AS link_reason_at, \
         (SELECT d.last_error FROM nomos_deliveries d \
           WHERE d.session_id = s.session_id AND d.last_error IS NOT NULL \
           ORDER BY d.updated_at DESC LIMIT 1) AS delivery_reason, \
         (SELECT MAX(d.updated_at) FROM nomos_deliveries d \
           WHERE d.session_id = s.session_id AND d.last_error IS NOT NULL) AS delivery_reason_at";

    /// The latest time anything of the session was written: links linked
    /// or settled, executions reported, deliveries changed.
    pub(crate) const ACTIVITY: &'static str =
        "(SELECT MAX(COALESCE(l.continued_at, l.created_at)) \
           FROM nomos_plan_executions l WHERE l.session_id = s.session_id) AS link_activity, \
         (SELECT MAX(e.updated_at) FROM nomos_plan_executions l \
           JOIN executions e ON e.id = l.execution_id \
           WHERE l.session_id = s.session_id) AS execution_activity, \
         (SELECT MAX(d.updated_at) FROM nomos_deliveries d \
           WHERE d.session_id = s.session_id) AS delivery_activity";

    /// The condition for `status` alone (not its precedence).
    fn holds(status: SessionStatus, now: &str, stuck_before: &str) -> String {
        match status {
            SessionStatus::Stuck => format!(
                "EXISTS (SELECT 1 FROM nomos_assent_windows w \
                   WHERE w.session_id = s.session_id AND w.closed_at IS NULL \
                     AND w.expires_at > {now}) \
                 AND EXISTS (SELECT 1 FROM nomos_plan_executions l \
                   LEFT JOIN executions e ON e.id = l.execution_id \
                   WHERE l.session_id = s.session_id AND l.continued_at IS NULL \
                     AND e.finished_at IS NULL AND l.created_at <= {stuck_before})"
            ),
            SessionStatus::DeliveryFailed => "EXISTS (SELECT 1 FROM nomos_deliveries d \
                 WHERE d.session_id = s.session_id AND d.state = 'failed')"
                .into(),
            SessionStatus::Dropped => "EXISTS (SELECT 1 FROM nomos_plan_executions l \
                 WHERE l.session_id = s.session_id AND l.outcome = 'dropped')"
                .into(),
            SessionStatus::ExecutionFailed => "EXISTS (SELECT 1 FROM nomos_plan_executions l \
                 JOIN executions e ON e.id = l.execution_id \
                 WHERE l.session_id = s.session_id AND e.finished_at IS NOT NULL \
                   AND EXISTS (SELECT 1 FROM nomos_status_classes c \
                     WHERE c.status = e.status AND c.outcome = 'failed'))"
                .into(),
            SessionStatus::Waiting => format!("{} IS NOT NULL", Self::WAITING_SINCE),
            SessionStatus::Ok => "TRUE".into(),
        }
    }

    /// The status as one `CASE`, the precedence its order.
    pub(crate) fn case(now: &str, stuck_before: &str) -> String {
        let arms: Vec<String> = SessionStatus::PRECEDENCE
            .into_iter()
            .filter(|s| *s != SessionStatus::Ok)
            .map(|s| {
                format!(
                    "WHEN {} THEN '{}'",
                    Self::holds(s, now, stuck_before),
                    s.name()
                )
            })
            .collect();
        format!("CASE {} ELSE 'ok' END", arms.join(" "))
    }

    /// Linked executions whose status is classified `failed`.
    pub(crate) const FAILED_EXECUTIONS: &'static str = "(SELECT COUNT(*) \
         FROM nomos_plan_executions l JOIN executions e ON e.id = l.execution_id \
         WHERE l.session_id = s.session_id AND e.finished_at IS NOT NULL \
           AND EXISTS (SELECT 1 FROM nomos_status_classes c \
             WHERE c.status = e.status AND c.outcome = 'failed'))";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_reads_back_from_its_name() {
        for status in SessionStatus::PRECEDENCE {
            assert_eq!(status.name().parse::<SessionStatus>().ok(), Some(status));
        }
        assert!("failed".parse::<SessionStatus>().is_err());
    }

    #[test]
    fn the_case_tries_the_statuses_in_precedence_order() {
        let case = StatusSql::case("$2", "$3");
        let at = |name: &str| case.find(&format!("THEN '{name}'")).expect("an arm");
        assert!(at("stuck") < at("delivery-failed"));
        assert!(at("delivery-failed") < at("dropped"));
        assert!(at("dropped") < at("execution-failed"));
        assert!(at("execution-failed") < at("waiting"));
        assert!(case.ends_with("ELSE 'ok' END"));
    }
}
