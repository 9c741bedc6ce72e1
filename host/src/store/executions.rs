//! The `executions` relation: status reports from the runtime (standalone
//! mode) and reads for the worker.

use time::OffsetDateTime;
use uuid::Uuid;

use super::decode;
use super::types::Execution;
use super::{dedup, json_ids, micros, trunc, Db, Result, Store, StoreError, WAKE_CHANNEL};

const COLS: &str = "id, status, result, updated_at, finished_at";

impl Store {
    /// Records an execution's status as reported (`PUT /v1/executions/{id}`)
    /// and wakes the worker.
    ///
    /// Upsert: a status for an execution the store has never seen **creates**
    /// its row (documented behaviour, not an error: the report may arrive
    /// before, after or without a link, and a later link finds it). `status`
    /// is stored raw (trimmed); it must not be empty. `finished = true`
    /// (the caller's policy said "terminal") sets `finished_at = now` on the
    /// first such report and keeps it on repeats; `finished = false` clears
    /// it. On PostgreSQL a `pg_notify` on [`WAKE_CHANNEL`] is sent in the same
    /// transaction, so a woken worker always sees the new row. On SQLite the
    /// caller signals its in-process worker itself.
    pub async fn upsert_execution_status(
        &self,
        id: Uuid,
        status: &str,
        result: &str,
        now: OffsetDateTime,
        finished: bool,
    ) -> Result<Execution> {
        let status = status.trim();
        if status.is_empty() {
            return Err(StoreError::InvalidValue {
                field: "status",
                reason: "must not be empty".into(),
            });
        }
        let now = trunc(now);
        match &self.db {
            Db::Pg(pool) => {
                let mut tx = pool.begin().await?;
                let sql = format!(
                    "INSERT INTO executions AS x (id, status, result, updated_at, finished_at) \
                     VALUES ($1, $2, $3, $4, CASE WHEN $5 THEN $4 ELSE NULL END) \
                     ON CONFLICT (id) DO UPDATE SET \
                       status = EXCLUDED.status, result = EXCLUDED.result, \
                       updated_at = EXCLUDED.updated_at, \
                       finished_at = CASE WHEN $5 THEN COALESCE(x.finished_at, $4) ELSE NULL END \
                     RETURNING {COLS}"
                );
                let row = sqlx::query(&sql)
                    .bind(id)
                    .bind(status)
                    .bind(result)
                    .bind(now)
                    .bind(finished)
                    .fetch_one(&mut *tx)
                    .await?;
                sqlx::query("SELECT pg_notify($1, '')")
                    .bind(WAKE_CHANNEL)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                decode::execution(&row)
            }
            Db::Lite(pool) => {
                let sql = format!(
                    "INSERT INTO executions AS x (id, status, result, updated_at, finished_at) \
                     VALUES (?1, ?2, ?3, ?4, CASE WHEN ?5 THEN ?4 ELSE NULL END) \
                     ON CONFLICT (id) DO UPDATE SET \
                       status = excluded.status, result = excluded.result, \
                       updated_at = excluded.updated_at, \
                       finished_at = CASE WHEN ?5 THEN COALESCE(x.finished_at, ?4) ELSE NULL END \
                     RETURNING {COLS}"
                );
                let row = sqlx::query(&sql)
                    .bind(id.to_string())
                    .bind(status)
                    .bind(result)
                    .bind(micros(now))
                    .bind(finished)
                    .fetch_one(pool)
                    .await?;
                decode::execution(&row)
            }
        }
    }

    /// One execution by id; `None` if it has never reported.
    pub async fn execution(&self, id: Uuid) -> Result<Option<Execution>> {
        match &self.db {
            Db::Pg(pool) => {
                let sql = format!("SELECT {COLS} FROM executions WHERE id = $1");
                let row = sqlx::query(&sql).bind(id).fetch_optional(pool).await?;
                row.as_ref().map(decode::execution).transpose()
            }
            Db::Lite(pool) => {
                let sql = format!("SELECT {COLS} FROM executions WHERE id = ?1");
                let row = sqlx::query(&sql)
                    .bind(id.to_string())
                    .fetch_optional(pool)
                    .await?;
                row.as_ref().map(decode::execution).transpose()
            }
        }
    }

    /// The executions among `ids` that have reported, in the order of
    /// `ids` (duplicates count once; unknown ids are left out). One query,
    /// so the deliver step loads a folded continuation's executions in one
    /// round trip rather than one per execution.
    pub async fn executions(&self, ids: &[Uuid]) -> Result<Vec<Execution>> {
        let ids = dedup(ids);
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut out = match &self.db {
            Db::Pg(pool) => {
                let sql = format!("SELECT {COLS} FROM executions WHERE id = ANY($1)");
                let rows = sqlx::query(&sql).bind(&ids).fetch_all(pool).await?;
                rows.iter()
                    .map(decode::execution)
                    .collect::<Result<Vec<_>>>()?
            }
            Db::Lite(pool) => {
                let sql = format!(
                    "SELECT {COLS} FROM executions WHERE id IN (SELECT value FROM json_each(?1))"
                );
                let rows = sqlx::query(&sql)
                    .bind(json_ids(&ids))
                    .fetch_all(pool)
                    .await?;
                rows.iter()
                    .map(decode::execution)
                    .collect::<Result<Vec<_>>>()?
            }
        };
        out.sort_by_key(|e| ids.iter().position(|id| *id == e.id).unwrap_or(usize::MAX));
        Ok(out)
    }
}
