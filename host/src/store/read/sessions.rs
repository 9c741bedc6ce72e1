//! Sessions a page at a time, newest first, for the console: each with its
//! window, its status (`status`), last reason and last activity, and what
//! is still open in it (executions in flight, deliveries pending or failed,
//! notices), optionally filtered; and the reads one page of a session's
//! timeline needs beside `session`'s lists.
//!
//! A notice is one concept everywhere: a `nomos_deliveries` row of kind
//! `notice` (with its row in `nomos_operator_notices`, the operator's
//! channel). `chatWith`'s copy of it in `nomos_notices` is the agent's
//! history, not counted here.
//!
//! # Why a table of sessions
//!
//! A session is only an id on other rows. `nomos_sessions` (made in
//! migration 018 and kept by triggers, filled from the history in 024)
//! lists each once with the time it was first seen, so a page is a keyset scan of that table's index, and each row's
//! counts are index probes bounded by the page size. A filter is an
//! `EXISTS` per row scanned: a page of a rare filter reads further back.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::store::decode::{self, RowExt, WINDOW_COLS};
use crate::store::dialect::{query, trunc};
use crate::store::read::session::{into_page, time_and_id};
use crate::store::read::status::{Judged, SessionStatus, StatusSql};
use crate::store::types::Window;
use crate::store::{check_limit, Backend, Page, Result, Store, StoreError};

/// Which sessions a page lists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SessionFilter {
    /// Every session.
    #[default]
    All,
    /// With a window open now.
    Open,
    /// With a linked execution not settled yet.
    InFlight,
    /// With a delivery that gave up.
    Failed,
    /// With a notice (a delivery of kind `notice`).
    Noticed,
}

impl SessionFilter {
    /// Every filter, in the order the console offers them.
    pub const ALL: [SessionFilter; 5] = [
        Self::All,
        Self::Open,
        Self::InFlight,
        Self::Failed,
        Self::Noticed,
    ];

    /// The name in a query string.
    pub fn name(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::Open => "open",
            Self::InFlight => "in-flight",
            Self::Failed => "failed",
            Self::Noticed => "notices",
        }
    }

    /// The condition on `s` (a `nomos_sessions` row); only [`Self::Open`]
    /// reads the time, bound as `now`.
    fn condition(self, now: &str) -> String {
        let text = match self {
            Self::All => "TRUE",
            Self::Open => {
                return format!(
                    "EXISTS (SELECT 1 FROM nomos_assent_windows w \
                     WHERE w.session_id = s.session_id AND w.closed_at IS NULL \
                     AND w.expires_at > {now})"
                )
            }
            Self::InFlight => {
                "EXISTS (SELECT 1 FROM nomos_plan_executions l WHERE l.session_id = s.session_id \
                 AND l.continued_at IS NULL)"
            }
            Self::Failed => {
                "EXISTS (SELECT 1 FROM nomos_deliveries d WHERE d.session_id = s.session_id \
                 AND d.state = 'failed')"
            }
            Self::Noticed => {
                "EXISTS (SELECT 1 FROM nomos_deliveries d WHERE d.session_id = s.session_id \
                 AND d.kind = 'notice')"
            }
        };
        text.to_owned()
    }
}

impl FromStr for SessionFilter {
    type Err = StoreError;

    fn from_str(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| StoreError::InvalidValue {
                field: "filter",
                reason: format!("{s:?} is not one of all, open, in-flight, failed, notices"),
            })
    }
}

/// Keyset position in the list of sessions, newest first
/// (`(first_seen_at, session_id)` descending).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionCursor {
    /// `first_seen_at` of the last session returned.
    pub first_seen_at: DateTime<Utc>,
    /// Its id.
    pub session_id: Uuid,
}

const SESSION_TAG: &str = "s1";

impl fmt::Display for SessionCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let micros = self.first_seen_at.timestamp_micros();
        write!(f, "{SESSION_TAG}.{micros}.{}", self.session_id)
    }
}

impl FromStr for SessionCursor {
    type Err = StoreError;

    fn from_str(text: &str) -> Result<Self> {
        let (first_seen_at, session_id) = time_and_id(SESSION_TAG, text)?;
        Ok(Self {
            first_seen_at,
            session_id,
        })
    }
}

/// One session as the list shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionRow {
    /// The session.
    pub session_id: Uuid,
    /// Its first link or approval.
    pub first_seen_at: DateTime<Utc>,
    /// Its window, if it was ever approved.
    pub window: Option<Window>,
    /// Linked executions not settled yet.
    pub in_flight: i64,
    /// Deliveries not completed yet.
    pub pending: i64,
    /// Deliveries that gave up.
    pub failed: i64,
    /// Linked executions that finished with a status classified `failed`.
    pub failed_executions: i64,
    /// Notices: deliveries of kind `notice`.
    pub notices: i64,
    /// Its status at the instant it was read (see `read::status`).
    pub status: SessionStatus,
    /// When its oldest finished, unsettled execution finished (what
    /// `waiting` waits since).
    pub waiting_since: Option<DateTime<Utc>>,
    /// The last drop reason or delivery error written, if any.
    pub last_reason: Option<String>,
    /// The last time anything of it was written (its window included).
    pub last_activity: DateTime<Utc>,
}

/// The columns of a [`SessionRow`] but its window, on `s`, with `now` and
/// the stuck instant bound as `now` and `stuck_before`.
fn row_cols(now: &str, stuck_before: &str) -> String {
    format!(
        "s.session_id, s.first_seen_at, \
         (SELECT COUNT(*) FROM nomos_plan_executions l \
           WHERE l.session_id = s.session_id AND l.continued_at IS NULL) AS in_flight, \
         (SELECT COUNT(*) FROM nomos_deliveries d \
           WHERE d.session_id = s.session_id AND d.state = 'pending') AS pending, \
         (SELECT COUNT(*) FROM nomos_deliveries d \
           WHERE d.session_id = s.session_id AND d.state = 'failed') AS failed, \
         {} AS failed_executions, \
         (SELECT COUNT(*) FROM nomos_deliveries d \
           WHERE d.session_id = s.session_id AND d.kind = 'notice') AS notices, \
         {} AS status, {} AS waiting_since, {}, {}",
        StatusSql::FAILED_EXECUTIONS,
        StatusSql::case(now, stuck_before),
        StatusSql::WAITING_SINCE,
        StatusSql::LAST_REASONS,
        StatusSql::ACTIVITY,
    )
}

fn row<R: RowExt>(r: &R) -> Result<SessionRow> {
    let first_seen_at = r.time("first_seen_at")?;
    let link_reason = r
        .opt_time("link_reason_at")?
        .zip(r.opt_text("link_reason")?);
    let delivery_reason = r
        .opt_time("delivery_reason_at")?
        .zip(r.opt_text("delivery_reason")?);
    let last_reason = match (link_reason, delivery_reason) {
        (Some(l), Some(d)) => Some(if d.0 >= l.0 { d.1 } else { l.1 }),
        (l, d) => l.or(d).map(|(_, why)| why),
    };
    let mut last_activity = first_seen_at;
    for col in ["link_activity", "execution_activity", "delivery_activity"] {
        if let Some(t) = r.opt_time(col)? {
            last_activity = last_activity.max(t);
        }
    }
    Ok(SessionRow {
        session_id: r.uuid("session_id")?,
        first_seen_at,
        window: None,
        in_flight: r.bigint("in_flight")?,
        pending: r.bigint("pending")?,
        failed: r.bigint("failed")?,
        failed_executions: r.bigint("failed_executions")?,
        notices: r.bigint("notices")?,
        status: r.parsed("status")?,
        waiting_since: r.opt_time("waiting_since")?,
        last_reason,
        last_activity,
    })
}

impl Store {
    /// One page of sessions passing `filter` (and showing `status`, if
    /// given), newest first, after `after`; statuses and open windows are
    /// judged at `judged`.
    pub async fn sessions_page(
        &self,
        filter: SessionFilter,
        status: Option<SessionStatus>,
        after: Option<SessionCursor>,
        limit: u32,
        judged: Judged,
    ) -> Result<Page<SessionRow, SessionCursor>> {
        let limit = check_limit(limit)?;
        // Placeholders: `$1` the limit, `$2` now, `$3` the stuck instant,
        // then the status if one is asked for, then the cursor.
        let mut at = 4;
        let status_is = match status {
            Some(_) => {
                at += 1;
                format!("AND {} = $4", StatusSql::case("$2", "$3"))
            }
            None => String::new(),
        };
        let keyset = match after {
            Some(_) => format!(
                "AND s.first_seen_at <= ${at} AND (s.first_seen_at, s.session_id) < (${at}, ${})",
                at + 1
            ),
            None => String::new(),
        };
        let sql = format!(
            "SELECT {} FROM nomos_sessions s WHERE {} {status_is} {keyset} \
             ORDER BY s.first_seen_at DESC, s.session_id DESC LIMIT $1",
            row_cols("$2", "$3"),
            filter.condition("$2")
        );
        let mut q = query(sql)
            .bind(i64::from(limit) + 1)
            .bind(trunc(judged.now))
            .bind(trunc(judged.stuck_before()));
        if let Some(status) = status {
            q = q.bind(status.name());
        }
        if let Some(c) = after {
            q = q.bind(c.first_seen_at).bind(c.session_id);
        }
        let rows = match self.backend() {
            // Each row's status is a handful of correlated subqueries, which
            // PostgreSQL's estimates price far above their cost: a status
            // filter over 11,000 sessions was planned with JIT compilation,
            // 3.3 s of compiling for 0.3 s of work. Off for this read only.
            Backend::Postgres => {
                let mut tx = self.begin().await?;
                query("SET LOCAL jit = off").execute(&mut tx).await?;
                let rows = q.fetch_all(&mut tx).await?;
                tx.commit().await?;
                rows
            }
            Backend::Sqlite => q.fetch_all(self).await?,
        };
        let mut rows = rows.iter().map(row).collect::<Result<Vec<_>>>()?;
        self.with_windows(&mut rows).await?;
        Ok(into_page(rows, limit, |r| SessionCursor {
            first_seen_at: r.first_seen_at,
            session_id: r.session_id,
        }))
    }

    /// The session as the list shows it at `judged`, `None` if it was never
    /// seen.
    pub async fn session_row(
        &self,
        session_id: Uuid,
        judged: Judged,
    ) -> Result<Option<SessionRow>> {
        let sql = format!(
            "SELECT {} FROM nomos_sessions s WHERE s.session_id = $1",
            row_cols("$2", "$3")
        );
        let found = query(sql)
            .bind(session_id)
            .bind(trunc(judged.now))
            .bind(trunc(judged.stuck_before()))
            .fetch_optional(self)
            .await?;
        let mut rows: Vec<SessionRow> = found.as_ref().map(row).transpose()?.into_iter().collect();
        self.with_windows(&mut rows).await?;
        Ok(rows.pop())
    }

    /// Whether the session was ever seen (linked or approved): a list's
    /// existence check, without the counts [`Store::session_row`] reads.
    pub async fn session_known(&self, session_id: Uuid) -> Result<bool> {
        let found = query("SELECT 1 AS one FROM nomos_sessions WHERE session_id = $1")
            .bind(session_id)
            .fetch_optional(self)
            .await?;
        Ok(found.is_some())
    }

    /// Fills each row's window, in one query for the page.
    async fn with_windows(&self, rows: &mut [SessionRow]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let ids: Vec<Uuid> = rows.iter().map(|r| r.session_id).collect();
        let sql = format!(
            "SELECT {WINDOW_COLS} FROM nomos_assent_windows WHERE session_id {}",
            self.backend().in_ids("$1")
        );
        let found = query(sql).bind(&ids).fetch_all(self).await?;
        for window in found.iter().map(decode::window) {
            let window = window?;
            if let Some(r) = rows.iter_mut().find(|r| r.session_id == window.session_id) {
                r.last_activity = r.last_activity.max(window.updated_at);
                r.window = Some(window);
            }
        }
        Ok(())
    }

    /// The session an execution is linked to, if it is linked.
    pub async fn session_of_execution(&self, execution_id: Uuid) -> Result<Option<Uuid>> {
        let found = query("SELECT session_id FROM nomos_plan_executions WHERE execution_id = $1")
            .bind(execution_id)
            .fetch_optional(self)
            .await?;
        found.map(|r| r.uuid("session_id")).transpose()
    }
}
