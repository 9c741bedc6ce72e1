//! What the primary's standbys hold, for the worker's standby fence: an
//! agent call goes out only once the rows it was planned and claimed in
//! are on every standby streaming from the primary, so a failover to one
//! of them cannot lose a plan whose key was already sent (which would let
//! the next plan fold its executions under a second key).
//!
//! PostgreSQL only: SQLite has no standbys.

use super::decode::RowExt;
use super::dialect::query;
use super::{Backend, Result, Store};

/// A position in the primary's write-ahead log (`pg_lsn` as text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalPosition(String);

impl std::fmt::Display for WalPosition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The standbys streaming from the primary, measured against one WAL
/// position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standbys {
    /// The position they are measured against.
    pub target: WalPosition,
    /// Standbys streaming now that have not flushed up to `target`.
    pub behind: i64,
    /// Standbys whose position this role may not read (it lacks
    /// `pg_read_all_stats`): not counted in `behind`.
    pub hidden: i64,
}

impl Store {
    /// How many standbys streaming from the primary now have not yet
    /// flushed WAL up to `target`, or, without one, up to the primary's
    /// WAL flush position now (which is then the answer's `target`): every
    /// commit this process has seen returned is at or before it. `None` on
    /// SQLite.
    ///
    /// Counted: physical standbys in state `streaming`. Not counted: a
    /// base backup's stream, logical replication (its subscriber cannot be
    /// promoted), a standby still catching up (it lacks far more than the
    /// last plan; promoting it loses what it lacks, fence or not), and a
    /// standby not connected at all.
    pub async fn standbys_behind(&self, target: Option<&WalPosition>) -> Result<Option<Standbys>> {
        if self.backend() == Backend::Sqlite {
            return Ok(None);
        }
        let row = query(
            "WITH t AS (SELECT COALESCE($1::text::pg_lsn, pg_current_wal_flush_lsn()) AS lsn) \
             SELECT t.lsn::text AS target, \
               count(r.pid) FILTER (WHERE r.state = 'streaming' \
                 AND (r.flush_lsn IS NULL OR r.flush_lsn < t.lsn)) AS behind, \
               count(r.pid) FILTER (WHERE r.state IS NULL) AS hidden \
             FROM t LEFT JOIN pg_stat_replication r \
               ON r.state IS DISTINCT FROM 'backup' AND NOT EXISTS ( \
                 SELECT 1 FROM pg_replication_slots s \
                 WHERE s.active_pid = r.pid AND s.slot_type = 'logical') \
             GROUP BY t.lsn",
        )
        .bind(target.map(|t| t.0.as_str()))
        .fetch_one(self)
        .await?;
        Ok(Some(Standbys {
            target: WalPosition(row.text("target")?),
            behind: row.bigint("behind")?,
            hidden: row.bigint("hidden")?,
        }))
    }
}
