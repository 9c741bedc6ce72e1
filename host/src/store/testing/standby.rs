//! A lagging standby, for the fault-injection simulation: a copy of every
//! table of the engine (and `executions`) that is brought up to date only
//! when the simulation says ([`replicate`]), and a failover to it
//! ([`fail_over`]) that puts the copy back in place of the tables, so every
//! commit made since the last [`replicate`] is lost, as an asynchronous
//! standby promoted after its primary died loses the primary's last
//! commits.
//!
//! Why a copy and not a real standby: a real one streams within
//! milliseconds, so a failover on this machine would rarely lose anything,
//! and never at a moment the simulation chose. The copy lags as far as the
//! standby fence allows (the simulation replicates right before each agent
//! call, which is what the fence guarantees), which is the worst an
//! asynchronous standby can do. What the fence itself does against a real
//! standby is tested against real clusters (`worker_faults::standby`).
//!
//! Sequences are not put back (a promoted standby's sequences may skip
//! values, never repeat one), and triggers do not fire while the tables are
//! put back: the copy already holds what they wrote.

use tokio::sync::Mutex;

use super::super::decode::RowExt;
use super::super::dialect::{query, Tx};
use super::super::{Backend, Result, Store, StoreError};

/// Copies and failovers take their snapshots one at a time, so the copy
/// never goes back to an older state than one it already had.
static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

/// The engine's tables on PostgreSQL (a function, so the statements below
/// stay one each).
const PG_INSTALL: &str = "\
CREATE SCHEMA IF NOT EXISTS sim_standby;
CREATE OR REPLACE FUNCTION sim_engine_tables() RETURNS SETOF text LANGUAGE sql STABLE AS $f$
  SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()
    AND (tablename LIKE 'nomos\\_%' OR tablename = 'executions') ORDER BY 1 $f$;
DO $d$ DECLARE t text; BEGIN
  FOR t IN SELECT sim_engine_tables() LOOP
    EXECUTE format('CREATE TABLE IF NOT EXISTS sim_standby.%I (LIKE %I.%I)', t, current_schema(), t);
  END LOOP;
END $d$;
CREATE OR REPLACE FUNCTION sim_replicate() RETURNS void LANGUAGE plpgsql AS $f$
DECLARE t text; BEGIN
  FOR t IN SELECT sim_engine_tables() LOOP
    EXECUTE format('TRUNCATE sim_standby.%I', t);
    EXECUTE format('INSERT INTO sim_standby.%I SELECT * FROM %I', t, t);
  END LOOP;
END $f$;
CREATE OR REPLACE FUNCTION sim_lock_engine_tables() RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
  EXECUTE (SELECT 'LOCK TABLE ' || string_agg(format('%I', n), ', ')
    || ' IN ACCESS EXCLUSIVE MODE NOWAIT' FROM sim_engine_tables() n);
END $f$;
CREATE OR REPLACE FUNCTION sim_fail_over() RETURNS void LANGUAGE plpgsql AS $f$
DECLARE t text; BEGIN
  PERFORM set_config('session_replication_role', 'replica', true);
  EXECUTE (SELECT 'LOCK TABLE ' || string_agg(format('%I', n), ', ')
    || ' IN ACCESS EXCLUSIVE MODE NOWAIT' FROM sim_engine_tables() n);
  EXECUTE (SELECT 'TRUNCATE ' || string_agg(format('%I', n), ', ') FROM sim_engine_tables() n);
  FOR t IN SELECT sim_engine_tables() LOOP
    EXECUTE format('INSERT INTO %I OVERRIDING SYSTEM VALUE SELECT * FROM sim_standby.%I', t, t);
  END LOOP;
END $f$;";

/// The engine's tables on SQLite.
const LITE_TABLES: &str = "SELECT name FROM sqlite_master WHERE type = 'table' \
     AND (name LIKE 'nomos\\_%' ESCAPE '\\' OR name = 'executions') ORDER BY name";

/// The copy of table `t` on SQLite (one database file, no schemas).
fn lite_copy(table: &str) -> String {
    format!("\"sim_standby__{table}\"")
}

/// Makes the copy of every engine table, as it is now (PostgreSQL needs a
/// role that may set `session_replication_role`, a superuser, for
/// [`fail_over`]). Run it after the migrations; idempotent.
pub async fn install_lagging_standby(store: &Store) -> Result<()> {
    match store.backend() {
        Backend::Postgres => {
            sqlx::raw_sql(PG_INSTALL).execute(super::pg(store)?).await?;
        }
        Backend::Sqlite => {
            for table in lite_tables(store).await? {
                let sql = format!(
                    "CREATE TABLE IF NOT EXISTS {} AS SELECT * FROM \"{table}\" WHERE 0",
                    lite_copy(&table)
                );
                query(sql).execute(store).await?;
            }
        }
    }
    replicate(store, || true).await
}

/// Brings the copy up to date, if `wanted()` (called once no other copy
/// or failover runs, with no await from it to the copy's snapshot) says
/// so: the copy then holds every commit made before this call, read in one
/// snapshot.
pub async fn replicate(store: &Store, wanted: impl FnOnce() -> bool) -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    if !wanted() {
        return Ok(());
    }
    let tables = lite_tables(store).await?;
    let mut tx = store.begin().await?;
    if store.backend() == Backend::Postgres {
        // One snapshot for every table: the copy is one moment's state.
        query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            .execute(&mut tx)
            .await?;
    }
    copy(&mut tx, &tables).await?;
    tx.commit().await
}

/// Fails over to the copy: every engine table holds again what it held at
/// the copy's last update; what was committed since is gone. One
/// transaction, which first keeps every other writer out. Then, with no
/// await in between, the store's primary era is counted up (as a switch to
/// a new primary counts it: a worker that claimed before this does not
/// call on that claim after it) and `catch_up()` says whether the copy
/// must first be brought up to date: the calls let out before this moment
/// were fenced, so their claims are on the standby.
pub async fn fail_over(store: &Store, catch_up: impl FnOnce() -> bool) -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let tables = lite_tables(store).await?;
    let mut tx = keep_writers_out(store).await?;
    count_primary_switch(store);
    if catch_up() {
        copy(&mut tx, &tables).await?;
    }
    if store.backend() == Backend::Postgres {
        query("SELECT sim_fail_over()").execute(&mut tx).await?;
        return tx.commit().await;
    }
    // SQLite cannot turn triggers off: they are dropped and made again in
    // the same transaction.
    let triggers =
        query("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND sql IS NOT NULL")
            .fetch_all(&mut tx)
            .await?;
    let mut again = Vec::new();
    for row in &triggers {
        let (name, sql) = (row.text("name")?, row.text("sql")?);
        query(format!("DROP TRIGGER \"{name}\""))
            .execute(&mut tx)
            .await?;
        again.push(sql);
    }
    query("PRAGMA defer_foreign_keys = ON")
        .execute(&mut tx)
        .await?;
    for table in &tables {
        query(format!("DELETE FROM \"{table}\""))
            .execute(&mut tx)
            .await?;
        let copy = lite_copy(table);
        query(format!("INSERT INTO \"{table}\" SELECT * FROM {copy}"))
            .execute(&mut tx)
            .await?;
    }
    for sql in again {
        query(sql).execute(&mut tx).await?;
    }
    tx.commit().await
}

/// Counts a switch to another primary in `store`'s primary era, as the
/// store does when it follows a failover among several servers, without
/// one: for a test of what the worker does when its claim is of an older
/// era than its call.
pub fn count_primary_switch(store: &Store) {
    store.era.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

/// Copies every engine table into its copy, in `tx`.
async fn copy(tx: &mut Tx<'static>, tables: &[String]) -> Result<()> {
    if tx.backend() == Backend::Postgres {
        query("SELECT sim_replicate()").execute(&mut *tx).await?;
        return Ok(());
    }
    for table in tables {
        let copy = lite_copy(table);
        query(format!("DELETE FROM {copy}"))
            .execute(&mut *tx)
            .await?;
        query(format!("INSERT INTO {copy} SELECT * FROM \"{table}\""))
            .execute(&mut *tx)
            .await?;
    }
    Ok(())
}

/// A transaction no other writer can commit beside: SQLite's `BEGIN
/// IMMEDIATE`; on PostgreSQL every engine table locked, all at once or
/// none, tried again a millisecond later while a worker holds one (waiting
/// for them one by one would deadlock with a worker's transaction that
/// holds one and waits for another, and PostgreSQL might end the worker's).
async fn keep_writers_out(store: &Store) -> Result<Tx<'static>> {
    loop {
        let mut tx = store.begin().await?;
        if store.backend() == Backend::Sqlite {
            return Ok(tx);
        }
        match query("SELECT sim_lock_engine_tables()")
            .execute(&mut tx)
            .await
        {
            Ok(_) => return Ok(tx),
            Err(StoreError::Database(sqlx::Error::Database(e)))
                if e.code().as_deref() == Some("55P03") =>
            {
                drop(tx);
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The engine's tables on SQLite; none on PostgreSQL, whose functions
/// find them.
async fn lite_tables(store: &Store) -> Result<Vec<String>> {
    if store.backend() == Backend::Postgres {
        return Ok(Vec::new());
    }
    let rows = query(LITE_TABLES).fetch_all(store).await?;
    rows.iter().map(|r| r.text("name")).collect()
}
