//! The `executions` relation: status reports from the runtime (standalone
//! mode) and reads for the worker.
//!
//! # A relation the runtime may own
//!
//! The schema migration (018) creates a standalone table only where no relation named
//! `executions` exists: a runtime may supply its own (a view over its
//! table), whose columns can hold what the standalone table forbids. One
//! such row must not stop the reads for every other execution (promise P5
//! in `ARCHITECTURE.md`), so the reads do not trust them: a NULL `result`
//! is the empty result (no output yet), a NULL `updated_at` falls back to
//! `finished_at`,
//! a row with a NULL `status` has not reported, and a row that still does
//! not decode is skipped with a warning (see [`decode::or_skip`]).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::decode;
use super::dialect::{query, trunc};
use super::types::{Execution, ReportOutcome};
use super::{dedup, Backend, Result, Store, StoreError, WAKE_CHANNEL};
#[cfg(feature = "test-support")]
use super::{types::LateReport, Db};

/// The columns every read selects, with the NULL fallbacks of the module
/// docs (a NULL `updated_at` left after them reads as the epoch, see
/// [`decode::execution`]).
const COLS: &str = "id, status, COALESCE(result, '') AS result, \
     COALESCE(updated_at, finished_at) AS updated_at, finished_at";

/// [`Store::upsert_execution_status`]'s applied path on PostgreSQL as one
/// statement, so one round trip and its implicit commit: the conditional
/// upsert, the unparking of the execution's link and the wake-up, each
/// only when the upsert wrote a row (the wake-up is sent at the commit).
/// The transaction it replaces cost five round trips (`BEGIN`, three
/// statements, `COMMIT`) on the path from a report to its continuation.
fn pg_apply() -> String {
    format!(
        "WITH applied AS ({}), \
         unparked AS ( \
           UPDATE nomos_plan_executions SET parked = NULL \
           WHERE execution_id = $1 AND parked IS NOT NULL AND parked <> $2 \
             AND EXISTS (SELECT 1 FROM applied)), \
         woken AS (SELECT pg_notify($6, '') FROM applied) \
         SELECT applied.* FROM applied, (SELECT count(*) FROM woken) AS w",
        upsert()
    )
}

/// The conditional upsert of a report: `$1` id, `$2` status, `$3` result,
/// `$4` now, `$5` finished; a row only if it was applied.
fn upsert() -> String {
    format!(
        "INSERT INTO executions AS x (id, status, result, updated_at, finished_at) \
         VALUES ($1, $2, $3, $4, CASE WHEN $5 THEN $4 ELSE NULL END) \
         ON CONFLICT (id) DO UPDATE SET \
           status = EXCLUDED.status, result = EXCLUDED.result, \
           updated_at = EXCLUDED.updated_at, finished_at = EXCLUDED.finished_at \
         WHERE x.finished_at IS NULL \
         RETURNING {COLS}"
    )
}

#[cfg(feature = "test-support")]
/// The columns [`decode::late_report`] reads.
const LATE_COLS: &str = "execution_id, status, result, reported_at";

impl Store {
    #[cfg(feature = "test-support")]
    /// The SQLite pool, if any (the counterpart of [`Store::pg_pool`]).
    ///
    /// Why here: a runtime embedding nomos-continue on SQLite that keeps its
    /// own execution table supplies the `executions` relation this module
    /// reads (as a view, see migration 018), and needs the pool to create
    /// it; the fault tests use it to play such a runtime.
    pub fn sqlite_pool(&self) -> Option<&sqlx::SqlitePool> {
        match &self.db {
            Db::Lite(pool) => Some(pool),
            Db::Pg(_) => None,
        }
    }

    /// Records an execution's status as reported (`PUT /v1/executions/{id}`)
    /// and wakes the worker.
    ///
    /// Upsert: a status for an execution the store has never seen **creates**
    /// its row (documented behaviour, not an error: the report may arrive
    /// before, after or without a link, and a later link finds it). `status`
    /// is stored raw (trimmed); it must not be empty. `finished = true`
    /// (the caller's policy said "terminal") sets `finished_at = now`.
    ///
    /// Terminal is final (promise P4): once the row has `finished_at`, a
    /// later report, terminal or not, is **not applied** (status, result and
    /// times stay as the first terminal report left them); it is kept in
    /// `nomos_late_reports` (see [`Store::late_reports`]) and the outcome
    /// says `applied: false`. Otherwise a late "running" would make a
    /// finished execution unfinished again, never continued nor announced.
    /// The check and the write are one conditional upsert inside one
    /// transaction, so of two concurrent reports at most one finishes the
    /// execution. On PostgreSQL an applied report sends a `pg_notify` on
    /// [`WAKE_CHANNEL`] in the same transaction (one statement,
    /// [`pg_apply`]), so a woken worker always
    /// sees the new row. On SQLite the caller signals its in-process worker
    /// itself (only when the report was applied: nothing else changed).
    pub async fn upsert_execution_status(
        &self,
        id: Uuid,
        status: &str,
        result: &str,
        now: DateTime<Utc>,
        finished: bool,
    ) -> Result<ReportOutcome> {
        let status = status.trim();
        if status.is_empty() {
            return Err(StoreError::InvalidValue {
                field: "status",
                reason: "must not be empty".into(),
            });
        }
        let now = trunc(now);
        if self.backend() == Backend::Postgres {
            let applied = query(pg_apply())
                .bind(id)
                .bind(status)
                .bind(result)
                .bind(now)
                .bind(finished)
                .bind(WAKE_CHANNEL)
                .fetch_optional(self)
                .await?;
            if let Some(row) = applied {
                return Ok(ReportOutcome {
                    execution: decode::execution(&row)?,
                    applied: true,
                });
            }
            // Not applied: the row has finished, and a finished row never
            // changes again, so the transaction below finds it so too and
            // records the report as late.
        }
        let mut tx = self.begin().await?;
        let applied = query(upsert())
            .bind(id)
            .bind(status)
            .bind(result)
            .bind(now)
            .bind(finished)
            .fetch_optional(&mut tx)
            .await?;
        let (row, applied) = match applied {
            Some(row) => {
                // A new status may be terminal: the worker's frequent pass
                // must read this link again (a repeat of the status it was
                // parked on changes nothing). See the `parked` column in migration 018.
                query(
                    "UPDATE nomos_plan_executions SET parked = NULL \
                     WHERE execution_id = $1 AND parked IS NOT NULL AND parked <> $2",
                )
                .bind(id)
                .bind(status)
                .execute(&mut tx)
                .await?;
                tx.notify_wake().await?;
                (row, true)
            }
            // The conflicting row is locked by the upsert until the commit
            // (on SQLite, the whole file is), and a finished row never
            // changes again.
            None => {
                query(
                    "INSERT INTO nomos_late_reports (execution_id, status, result, reported_at) \
                     VALUES ($1, $2, $3, $4)",
                )
                .bind(id)
                .bind(status)
                .bind(result)
                .bind(now)
                .execute(&mut tx)
                .await?;
                let sql = format!("SELECT {COLS} FROM executions WHERE id = $1");
                (query(sql).bind(id).fetch_one(&mut tx).await?, false)
            }
        };
        tx.commit().await?;
        Ok(ReportOutcome {
            execution: decode::execution(&row)?,
            applied,
        })
    }

    #[cfg(feature = "test-support")]
    /// The reports of an execution that arrived after its first terminal one
    /// and were recorded, not applied (see
    /// [`Store::upsert_execution_status`]), in arrival order.
    pub async fn late_reports(&self, id: Uuid) -> Result<Vec<LateReport>> {
        let sql = format!(
            "SELECT {LATE_COLS} FROM nomos_late_reports WHERE execution_id = $1 ORDER BY id"
        );
        let rows = query(sql).bind(id).fetch_all(self).await?;
        rows.iter().map(decode::late_report).collect()
    }

    /// The executions among `ids` that have reported, in the order of
    /// `ids` (duplicates count once; unknown ids, rows with no status and
    /// rows that do not decode are left out, the last with a warning). One
    /// query, so the deliver step loads a folded continuation's executions
    /// in one round trip rather than one per execution.
    pub async fn executions(&self, ids: &[Uuid]) -> Result<Vec<Execution>> {
        let ids = dedup(ids);
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {COLS} FROM {} WHERE status IS NOT NULL",
            self.backend().rows_by_ids("executions", "id", "$1", "e")
        );
        let rows = query(sql).bind(&ids).fetch_all(self).await?;
        let mut out: Vec<Execution> = rows
            .iter()
            .filter_map(|r| decode::or_skip(r, "id", decode::execution))
            .collect();
        let position: std::collections::HashMap<Uuid, usize> =
            ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
        out.sort_by_key(|e| position.get(&e.id).copied().unwrap_or(usize::MAX));
        Ok(out)
    }
}
