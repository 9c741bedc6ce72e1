//! Links whose execution is taking too long: linked, inside an assent
//! window that is open now, and not finished after a threshold. Each gets
//! one notice, and one more when its window is about to close with it
//! still running (after which its result could no longer be continued).

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::store::decode::RowExt;
use crate::store::dialect::{query, trunc};
use crate::store::{Result, Store};

/// The prefix of a stuck execution's first notice key; the execution id
/// follows.
pub const STUCK_KEY: &str = "stuck-";
/// The prefix of the notice sent when its window is about to close.
pub const STUCK_CLOSING_KEY: &str = "stuck-closing-";

/// One execution that has run past the threshold inside an open window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StuckExecution {
    /// The execution.
    pub execution_id: Uuid,
    /// Its session.
    pub session_id: Uuid,
    /// When it was linked.
    pub linked_at: DateTime<Utc>,
    /// Its last reported status, if it has reported one.
    pub status: Option<String>,
    /// When its session's window closes.
    pub window_expires_at: DateTime<Utc>,
    /// Whether the first notice about it has been written.
    pub noticed: bool,
    /// Whether the notice about its window closing has been written.
    pub closing_noticed: bool,
}

/// Unsettled links in an open window (`$1`: now), linked at or before
/// `$2`, whose execution has not finished; through the seed's partial index
/// on unsettled links, so the cost is the unsettled links, not the history.
fn stuck_sql(id_text: &str) -> String {
    format!(
        "SELECT l.execution_id, l.session_id, l.created_at AS linked_at, e.status, \
           w.expires_at, \
           CAST(CASE WHEN EXISTS (SELECT 1 FROM nomos_deliveries d \
                   WHERE d.idempotency_key = '{STUCK_KEY}' || {id_text}) \
             THEN 1 ELSE 0 END AS BIGINT) AS noticed, \
           CAST(CASE WHEN EXISTS (SELECT 1 FROM nomos_deliveries d \
                   WHERE d.idempotency_key = '{STUCK_CLOSING_KEY}' || {id_text}) \
             THEN 1 ELSE 0 END AS BIGINT) AS closing_noticed \
         FROM nomos_plan_executions l \
         JOIN nomos_assent_windows w ON w.session_id = l.session_id \
         LEFT JOIN executions e ON e.id = l.execution_id \
         WHERE l.continued_at IS NULL AND l.created_at <= $2 \
           AND w.closed_at IS NULL AND w.expires_at > $1 \
           AND e.finished_at IS NULL \
         ORDER BY l.created_at, l.execution_id"
    )
}

impl Store {
    /// How many executions are stuck at `now` (see
    /// [`Store::stuck_executions`]), for `/metrics`.
    pub async fn count_stuck_executions(&self, now: DateTime<Utc>, after: Duration) -> Result<i64> {
        let id_text = self
            .backend()
            .pick("l.execution_id::text", "l.execution_id");
        let sql = format!("SELECT COUNT(*) AS n FROM ({}) s", stuck_sql(id_text));
        let row = query(sql)
            .bind(trunc(now))
            .bind(trunc(now - after))
            .fetch_one(self)
            .await?;
        row.bigint("n")
    }

    /// Every execution stuck at `now`: linked at least `after` ago, in a
    /// window open now, not finished. Whether each has had its notices is
    /// part of the answer, so the watcher writes only the missing ones and
    /// `/metrics` counts all of them.
    pub async fn stuck_executions(
        &self,
        now: DateTime<Utc>,
        after: Duration,
    ) -> Result<Vec<StuckExecution>> {
        let id_text = self
            .backend()
            .pick("l.execution_id::text", "l.execution_id");
        let rows = query(stuck_sql(id_text))
            .bind(trunc(now))
            .bind(trunc(now - after))
            .fetch_all(self)
            .await?;
        rows.iter()
            .map(|r| {
                Ok(StuckExecution {
                    execution_id: r.uuid("execution_id")?,
                    session_id: r.uuid("session_id")?,
                    linked_at: r.time("linked_at")?,
                    status: r.opt_text("status")?,
                    window_expires_at: r.time("expires_at")?,
                    noticed: r.bigint("noticed")? != 0,
                    closing_noticed: r.bigint("closing_noticed")? != 0,
                })
            })
            .collect()
    }
}
