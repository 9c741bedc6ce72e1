//! Links between executions and sessions: create, list, drop; the
//! worker's poll of the ready ones (`poll`); and which of them are stuck
//! (`stuck`).

mod poll;
pub(crate) mod stuck;

pub use poll::Poll;
#[cfg(feature = "test-support")]
pub(crate) use poll::PENDING_LINKS;

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::store::decode::{self, uuids, RowExt, WINDOW_COLS};
use crate::store::deliveries::notice::{insert_notice, NoticeAbout};
use crate::store::dialect::{query, trunc};
use crate::store::probe::Keys;
use crate::store::types::{DropOutcome, Link, LinkOutcome, Notice, SessionSnapshot, Window};
use crate::store::{dedup, Backend, Result, Store, StoreError};

/// How a link (alias `l`) was settled, NULL while it is not. Rows settled
/// before migration 018 (by the original worker) have `continued_at` set and
/// no `outcome`: they were continued. They are not backfilled (an UPDATE of
/// the whole history would block the runtime's inserts), so every query that
/// reads `outcome` reads it through this rule.
macro_rules! link_outcome {
    () => {
        "CASE WHEN l.continued_at IS NOT NULL THEN COALESCE(l.outcome, 'continued') END"
    };
}
pub(crate) use link_outcome;

/// Link columns joined with the execution's status and the task the link
/// stands for (alias `l` / `e` / `d`; see [`link_joins`]).
pub(crate) const LINK_COLS: &str = concat!(
    "l.execution_id, l.session_id, l.created_at, l.continued_at, l.delivery_id, ",
    link_outcome!(),
    " AS outcome, l.reason, e.status AS execution_status, d.task_source, d.task_id"
);

/// The joins [`LINK_COLS`] reads from, after `FROM nomos_plan_executions l`:
/// each link's execution and side-table row, probed by the link's key.
///
/// On PostgreSQL each is a `LATERAL` subquery behind `OFFSET 0`, which the
/// planner cannot flatten into a join of its choosing: whatever it guesses
/// of how many links qualify, it probes `executions` and `nomos_link_data`
/// by primary key once per link, and never hashes either table whole (at
/// a few thousand links it guessed wrong and read every execution ever
/// reported, issue 64). SQLite's `LEFT JOIN` keeps the link table outside.
pub(crate) fn link_joins(backend: Backend) -> &'static str {
    backend.pick(
        "LEFT JOIN LATERAL (SELECT x.status FROM executions x \
           WHERE x.id = l.execution_id OFFSET 0) e ON TRUE \
         LEFT JOIN LATERAL (SELECT y.task_source, y.task_id FROM nomos_link_data y \
           WHERE y.execution_id = l.execution_id OFFSET 0) d ON TRUE",
        "LEFT JOIN executions e ON e.id = l.execution_id \
         LEFT JOIN nomos_link_data d ON d.execution_id = l.execution_id",
    )
}

/// Links `$1` (an execution) to `$2` (a session) at `$3`: the first link
/// wins (a conflict inserts nothing), and an execution that finished
/// before the link horizon is never linked again. Shared by every writer
/// of a link.
///
/// The execution is looked up by its key alone, the horizon compared as a
/// value: written as a join of the two tables, PostgreSQL planned a
/// sequential scan of `executions` while the table was young (no
/// statistics yet), cached that plan for the connection's prepared
/// statement, and kept reading the whole table on every link as it grew
/// until an `ANALYZE` invalidated it (about 2,100 times its live rows
/// read in a 5-minute load from an empty database, issue 64).
pub(in crate::store) const INSERT_LINK: &str =
    "INSERT INTO nomos_plan_executions (execution_id, session_id, created_at) \
     SELECT $1, $2, $3 WHERE NOT EXISTS (SELECT 1 FROM executions e WHERE e.id = $1 \
       AND e.finished_at < (SELECT max(h.before_at) FROM nomos_link_horizon h)) \
     ON CONFLICT (execution_id) DO NOTHING";

impl Store {
    /// Links executions to the session whose tool result mentioned them.
    ///
    /// Idempotent and first-link-wins: an id already linked to this session
    /// is reported in `already_linked`; one linked to another session is
    /// left there and reported in `already_linked_elsewhere` (a link never
    /// moves). Duplicate ids in the input count once. One transaction, so a
    /// failure links none of them. `now` becomes the link's `created_at`,
    /// the order in which the worker looks at links.
    ///
    /// A new link can make work ready at once (the runtime may report an
    /// execution's status before its tool result is linked), so on
    /// PostgreSQL a `pg_notify` on [`WAKE_CHANNEL`](crate::store::WAKE_CHANNEL) is
    /// sent in the same transaction when anything was newly linked. On
    /// SQLite the caller signals its in-process worker itself.
    ///
    /// An execution whose row in `executions` says it finished before the
    /// link horizon (`nomos_link_horizon`, moved forward by
    /// `Store::purge_links`) is not linked: its link was settled and may
    /// have been purged since, so a new one would continue it twice. It is
    /// reported in `already_linked`, as the link still kept would be.
    pub async fn link(
        &self,
        session_id: Uuid,
        execution_ids: &[Uuid],
        now: DateTime<Utc>,
    ) -> Result<LinkOutcome> {
        let now = trunc(now);
        let mut out = LinkOutcome::default();
        let mut tx = self.begin().await?;
        for id in dedup(execution_ids) {
            let inserted = query(INSERT_LINK)
                .bind(id)
                .bind(session_id)
                .bind(now)
                .execute(&mut tx)
                .await?;
            if inserted == 1 {
                out.linked.push(id);
                continue;
            }
            let owner =
                query("SELECT session_id FROM nomos_plan_executions WHERE execution_id = $1")
                    .bind(id)
                    .fetch_optional(&mut tx)
                    .await?;
            match owner {
                Some(row) => classify(&mut out, id, session_id, row.uuid("session_id")?),
                None => out.already_linked.push(id),
            }
        }
        if !out.linked.is_empty() {
            tx.notify_wake().await?;
        }
        tx.commit().await?;
        Ok(out)
    }

    /// Parks links whose execution the worker found running (or could not
    /// classify): `statuses[i]` is the status `execution_ids[i]` had. The
    /// frequent poll ([`Poll::Unparked`]) skips them from then on, until a
    /// new status is recorded for them or a sweep reads them. A link is
    /// parked only while its execution still has that status and the link
    /// is unsettled and unplanned, in one statement for the whole pass;
    /// returns how many were parked.
    ///
    /// A report that commits while this runs may still see the link
    /// unparked and leave it parked on its old status; the sweep reads it
    /// within one poll interval, so that race delays, never loses.
    pub async fn park_links(&self, execution_ids: &[Uuid], statuses: &[String]) -> Result<u64> {
        if execution_ids.is_empty() {
            return Ok(0);
        }
        let sql = format!(
            "UPDATE nomos_plan_executions AS l SET parked = z.status FROM {} \
             WHERE l.execution_id = z.eid AND l.parked IS NULL \
               AND l.continued_at IS NULL AND l.delivery_id IS NULL \
               AND EXISTS (SELECT 1 FROM executions e \
                   WHERE e.id = z.eid AND e.status = z.status)",
            self.backend()
                .zip("z", &[("$1", "eid", "uuid"), ("$2", "status", "text")])
        );
        query(sql)
            .bind(execution_ids)
            .bind(statuses)
            .execute(self)
            .await
    }

    #[cfg(feature = "test-support")]
    /// The session's unsettled links (pending or planned), oldest first, with
    /// their execution's status if it has reported. For the decision input
    /// ("still running") and for the API.
    pub async fn pending_links_for_session(&self, session_id: Uuid) -> Result<Vec<Link>> {
        let sql = format!(
            "SELECT {LINK_COLS} FROM nomos_plan_executions l {} \
             WHERE l.session_id = $1 AND l.continued_at IS NULL \
             ORDER BY l.created_at, l.execution_id",
            link_joins(self.backend())
        );
        let rows = query(sql).bind(session_id).fetch_all(self).await?;
        rows.iter().map(decode::link).collect()
    }

    /// What the policy's decision input needs about a session at `now`: its
    /// window, whether it is open, the loop-guard count, and its unsettled
    /// links with their statuses.
    ///
    /// Which of those links are still running is left to the caller: the
    /// store does not know which status strings are terminal (the worker
    /// reads them from the stored classes). Two reads, not one snapshot: the
    /// result is advisory input for the policy; the hard checks happen again
    /// in [`Store::plan_continuations`].
    pub async fn session_snapshot(
        &self,
        session_id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<SessionSnapshot> {
        let mut all = self.session_snapshots(&[session_id], now).await?;
        all.pop()
            .ok_or(StoreError::Database(sqlx::Error::RowNotFound))
    }

    /// [`Store::session_snapshot`] of many sessions in two queries run at
    /// once (their windows, their unsettled links), whatever their number: a pass
    /// decides for thousands of sessions, and one round trip each would be
    /// most of its cost. One snapshot per distinct session, in the order
    /// of `session_ids`.
    pub async fn session_snapshots(
        &self,
        session_ids: &[Uuid],
        now: DateTime<Utc>,
    ) -> Result<Vec<SessionSnapshot>> {
        let ids = dedup(session_ids);
        let backend = self.backend();
        let windows_sql = format!(
            "SELECT {WINDOW_COLS} FROM nomos_assent_windows WHERE session_id {}",
            backend.in_ids("$1")
        );
        // Each session's unsettled links probed by the session's key, and
        // each link's execution by its own (see `link_joins`).
        let links_sql = format!(
            "SELECT {LINK_COLS} FROM {} {} \
             ORDER BY l.session_id, l.created_at, l.execution_id",
            backend.rows_by_keys(
                Keys::new("nomos_plan_executions", "session_id", "$1", "l")
                    .filtered(" AND continued_at IS NULL")
            ),
            link_joins(backend),
        );
        // Both at once, on two connections.
        let (windows_query, links_query) =
            (query(windows_sql).bind(&ids), query(links_sql).bind(&ids));
        let (window_rows, link_rows) =
            tokio::try_join!(windows_query.fetch_all(self), links_query.fetch_all(self))?;
        let mut windows: HashMap<Uuid, Window> = window_rows
            .iter()
            .map(|r| decode::window(r).map(|w| (w.session_id, w)))
            .collect::<Result<_>>()?;
        let mut links: HashMap<Uuid, Vec<Link>> = HashMap::new();
        for row in &link_rows {
            let link = decode::link(row)?;
            links.entry(link.session_id).or_default().push(link);
        }
        Ok(ids
            .into_iter()
            .map(|session_id| {
                let window = windows.remove(&session_id);
                SessionSnapshot {
                    session_id,
                    window_open: window.as_ref().is_some_and(|w| w.is_open_at(now)),
                    continuations_in_window: window.as_ref().map_or(0, |w| w.continuations),
                    window,
                    unsettled: links.remove(&session_id).unwrap_or_default(),
                }
            })
            .collect())
    }

    /// Settles links as dropped (the policy or a host guard decided not to
    /// continue them) and records at most one notice about it, but only while
    /// the session's window row is as the caller saw it when deciding
    /// (`guard: Some(window_seen)`: its `updated_at`, or `None` for no row):
    /// an approval that lands after the decision changes the row, and the
    /// links are left for the next decision rather than dropped on a stale
    /// "window closed". Nothing is written when the window changed; `guard:
    /// None` drops unconditionally.
    ///
    /// Only links of `session_id` that are still pending (not settled, not
    /// planned) are dropped; the others are left alone and not reported.
    /// The notice (kind `notice`, `execution_ids` = the links dropped by this
    /// call) is written only if this call dropped something, and at most once
    /// per idempotency key: a repeat with the same key writes nothing. One
    /// transaction: the links and the notice change together or not at all.
    pub async fn drop_links_seen(
        &self,
        session_id: Uuid,
        execution_ids: &[Uuid],
        reason: &str,
        notice: Option<Notice<'_>>,
        now: DateTime<Utc>,
        guard: Option<Option<DateTime<Utc>>>,
    ) -> Result<DropOutcome> {
        let now = trunc(now);
        let ids = dedup(execution_ids);
        let mut out = DropOutcome::default();
        let mut tx = self.begin().await?;
        let sql = format!(
            "UPDATE nomos_plan_executions \
             SET continued_at = $1, outcome = 'dropped', reason = $2 \
             WHERE session_id = $3 AND execution_id {} \
               AND continued_at IS NULL AND delivery_id IS NULL {} \
             RETURNING execution_id",
            tx.backend().in_ids("$4"),
            if guard.is_some() {
                "AND (SELECT updated_at FROM nomos_assent_windows WHERE session_id = $3) \
                 IS NOT DISTINCT FROM $5"
            } else {
                ""
            }
        );
        let mut update = query(sql)
            .bind(now)
            .bind(reason)
            .bind(session_id)
            .bind(&ids);
        if let Some(seen) = guard {
            update = update.bind(seen.map(trunc));
        }
        out.dropped = uuids(&update.fetch_all(&mut tx).await?, "execution_id")?;
        order_like(&mut out.dropped, &ids);
        if let (Some(n), false) = (notice, out.dropped.is_empty()) {
            let about = NoticeAbout {
                session_id,
                execution_ids: &out.dropped,
                policy_revision: n.policy_revision,
            };
            out.notice = insert_notice(&mut tx, about, n.idempotency_key, n.message, now).await?;
        }
        tx.commit().await?;
        Ok(out)
    }
}

/// Sorts `which` into the order the ids appear in `order` (the caller's).
fn order_like(which: &mut [Uuid], order: &[Uuid]) {
    which.sort_by_key(|id| order.iter().position(|o| o == id).unwrap_or(usize::MAX));
}

/// Files an id that was already linked under the right heading.
fn classify(out: &mut LinkOutcome, id: Uuid, session_id: Uuid, owner: Uuid) {
    if owner == session_id {
        out.already_linked.push(id);
    } else {
        out.already_linked_elsewhere.push((id, owner));
    }
}
