//! What PostgreSQL's own upkeep is doing for this store's tables. Every
//! hot table here is updated or deleted from on every continuation, so
//! its dead row versions must be vacuumed as fast as they are made: a
//! server whose autovacuum is off (or held back by a long transaction)
//! lets the partial indexes fill with dead entries that every poll and
//! claim then steps over, and the engine slows to a crawl without any
//! error. These reads let `serve` say so at start and `/metrics` show it.
//!
//! PostgreSQL only: SQLite keeps no dead tuples to vacuum (a deleted row's
//! page goes to the free list), so both reads answer "nothing to report".

use chrono::{DateTime, Utc};

use super::decode::RowExt;
use super::dialect::query;
use super::{Backend, Result, Store};

/// The server settings autovacuum depends on, and the tables of ours
/// where an operator turned it off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VacuumSettings {
    /// `autovacuum`: the launcher runs at all.
    pub autovacuum: bool,
    /// `track_counts`: the statistics autovacuum decides from are kept;
    /// without them it never starts on any table, whatever `autovacuum`
    /// says.
    pub track_counts: bool,
    /// Our tables whose storage parameters say `autovacuum_enabled=off`.
    pub tables_without_autovacuum: Vec<String>,
}

impl VacuumSettings {
    /// Each setting that keeps dead tuples from being vacuumed, named as an
    /// operator would look it up; empty when autovacuum runs everywhere.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.autovacuum {
            out.push("autovacuum = off".to_owned());
        }
        if !self.track_counts {
            out.push("track_counts = off".to_owned());
        }
        out.extend(
            self.tables_without_autovacuum
                .iter()
                .map(|t| format!("{t} (autovacuum_enabled = off)")),
        );
        out
    }
}

/// One table's upkeep, from `pg_stat_user_tables` (each backend flushes
/// its counts after a transaction at most once a second, and an idle one
/// may hold them a few seconds more, so they lag by that much).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableUpkeep {
    /// The table's name.
    pub table: String,
    /// Estimated live rows.
    pub live_tuples: i64,
    /// Estimated dead row versions not yet vacuumed.
    pub dead_tuples: i64,
    /// The latest vacuum, manual or automatic; `None` if never.
    pub last_vacuum: Option<DateTime<Utc>>,
    /// Rows updated since the statistics were reset.
    pub updates: i64,
    /// Of those, heap-only (HOT) updates: no index entry written, and the
    /// old version pruned without a vacuum.
    pub hot_updates: i64,
    /// The table's bytes on disk, its indexes and TOAST included.
    pub bytes: i64,
}

/// Which tables are ours: every `nomos_*` table and the `executions`
/// relation when it is a table (a runtime's view has no statistics), in
/// the schema the store works in (looked up by name: a schema whose name
/// needs quoting would not cast to `regnamespace`).
const OURS: &str =
    "c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) \
     AND c.relkind IN ('r', 'p') \
     AND (left(c.relname, 6) = 'nomos_' OR c.relname = 'executions')";

/// How long the size read waits for a table's lock: `pg_total_relation_size`
/// takes a share lock on the table and each index, which a `VACUUM FULL`,
/// `REINDEX` or `ALTER TABLE` holds against it. A scrape then loses these
/// series (logged) rather than holding a connection until the lock goes.
const SIZE_LOCK_TIMEOUT: &str = "SET LOCAL lock_timeout = '200ms'";

impl Store {
    /// The settings autovacuum depends on; `None` on SQLite.
    pub async fn vacuum_settings(&self) -> Result<Option<VacuumSettings>> {
        if self.backend() == Backend::Sqlite {
            return Ok(None);
        }
        let row = query(format!(
            "SELECT current_setting('autovacuum') AS autovacuum, \
               current_setting('track_counts') AS track_counts, \
               COALESCE((SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_class c \
                 WHERE {OURS} AND EXISTS (SELECT 1 FROM pg_options_to_table(c.reloptions) o \
                   WHERE o.option_name = 'autovacuum_enabled' AND NOT o.option_value::bool)), \
                 '') AS disabled"
        ))
        .fetch_one(self)
        .await?;
        let disabled = row.text("disabled")?;
        Ok(Some(VacuumSettings {
            autovacuum: row.text("autovacuum")? == "on",
            track_counts: row.text("track_counts")? == "on",
            tables_without_autovacuum: disabled
                .split(',')
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect(),
        }))
    }

    /// Each of our tables' upkeep, by name; empty on SQLite.
    pub async fn table_upkeep(&self) -> Result<Vec<TableUpkeep>> {
        if self.backend() == Backend::Sqlite {
            return Ok(Vec::new());
        }
        let mut tx = self.begin().await?;
        query(SIZE_LOCK_TIMEOUT).execute(&mut tx).await?;
        let rows = query(format!(
            "SELECT c.relname::text AS name, \
               COALESCE(s.n_live_tup, 0) AS live, COALESCE(s.n_dead_tup, 0) AS dead, \
               GREATEST(s.last_vacuum, s.last_autovacuum) AS vacuumed, \
               COALESCE(s.n_tup_upd, 0) AS updates, COALESCE(s.n_tup_hot_upd, 0) AS hot, \
               pg_total_relation_size(c.oid) AS bytes \
             FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid \
             WHERE {OURS} ORDER BY c.relname"
        ))
        .fetch_all(&mut tx)
        .await?;
        tx.commit().await?;
        rows.iter()
            .map(|r| {
                Ok(TableUpkeep {
                    table: r.text("name")?,
                    live_tuples: r.bigint("live")?,
                    dead_tuples: r.bigint("dead")?,
                    last_vacuum: r.opt_time("vacuumed")?,
                    updates: r.bigint("updates")?,
                    hot_updates: r.bigint("hot")?,
                    bytes: r.bigint("bytes")?,
                })
            })
            .collect()
    }
}
