//! Retention of the text that tool output reaches: delivery notes and
//! errors, the chat history `chatWith` replays, and its notices. Each may
//! hold a secret a tool printed, and each grows with every session. The
//! `maintenance::Retention` task calls these in bounded batches, oldest
//! first, each served by an index of migration 026.
//!
//! What a link still needs is never touched: a pending delivery (the
//! deliverer sends its note), a notice the operator's channel has not
//! ended (it sends the notice's text), and the history and notices of a
//! session that has an unsettled link, a pending delivery or an open
//! assent window (its next continuation replays them).
//!
//! Ledger rows (`nomos_deliveries`) are scrubbed first: the API, the
//! console and `status` list them, so a settled row keeps its state, times
//! and counts, and loses its note (left empty) and last error (`NULL`); a
//! retry of a scrubbed row is refused (`RetryOutcome::Purged`): it has
//! nothing left to send. Chat turns and `chatWith` notices are deleted:
//! nothing but the replay and the notice list reads them, and a session
//! with nothing in flight replays nothing.
//!
//! The settled history itself (ledger rows, windows, late reports, the
//! session list, and behind the link horizon the links) is deleted past
//! its own, longer retention: see the second `impl` below.

use chrono::{DateTime, Utc};

use super::decode::{self, RowExt};
use super::dialect::{query, trunc};
use super::{Result, Store};

/// A session with nothing in flight at `$3`: no unsettled link, no pending
/// delivery, no open window. `X` is the row's alias.
const SESSION_IDLE: &str = "NOT EXISTS (SELECT 1 FROM nomos_plan_executions l \
       WHERE l.session_id = X.session_id AND l.continued_at IS NULL) \
     AND NOT EXISTS (SELECT 1 FROM nomos_deliveries p \
       WHERE p.session_id = X.session_id AND p.state = 'pending') \
     AND NOT EXISTS (SELECT 1 FROM nomos_assent_windows w \
       WHERE w.session_id = X.session_id AND w.closed_at IS NULL AND w.expires_at > $3)";

impl Store {
    /// Empties the note and the last error of at most `batch` settled
    /// deliveries last updated before `before` (oldest first), leaving a
    /// notice whose operator delivery is still pending alone; returns how
    /// many it scrubbed.
    pub async fn scrub_deliveries(&self, before: DateTime<Utc>, batch: i64) -> Result<u64> {
        query(
            "UPDATE nomos_deliveries SET note = '', last_error = NULL WHERE id IN ( \
               SELECT d.id FROM nomos_deliveries d \
               WHERE d.state <> 'pending' AND (d.note <> '' OR d.last_error IS NOT NULL) \
                 AND d.updated_at < $1 \
                 AND NOT EXISTS (SELECT 1 FROM nomos_operator_notices o \
                   WHERE o.notice_id = d.id AND o.state = 'pending') \
               ORDER BY d.updated_at LIMIT $2)",
        )
        .bind(trunc(before))
        .bind(batch)
        .execute(self)
        .await
    }

    /// Deletes at most `batch` chat turns recorded before `before` (oldest
    /// first) of sessions with nothing in flight at `now`; returns how many.
    pub async fn purge_chat_turns(
        &self,
        before: DateTime<Utc>,
        now: DateTime<Utc>,
        batch: i64,
    ) -> Result<u64> {
        self.purge_idle("nomos_chat_turns", before, now, batch)
            .await
    }

    /// Deletes at most `batch` `chatWith` notices recorded before `before`
    /// (oldest first) of sessions with nothing in flight at `now`; returns
    /// how many.
    pub async fn purge_chat_notices(
        &self,
        before: DateTime<Utc>,
        now: DateTime<Utc>,
        batch: i64,
    ) -> Result<u64> {
        self.purge_idle("nomos_notices", before, now, batch).await
    }

    /// The delete both chat tables share (each has `id`, `session_id` and
    /// `created_at`, and an index on `created_at`).
    async fn purge_idle(
        &self,
        table: &'static str,
        before: DateTime<Utc>,
        now: DateTime<Utc>,
        batch: i64,
    ) -> Result<u64> {
        let sql = format!(
            "DELETE FROM {table} WHERE id IN ( \
               SELECT X.id FROM {table} X WHERE X.created_at < $1 AND {SESSION_IDLE} \
               ORDER BY X.created_at LIMIT $2)"
        );
        query(sql)
            .bind(trunc(before))
            .bind(batch)
            .bind(trunc(now))
            .execute(self)
            .await
    }
}

/// Settled history: what a session leaves behind once nothing of it is in
/// flight. Deleted past its retention in bounded batches; the settled links
/// themselves (the seed's table, the runtime's too) only behind the link
/// horizon, and only when the operator sets a link retention
/// (`Store::purge_links`).
impl Store {
    /// Deletes at most `batch` ledger rows settled (delivered, failed or
    /// dropped) before `before`, with their operator copies once those have
    /// ended (a pending copy keeps its notice's row), of sessions with no
    /// unsettled link; returns how many.
    ///
    /// A deleted row cannot be planned again: its links were settled in
    /// the transaction that settled it, and a settled link is never
    /// planned. A session with a link still unsettled keeps its rows: their
    /// keys are what stop a second notice about that link (the stuck
    /// watch's, a person's question, a status the policy cannot classify).
    /// Served by migration 027's index of ended rows.
    pub async fn purge_ledger(&self, before: DateTime<Utc>, batch: i64) -> Result<u64> {
        query(
            "DELETE FROM nomos_deliveries WHERE state <> 'pending' AND updated_at < $1 \
               AND id IN ( \
                 SELECT d.id FROM nomos_deliveries d \
                 WHERE d.state IN ('delivered', 'failed', 'dropped') \
                   AND d.kind IN ('continuation', 'notice') AND d.updated_at < $1 \
                   AND NOT EXISTS (SELECT 1 FROM nomos_operator_notices o \
                     WHERE o.notice_id = d.id AND o.state = 'pending') \
                   AND NOT EXISTS (SELECT 1 FROM nomos_plan_executions l \
                     WHERE l.session_id = d.session_id AND l.continued_at IS NULL) \
                 LIMIT $2)",
        )
        .bind(trunc(before))
        .bind(batch)
        .execute(self)
        .await
    }

    /// Deletes at most `batch` assent windows that ended (expired, or were
    /// closed and expired since) before `before`, of sessions with no
    /// unsettled link (a pending continuation's links are unsettled; a
    /// notice goes out whatever the window); returns how many.
    ///
    /// The outer `expires_at` test is checked again against the row as it
    /// is when the delete locks it: an approval that extends or reopens the
    /// window meanwhile moves `expires_at` and keeps the row.
    pub async fn purge_windows(&self, before: DateTime<Utc>, batch: i64) -> Result<u64> {
        query(
            "DELETE FROM nomos_assent_windows WHERE expires_at < $1 AND session_id IN ( \
               SELECT w.session_id FROM nomos_assent_windows w WHERE w.expires_at < $1 \
                 AND NOT EXISTS (SELECT 1 FROM nomos_plan_executions l \
                   WHERE l.session_id = w.session_id AND l.continued_at IS NULL) \
               LIMIT $2)",
        )
        .bind(trunc(before))
        .bind(batch)
        .execute(self)
        .await
    }

    /// Deletes late reports received before `before` (reports that came
    /// after their execution's terminal one, kept for the operator) among
    /// the `batch` oldest by id; returns how many. Oldest by id rather
    /// than by time: the table has no index on the time, and ids grow
    /// with it, so a pass reads one batch however young the table is.
    pub async fn purge_late_reports(&self, before: DateTime<Utc>, batch: i64) -> Result<u64> {
        self.purge_oldest_by_id("nomos_late_reports", "reported_at", before, batch)
            .await
    }

    /// Deletes those of `table`'s `batch` oldest rows by id whose `time`
    /// is before `before`; returns how many. For append-only tables whose
    /// ids grow with their time: the primary key finds the oldest, with
    /// no index on the time, and a batch that comes back short has reached
    /// the rows to keep. `table` and `time` are the callers' own names,
    /// never input.
    pub(in crate::store) async fn purge_oldest_by_id(
        &self,
        table: &'static str,
        time: &'static str,
        before: DateTime<Utc>,
        batch: i64,
    ) -> Result<u64> {
        let sql = format!(
            "DELETE FROM {table} WHERE {time} < $1 AND id IN ( \
               SELECT id FROM {table} ORDER BY id LIMIT $2)"
        );
        query(sql)
            .bind(trunc(before))
            .bind(batch)
            .execute(self)
            .await
    }

    /// Deletes at most `batch` rows of the console's session list first
    /// seen before `before` whose session has nothing left: no link, no
    /// window, no ledger row; returns how many. Only worth running where
    /// links are purged: a session keeps its links otherwise.
    ///
    /// A link that commits just as its session's row is deleted leaves the
    /// session off the list (its own page still answers) until its next
    /// link lists it again: the list's trigger inserted nothing, finding
    /// the row still there.
    pub async fn purge_sessions(&self, before: DateTime<Utc>, batch: i64) -> Result<u64> {
        query(
            "DELETE FROM nomos_sessions WHERE session_id IN ( \
               SELECT s.session_id FROM nomos_sessions s WHERE s.first_seen_at < $1 \
                 AND NOT EXISTS (SELECT 1 FROM nomos_plan_executions l \
                   WHERE l.session_id = s.session_id) \
                 AND NOT EXISTS (SELECT 1 FROM nomos_assent_windows w \
                   WHERE w.session_id = s.session_id) \
                 AND NOT EXISTS (SELECT 1 FROM nomos_deliveries d \
                   WHERE d.session_id = s.session_id) \
               LIMIT $2)",
        )
        .bind(trunc(before))
        .bind(batch)
        .execute(self)
        .await
    }

    /// Whether `executions` is nomos-continue's standalone table, whose
    /// results it may empty: on PostgreSQL the table migration 018 created
    /// (its comment says so); on SQLite a table rather than a view (the
    /// file is nomos-continue's own).
    pub async fn executions_are_ours(&self) -> Result<bool> {
        let sql = self.backend().pick(
            "SELECT CAST(CASE WHEN obj_description(to_regclass('executions'), 'pg_class') \
               LIKE 'nomos-continue: standalone executions table%' THEN 1 ELSE 0 END AS BIGINT) \
               AS ours",
            "SELECT EXISTS (SELECT 1 FROM sqlite_master \
               WHERE name = 'executions' AND type = 'table') AS ours",
        );
        let row = query(sql).fetch_one(self).await?;
        Ok(row.bigint("ours")? == 1)
    }

    /// Moves the link horizon forward to `before` (never back); returns
    /// the horizon as it stood before, `None` if there was none. Links are
    /// purged behind that earlier horizon (`Store::purge_links`), a pass
    /// behind: a link statement that began before the new horizon
    /// committed did not see it, and could make a link a purge behind the
    /// new horizon would delete at once; a pass later (the retention's
    /// interval) no such statement is still running.
    pub async fn advance_link_horizon(
        &self,
        before: DateTime<Utc>,
    ) -> Result<Option<DateTime<Utc>>> {
        let previous = query("SELECT before_at FROM nomos_link_horizon WHERE id = 1")
            .fetch_optional(self)
            .await?
            .map(|r| r.time("before_at"))
            .transpose()?;
        let before = trunc(before);
        if previous.is_none_or(|p| p < before) {
            query(format!(
                "INSERT INTO nomos_link_horizon (id, before_at) VALUES (1, $1) \
                 ON CONFLICT (id) DO UPDATE SET before_at = {}(nomos_link_horizon.before_at, \
                   excluded.before_at)",
                self.backend().greatest()
            ))
            .bind(before)
            .execute(self)
            .await?;
        }
        Ok(previous)
    }

    /// Deletes at most `batch` links behind `horizon` (one that
    /// [`Store::advance_link_horizon`] recorded at least a pass ago):
    /// settled, and their execution finished before it, so `Store::link`
    /// refuses to make them again. Their per-link data goes with them, and
    /// (`scrub_results`: `executions` is ours) their executions' results
    /// are emptied; the executions' rows stay, with their status and
    /// finish time, because they are what refuses the link and a late
    /// report (terminal is final) from then on. Returns how many links it
    /// deleted.
    pub async fn purge_links(
        &self,
        horizon: DateTime<Utc>,
        batch: i64,
        scrub_results: bool,
    ) -> Result<u64> {
        let horizon = trunc(horizon);
        let behind = "l.continued_at IS NOT NULL AND l.continued_at < $1 \
             AND EXISTS (SELECT 1 FROM executions e \
               WHERE e.id = l.execution_id AND e.finished_at < $1)";
        let ids = query(format!(
            "SELECT l.execution_id FROM nomos_plan_executions l WHERE {behind} LIMIT $2"
        ))
        .bind(horizon)
        .bind(batch)
        .fetch_all(self)
        .await?;
        let ids = decode::uuids(&ids, "execution_id")?;
        if ids.is_empty() {
            return Ok(0);
        }
        let backend = self.backend();
        let mut tx = self.begin().await?;
        if scrub_results {
            query(format!(
                "UPDATE executions SET result = '' WHERE id {} AND finished_at < $2 \
                   AND result <> ''",
                backend.in_ids("$1")
            ))
            .bind(&ids)
            .bind(horizon)
            .execute(&mut tx)
            .await?;
        }
        query(format!(
            "DELETE FROM nomos_link_data WHERE execution_id {}",
            backend.in_ids("$1")
        ))
        .bind(&ids)
        .execute(&mut tx)
        .await?;
        let purged = query(format!(
            "DELETE FROM nomos_plan_executions WHERE execution_id {} AND execution_id IN ( \
               SELECT l.execution_id FROM nomos_plan_executions l WHERE {})",
            backend.in_ids("$2"),
            behind
        ))
        .bind(horizon)
        .bind(&ids)
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        Ok(purged)
    }
}

/// The share of an SQLite file's pages left free for the next inserts:
/// freeing every page a purge emptied, only for the next rows to claim
/// them back from the file system, would cost I/O for nothing.
const FREE_PAGES_KEPT: i64 = 10;

/// Pages one `PRAGMA incremental_vacuum` frees at most: it holds the
/// file's write lock while it runs, which every write waits for.
const FREE_PAGES_PER_STEP: i64 = 1_000;

impl Store {
    /// Gives the pages a purge freed in an SQLite file back to the file
    /// system, beyond a tenth of the file kept for the next inserts, a
    /// thousand pages a statement; returns how many pages it freed.
    /// Nothing on PostgreSQL (vacuum reuses the space itself) or on a file
    /// whose `auto_vacuum` is not incremental (a file made before this
    /// build: see docs/operations.md, "Retention").
    pub async fn give_back_space(&self) -> Result<i64> {
        if self.backend() == super::Backend::Postgres {
            return Ok(0);
        }
        let row = query(
            "SELECT (SELECT auto_vacuum FROM pragma_auto_vacuum) AS mode, \
               (SELECT freelist_count FROM pragma_freelist_count) AS free, \
               (SELECT page_count FROM pragma_page_count) AS pages",
        )
        .fetch_one(self)
        .await?;
        let (mode, free, pages) = (
            row.bigint("mode")?,
            row.bigint("free")?,
            row.bigint("pages")?,
        );
        // Free pages left a tenth of the file once the rest is given back:
        // free - x = (pages - x) / 10.
        let excess = (FREE_PAGES_KEPT * free - pages) / (FREE_PAGES_KEPT - 1);
        if mode != 2 || excess <= 0 {
            return Ok(0);
        }
        let mut freed = 0;
        while freed < excess {
            let step = FREE_PAGES_PER_STEP.min(excess - freed);
            query(format!("PRAGMA incremental_vacuum({step})"))
                .execute(self)
                .await?;
            freed += step;
        }
        Ok(freed)
    }
}
