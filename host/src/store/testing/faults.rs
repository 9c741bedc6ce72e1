//! The store's own faults, for the fault-injection simulation: a full
//! disk (every write refused), and the deadlocks PostgreSQL counted.

use chrono::{DateTime, Utc};

use super::super::dialect::trunc;
use super::super::{Backend, Result, Store};
use super::pg;

/// The message of an injected refusal, as PostgreSQL words a full disk.
pub const DISK_FULL_MESSAGE: &str = "could not extend file: No space left on device";

/// Prepares PostgreSQL to refuse writes on demand ([`refuse_writes`]), as
/// a full disk does: a statement trigger on every table of the engine (and
/// `executions`) raises SQLSTATE 53100 (`disk_full`) while the flag table
/// `sim_disk_full` has a row. Reads, and the flag table itself, still work,
/// as they do on a full disk. Idempotent, and it takes no table lock once
/// installed (a store shared by several runs installs it once).
///
/// Why a trigger and not a real full disk: the test database shares the
/// server's disk with every other database, and a full disk is not
/// undone at a chosen instant of simulated time. SQLite is answered
/// [`StoreError::InvalidValue`]: a trigger's `RAISE` is a constraint error
/// there, not `SQLITE_FULL`, and would not be the same fault.
pub async fn install_write_refusal(store: &Store) -> Result<()> {
    let pool = pg(store)?;
    let installed: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM pg_proc WHERE proname = 'sim_refuse_writes')",
    )
    .fetch_one(pool)
    .await?;
    if installed {
        return Ok(());
    }
    let sql = format!(
        "CREATE TABLE IF NOT EXISTS sim_disk_full (since TIMESTAMPTZ NOT NULL); \
         CREATE OR REPLACE FUNCTION sim_refuse_writes() RETURNS trigger LANGUAGE plpgsql AS $f$ \
         BEGIN \
           IF EXISTS (SELECT 1 FROM sim_disk_full) THEN \
             RAISE EXCEPTION '{DISK_FULL_MESSAGE}' USING ERRCODE = 'disk_full', \
               HINT = 'injected by the simulation (sim_disk_full)'; \
           END IF; \
           RETURN NULL; \
         END $f$; \
         DO $d$ DECLARE t TEXT; BEGIN \
           FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = current_schema() \
               AND (tablename LIKE 'nomos\\_%' OR tablename = 'executions') LOOP \
             EXECUTE format('CREATE OR REPLACE TRIGGER sim_refuse_writes \
               BEFORE INSERT OR UPDATE OR DELETE ON %I \
               FOR EACH STATEMENT EXECUTE FUNCTION sim_refuse_writes()', t); \
           END LOOP; \
         END $d$;"
    );
    sqlx::raw_sql(&sql).execute(pool).await?;
    Ok(())
}

/// Turns the refusal of [`install_write_refusal`] on (every write fails
/// with SQLSTATE 53100) or off, from `at` (kept in the flag row, for
/// whoever reads the database during a run).
pub async fn refuse_writes(store: &Store, on: bool, at: DateTime<Utc>) -> Result<()> {
    let pool = pg(store)?;
    let mut tx = pool.begin().await?;
    sqlx::query("DELETE FROM sim_disk_full")
        .execute(&mut *tx)
        .await?;
    if on {
        sqlx::query("INSERT INTO sim_disk_full (since) VALUES ($1)")
            .bind(trunc(at))
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Deadlocks PostgreSQL has detected in this database
/// (`pg_stat_database.deadlocks`), including those of statements whose
/// caller retries them without a word (a lease renewal, a record kept for
/// the next pass); `0` on SQLite, which has no row locks. The count is
/// flushed by each backend within about a second of its transaction.
pub async fn deadlocks_detected(store: &Store) -> Result<i64> {
    if store.backend() == Backend::Sqlite {
        return Ok(0);
    }
    let count: Option<i64> = sqlx::query_scalar(
        "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()",
    )
    .fetch_one(pg(store)?)
    .await?;
    Ok(count.unwrap_or(0))
}
