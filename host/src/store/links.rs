//! Links between executions and sessions: create, list, drop.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::decode;
use super::types::{
    DeliveryKind, DropOutcome, Link, LinkOutcome, Notice, PendingCursor, ReadyLink, SessionSnapshot,
};
use super::{dedup, json_ids, micros, trunc, Db, Result, Store, SQLITE_BEGIN};

/// Link columns joined with the execution's status (alias `l` / `e`).
pub(crate) const LINK_COLS: &str = "l.execution_id, l.session_id, l.created_at, l.continued_at, \
     l.delivery_id, l.outcome, l.reason, e.status AS execution_status";

/// Pending-links query columns (alias `l` / `e`), with the fallbacks for a
/// runtime's own `executions` relation (see [`Store::pending_links_ready`]).
macro_rules! ready_cols {
    () => {
        "l.execution_id, l.session_id, l.created_at, \
         e.status, COALESCE(e.result, '') AS result, \
         COALESCE(e.updated_at, e.finished_at, l.created_at) AS updated_at, e.finished_at"
    };
}
const READY_COLS: &str = ready_cols!();

/// The worker's poll on PostgreSQL (first page), shared with the benchmark's
/// `EXPLAIN` so that what is measured is what runs. `$1` is the limit.
pub(crate) const PENDING_LINKS_PG: &str = concat!(
    "SELECT ",
    ready_cols!(),
    " FROM nomos_plan_executions l \
     JOIN executions e ON e.id = l.execution_id \
     WHERE l.continued_at IS NULL AND l.delivery_id IS NULL AND e.status IS NOT NULL \
     ORDER BY l.created_at, l.execution_id LIMIT $1"
);

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
    /// PostgreSQL a `pg_notify` on [`WAKE_CHANNEL`](super::WAKE_CHANNEL) is
    /// sent in the same transaction when anything was newly linked. On
    /// SQLite the caller signals its in-process worker itself.
    pub async fn link(
        &self,
        session_id: Uuid,
        execution_ids: &[Uuid],
        now: DateTime<Utc>,
    ) -> Result<LinkOutcome> {
        let now = trunc(now);
        let mut out = LinkOutcome::default();
        match &self.db {
            Db::Pg(pool) => {
                let mut tx = pool.begin().await?;
                for id in dedup(execution_ids) {
                    let inserted = sqlx::query(
                        "INSERT INTO nomos_plan_executions (execution_id, session_id, created_at) \
                         VALUES ($1, $2, $3) ON CONFLICT (execution_id) DO NOTHING",
                    )
                    .bind(id)
                    .bind(session_id)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                    if inserted == 1 {
                        out.linked.push(id);
                        continue;
                    }
                    let owner: Uuid = sqlx::query_scalar(
                        "SELECT session_id FROM nomos_plan_executions WHERE execution_id = $1",
                    )
                    .bind(id)
                    .fetch_one(&mut *tx)
                    .await?;
                    classify(&mut out, id, session_id, owner);
                }
                if !out.linked.is_empty() {
                    sqlx::query("SELECT pg_notify($1, '')")
                        .bind(super::WAKE_CHANNEL)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
            }
            Db::Lite(pool) => {
                let mut tx = pool.begin_with(SQLITE_BEGIN).await?;
                for id in dedup(execution_ids) {
                    let inserted = sqlx::query(
                        "INSERT INTO nomos_plan_executions (execution_id, session_id, created_at) \
                         VALUES (?1, ?2, ?3) ON CONFLICT (execution_id) DO NOTHING",
                    )
                    .bind(id.to_string())
                    .bind(session_id.to_string())
                    .bind(micros(now))
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                    if inserted == 1 {
                        out.linked.push(id);
                        continue;
                    }
                    let owner: String = sqlx::query_scalar(
                        "SELECT session_id FROM nomos_plan_executions WHERE execution_id = ?1",
                    )
                    .bind(id.to_string())
                    .fetch_one(&mut *tx)
                    .await?;
                    let owner =
                        uuid::Uuid::parse_str(&owner).map_err(|_| super::StoreError::Corrupt {
                            column: "session_id",
                            value: owner,
                        })?;
                    classify(&mut out, id, session_id, owner);
                }
                tx.commit().await?;
            }
        }
        Ok(out)
    }

    /// The worker's poll: links neither settled nor planned whose execution
    /// has reported (a row in `executions` with a status), joined with that
    /// row, in link order `(created_at, execution_id)`, at most `limit`.
    ///
    /// Served by the partial index `idx_nomos_plan_exec_ready` (migration
    /// 018: same predicate, read in order, index-only), so its cost depends
    /// on `limit`, not on history (see BENCHMARKS.md). Statuses are returned raw: the policy decides
    /// what is terminal. Pass the [`ReadyLink::cursor`] of the last row as
    /// `after` to read the next page; links still running otherwise fill
    /// every page. Links whose execution has not reported yet are not
    /// returned (there is nothing to decide).
    ///
    /// The `executions` row may come from a runtime's own relation (see
    /// `executions.rs`): a NULL result reads as `""`, a NULL `updated_at` as
    /// `finished_at` or else the link's time, and a row that still does not
    /// decode is skipped with a warning. Skipping never shortens a page:
    /// the read goes on after the skipped rows until `limit` rows decoded or
    /// the links ran out, so a short page still means "no more" and the
    /// worker neither stops paging early nor reads the same rows again.
    pub async fn pending_links_ready(
        &self,
        after: Option<PendingCursor>,
        limit: i64,
    ) -> Result<Vec<ReadyLink>> {
        let mut out = Vec::new();
        let mut cursor = after;
        loop {
            let want = limit - out.len() as i64;
            let (fetched, last) = match (&self.db, cursor) {
                (Db::Pg(pool), None) => {
                    let rows = sqlx::query(PENDING_LINKS_PG)
                        .bind(want)
                        .fetch_all(pool)
                        .await?;
                    (rows.len(), decode::ready_page(&rows, &mut out)?)
                }
                (Db::Pg(pool), Some(c)) => {
                    let sql = format!(
                        "SELECT {READY_COLS} FROM nomos_plan_executions l \
                         JOIN executions e ON e.id = l.execution_id \
                         WHERE l.continued_at IS NULL AND l.delivery_id IS NULL \
                           AND e.status IS NOT NULL \
                           AND l.created_at >= $1 AND (l.created_at, l.execution_id) > ($1, $2) \
                         ORDER BY l.created_at, l.execution_id LIMIT $3"
                    );
                    let rows = sqlx::query(&sql)
                        .bind(c.linked_at)
                        .bind(c.execution_id)
                        .bind(want)
                        .fetch_all(pool)
                        .await?;
                    (rows.len(), decode::ready_page(&rows, &mut out)?)
                }
                (Db::Lite(pool), after) => {
                    let (at, id) = match after {
                        Some(c) => (micros(c.linked_at), c.execution_id.to_string()),
                        None => (i64::MIN, String::new()),
                    };
                    let sql = format!(
                        "SELECT {READY_COLS} FROM nomos_plan_executions l \
                         JOIN executions e ON e.id = l.execution_id \
                         WHERE l.continued_at IS NULL AND l.delivery_id IS NULL \
                           AND e.status IS NOT NULL \
                           AND l.created_at >= ?1 AND (l.created_at, l.execution_id) > (?1, ?2) \
                         ORDER BY l.created_at, l.execution_id LIMIT ?3"
                    );
                    let rows = sqlx::query(&sql)
                        .bind(at)
                        .bind(id)
                        .bind(want)
                        .fetch_all(pool)
                        .await?;
                    (rows.len(), decode::ready_page(&rows, &mut out)?)
                }
            };
            // A short read is the end; otherwise read on only if rows were
            // skipped. Each round starts after the last row fetched, so the
            // loop ends.
            let short = (fetched as i64) < want;
            match last {
                Some(c) if !short && (out.len() as i64) < limit => cursor = Some(c),
                _ => return Ok(out),
            }
        }
    }

    /// The session's unsettled links (pending or planned), oldest first, with
    /// their execution's status if it has reported. For the decision input
    /// ("still running") and for the API.
    pub async fn pending_links_for_session(&self, session_id: Uuid) -> Result<Vec<Link>> {
        match &self.db {
            Db::Pg(pool) => {
                let sql = format!(
                    "SELECT {LINK_COLS} FROM nomos_plan_executions l \
                     LEFT JOIN executions e ON e.id = l.execution_id \
                     WHERE l.session_id = $1 AND l.continued_at IS NULL \
                     ORDER BY l.created_at, l.execution_id"
                );
                let rows = sqlx::query(&sql).bind(session_id).fetch_all(pool).await?;
                rows.iter().map(decode::link).collect()
            }
            Db::Lite(pool) => {
                let sql = format!(
                    "SELECT {LINK_COLS} FROM nomos_plan_executions l \
                     LEFT JOIN executions e ON e.id = l.execution_id \
                     WHERE l.session_id = ?1 AND l.continued_at IS NULL \
                     ORDER BY l.created_at, l.execution_id"
                );
                let rows = sqlx::query(&sql)
                    .bind(session_id.to_string())
                    .fetch_all(pool)
                    .await?;
                rows.iter().map(decode::link).collect()
            }
        }
    }

    /// What the policy's decision input needs about a session at `now`: its
    /// window, whether it is open, the loop-guard count, and the executions
    /// still running.
    ///
    /// `is_terminal` is the policy's classifier (the store does not know which
    /// status strings are terminal); an unsettled link whose execution has not
    /// reported, or reported a non-terminal status, is "still running".
    /// Two reads, not one snapshot: the result is advisory input for the
    /// policy; the hard checks happen again in [`Store::plan_continuation`].
    pub async fn session_snapshot(
        &self,
        session_id: Uuid,
        now: DateTime<Utc>,
        is_terminal: &(dyn Fn(&str) -> bool + Send + Sync),
    ) -> Result<SessionSnapshot> {
        let window = self.window(session_id).await?;
        let links = self.pending_links_for_session(session_id).await?;
        let still_running = links
            .iter()
            .filter(|l| match &l.execution_status {
                None => true,
                Some(status) => !is_terminal(status),
            })
            .map(|l| l.execution_id)
            .collect();
        Ok(SessionSnapshot {
            session_id,
            window_open: window.as_ref().is_some_and(|w| w.is_open_at(now)),
            continuations_in_window: window.as_ref().map_or(0, |w| w.continuations),
            window,
            still_running,
        })
    }

    /// Settles links as dropped (the policy or a host guard decided not to
    /// continue them) and records at most one notice about it.
    ///
    /// Only links of `session_id` that are still pending (not settled, not
    /// planned) are dropped; the others are left alone and not reported.
    /// The notice (kind `notice`, `execution_ids` = the links dropped by this
    /// call) is written only if this call dropped something, and at most once
    /// per idempotency key: a repeat with the same key writes nothing. One
    /// transaction: the links and the notice change together or not at all.
    pub async fn drop_links(
        &self,
        session_id: Uuid,
        execution_ids: &[Uuid],
        reason: &str,
        notice: Option<Notice<'_>>,
        now: DateTime<Utc>,
    ) -> Result<DropOutcome> {
        self.drop_links_seen(session_id, execution_ids, reason, notice, now, None)
            .await
    }

    /// [`Store::drop_links`], but only while the session's window row is as
    /// the caller saw it when deciding (`window_seen`: its `updated_at`, or
    /// `None` for no row): an approval that lands after the decision
    /// changes the row, and the links are left for the next decision rather
    /// than dropped on a stale "window closed". Nothing is written when the
    /// window changed; `guard: None` drops unconditionally.
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
        match &self.db {
            Db::Pg(pool) => {
                let mut tx = pool.begin().await?;
                let sql = format!(
                    "UPDATE nomos_plan_executions \
                     SET continued_at = $1, outcome = 'dropped', reason = $2 \
                     WHERE session_id = $3 AND execution_id = ANY($4) \
                       AND continued_at IS NULL AND delivery_id IS NULL {} \
                     RETURNING execution_id",
                    if guard.is_some() {
                        "AND (SELECT updated_at FROM nomos_assent_windows WHERE session_id = $3) \
                         IS NOT DISTINCT FROM $5"
                    } else {
                        ""
                    }
                );
                let mut query = sqlx::query_scalar(&sql)
                    .bind(now)
                    .bind(reason)
                    .bind(session_id)
                    .bind(&ids);
                if let Some(seen) = guard {
                    query = query.bind(seen.map(trunc));
                }
                out.dropped = query.fetch_all(&mut *tx).await?;
                order_like(&mut out.dropped, &ids);
                if let (Some(n), false) = (notice, out.dropped.is_empty()) {
                    out.notice = sqlx::query_scalar(
                        "INSERT INTO nomos_deliveries (id, session_id, kind, idempotency_key, \
                           execution_ids, note, policy_revision, state, attempts, \
                           next_attempt_at, created_at, updated_at) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', 0, $8, $8, $8) \
                         ON CONFLICT (idempotency_key) DO NOTHING RETURNING id",
                    )
                    .bind(Uuid::new_v4())
                    .bind(session_id)
                    .bind(DeliveryKind::Notice.as_str())
                    .bind(n.idempotency_key)
                    .bind(&out.dropped)
                    .bind(n.message)
                    .bind(n.policy_revision)
                    .bind(now)
                    .fetch_optional(&mut *tx)
                    .await?;
                }
                tx.commit().await?;
            }
            Db::Lite(pool) => {
                let mut tx = pool.begin_with(SQLITE_BEGIN).await?;
                let sql = format!(
                    "UPDATE nomos_plan_executions \
                     SET continued_at = ?1, outcome = 'dropped', reason = ?2 \
                     WHERE session_id = ?3 \
                       AND execution_id IN (SELECT value FROM json_each(?4)) \
                       AND continued_at IS NULL AND delivery_id IS NULL {} \
                     RETURNING execution_id",
                    if guard.is_some() {
                        "AND (SELECT updated_at FROM nomos_assent_windows WHERE session_id = ?3) IS ?5"
                    } else {
                        ""
                    }
                );
                let mut query = sqlx::query_scalar(&sql)
                    .bind(micros(now))
                    .bind(reason)
                    .bind(session_id.to_string())
                    .bind(json_ids(&ids));
                if let Some(seen) = guard {
                    query = query.bind(seen.map(|t| micros(trunc(t))));
                }
                let dropped: Vec<String> = query.fetch_all(&mut *tx).await?;
                out.dropped = ids
                    .iter()
                    .copied()
                    .filter(|id| dropped.contains(&id.to_string()))
                    .collect();
                if let (Some(n), false) = (notice, out.dropped.is_empty()) {
                    let id = Uuid::new_v4();
                    let inserted = sqlx::query(
                        "INSERT INTO nomos_deliveries (id, session_id, kind, idempotency_key, \
                           execution_ids, note, policy_revision, state, attempts, \
                           next_attempt_at, created_at, updated_at) \
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending', 0, ?8, ?8, ?8) \
                         ON CONFLICT (idempotency_key) DO NOTHING",
                    )
                    .bind(id.to_string())
                    .bind(session_id.to_string())
                    .bind(DeliveryKind::Notice.as_str())
                    .bind(n.idempotency_key)
                    .bind(json_ids(&out.dropped))
                    .bind(n.message)
                    .bind(n.policy_revision)
                    .bind(micros(now))
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                    out.notice = (inserted == 1).then_some(id);
                }
                tx.commit().await?;
            }
        }
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
