//! Running the migrations, safely on a live database.
//!
//! The seed's link table is written by the runtime while `serve` starts and
//! migrates, so the migrations must never make an insert wait long. The SQL
//! does most of that (catalog-only changes under a short `lock_timeout`,
//! indexes built `CONCURRENTLY`, constraints validated under a lock that
//! does not block writes; see `docs/operations.md`). This module adds what
//! SQL alone cannot:
//!
//! - **Retry on lock timeout.** A migration that gives up waiting for its
//!   lock (SQLSTATE 55P03) has rolled back; it is run again, a bounded
//!   number of times, then reported as [`StoreError::LockTimeout`].
//! - **Interrupted index builds.** A `CREATE INDEX CONCURRENTLY` that was
//!   interrupted leaves an INVALID index that `IF NOT EXISTS` would accept
//!   as built. Before running, such a leftover named by a pending
//!   no-transaction migration is dropped (under the migrator's lock, so it
//!   is never another migrator's build in progress).
//! - **The seed's migration, run again.** On a live database 017's table
//!   and index exist but nothing recorded 017 in `_sqlx_migrations`, so it
//!   runs again, and its `CREATE INDEX IF NOT EXISTS` takes SHARE on the
//!   table to find the index: it waits for every write transaction in
//!   flight, and inserts queue behind it. 017 is the seed's text and stays
//!   as it is, so its lock timeout is set here, around it.
//! - **Replicas starting together.** Only one process migrates at a time.
//!   A process waiting for sqlx's advisory lock holds a running statement,
//!   and the holder's `CREATE INDEX CONCURRENTLY` waits for every running
//!   statement: PostgreSQL would report a deadlock and abort one of them.
//!   So processes first take a lock of our own by polling
//!   `pg_try_advisory_lock` (no statement left waiting), and only its
//!   holder goes on to sqlx's lock, uncontended.
//! - **A newer schema.** A database migrated by a newer release is refused
//!   with both versions ([`StoreError::NewerSchema`]) rather than sqlx's
//!   "previously applied but is missing".
//! - **A pre-release schema.** The migrations 018-044 of the builds before
//!   the first release were squashed into 018-024. A database that applied
//!   them (a recorded 018-024 whose checksum is not this binary's; every
//!   such database has its own 018) is refused ([`StoreError::PreRelease`]):
//!   it must be recreated.
//!
//! The migrations are embedded by `host/build.rs`, which lists every file of
//! `migrations/<backend>` in OUT_DIR; [`Migration::new`] computes each
//! checksum as `sqlx::migrate!` and `sqlx migrate run` do, so a database
//! migrated by either matches.

use std::borrow::Cow;
use std::future::Future;
use std::ops::RangeInclusive;
use std::pin::Pin;
use std::sync::LazyLock;
use std::time::Duration;

use sqlx::error::BoxDynError;
use sqlx::migrate::{Migrate, MigrateError, Migration, MigrationSource, MigrationType, Migrator};
use sqlx::PgConnection;

use super::decode::RowExt;
use super::dialect::query;
use super::{Backend, Db, Result, Store, StoreError};

/// One migration file, as `host/build.rs` lists it in `migrations.rs`.
struct Embedded {
    version: i64,
    /// The file's name after the version, `_` read as a space (sqlx's).
    description: &'static str,
    kind: MigrationType,
    sql: &'static str,
    /// The file's first line is `-- no-transaction`.
    no_tx: bool,
}

/// `POSTGRES` and `SQLITE`, every file of `migrations/<backend>` in version
/// order, each up script before its down script.
mod embedded {
    use super::Embedded;
    include!(concat!(env!("OUT_DIR"), "/migrations.rs"));
}

/// Migrations for PostgreSQL, from `migrations/postgres` (017 is the seed's
/// link table).
static PG_MIGRATOR: LazyLock<Migrator> = LazyLock::new(|| migrator(embedded::POSTGRES));

/// Migrations for SQLite, from `migrations/sqlite`; the same version numbers
/// as PostgreSQL so both backends are always at the same schema step.
static SQLITE_MIGRATOR: LazyLock<Migrator> = LazyLock::new(|| migrator(embedded::SQLITE));

/// A migrator over `files`, set as `sqlx::migrate!` sets one (locking, no
/// applied version ignored).
fn migrator(files: &[Embedded]) -> Migrator {
    let migrations = files
        .iter()
        .map(|f| {
            Migration::new(
                f.version,
                Cow::Borrowed(f.description),
                f.kind,
                Cow::Borrowed(f.sql),
                f.no_tx,
            )
        })
        .collect();
    Migrator {
        migrations: Cow::Owned(migrations),
        ..Migrator::DEFAULT
    }
}

/// The versions the pre-release builds used: their 018-044, squashed into
/// 018-024 before the first release. A recorded version of 018-024 whose
/// checksum is not this build's names a pre-release database (every one
/// recorded its own 018). A version this binary does not have names
/// nothing: the releases after it number on from 025.
const PRE_RELEASE: RangeInclusive<i64> = 18..=44;

/// How many times [`Store::migrate`] runs the migrations when one of them
/// times out waiting for a lock. With [`FIRST_BACKOFF`] doubling up to
/// [`MAX_BACKOFF`], about half a minute in all: long enough to outlast a
/// typical long report query, short enough that a stuck deploy says so.
pub const LOCK_ATTEMPTS: u32 = 8;

/// The pause after the first lock timeout; doubled after each further one.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);

/// The longest pause between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// The seed's migration (see the module documentation).
const SEED: i64 = 17;

/// How long the seed's migration may wait for its lock: the same bound as
/// `018_schema.up.sql` sets for itself.
const SEED_LOCK_TIMEOUT: &str = "SET lock_timeout = '500ms'";

/// PostgreSQL's `lock_not_available`, raised when `lock_timeout` expires.
const LOCK_NOT_AVAILABLE: &str = "55P03";
/// PostgreSQL's `deadlock_detected`: a migrator of an older release (or
/// sqlx's CLI) waited on sqlx's lock while an index was built. Retried
/// like a lock timeout.
const DEADLOCK_DETECTED: &str = "40P01";

/// The advisory lock key only one migrating process holds ("nomosmig").
const MIGRATE_LOCK: i64 = 0x6e6f_6d6f_736d_6967;
/// How often a process waiting to migrate tries the lock again.
const MIGRATE_LOCK_POLL: Duration = Duration::from_millis(250);

impl Store {
    /// The embedded migrator for a backend, for tools that want to inspect
    /// or run migrations themselves.
    pub fn migrator(backend: Backend) -> &'static Migrator {
        match backend {
            Backend::Postgres => &PG_MIGRATOR,
            Backend::Sqlite => &SQLITE_MIGRATOR,
        }
    }

    /// Applies every pending migration (`nomos-continue migrate`, and `serve`,
    /// `status`, `policy replay`, `policy capture` and `demo` at start). Idempotent; the migrator records
    /// applied versions in `_sqlx_migrations`, exactly as
    /// `sqlx migrate run --source migrations/<backend>` does, so either tool
    /// can be used on the same database. Retries [`LOCK_ATTEMPTS`] times on
    /// a lock timeout; see the module documentation.
    pub async fn migrate(&self) -> Result<()> {
        self.migrate_with_attempts(LOCK_ATTEMPTS).await
    }

    /// [`Store::migrate`] with the number of attempts given (at least one),
    /// for an operator who would rather wait longer, or fail at once.
    pub async fn migrate_with_attempts(&self, attempts: u32) -> Result<()> {
        self.refuse_unknown_schema().await?;
        let attempts = attempts.max(1);
        let mut backoff = FIRST_BACKOFF;
        for attempt in 1..=attempts {
            match self.migrate_once().await {
                Err(StoreError::Migrate(MigrateError::ExecuteMigration(e, version)))
                    if is_lock_timeout(&e) =>
                {
                    if attempt == attempts {
                        return Err(StoreError::LockTimeout { version, attempts });
                    }
                    tracing::warn!(
                        version,
                        attempt,
                        "migration timed out waiting for a table lock; retrying in {backoff:?}"
                    );
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                other => return other,
            }
        }
        Ok(())
    }

    #[cfg(feature = "test-support")]
    /// Reverts applied migrations newer than `target` by running their down
    /// scripts (`target = 0` reverts everything). For operators rolling back
    /// and for the conformance suite, which checks that every down script runs.
    pub async fn undo_migrations(&self, target: i64) -> Result<()> {
        match &self.db {
            Db::Pg(pool) => PG_MIGRATOR.undo(pool, target).await?,
            Db::Lite(pool) => SQLITE_MIGRATOR.undo(pool, target).await?,
        }
        Ok(())
    }

    /// Whether every migration this binary embeds is applied: what
    /// `/readyz` asks of the database.
    pub async fn is_migrated(&self) -> Result<bool> {
        let applied = self.applied_migrations().await?;
        let latest = Self::migrator(self.backend())
            .iter()
            .map(|m| m.version)
            .max();
        Ok(applied.last().copied() == latest)
    }

    /// Refuses to read a database whose schema is not exactly this
    /// binary's: none (an empty database), an older one
    /// ([`StoreError::NotMigrated`]), a newer or pre-release one (as
    /// [`Store::migrate`] refuses them). What the read commands check
    /// instead of migrating.
    pub async fn check_migrated(&self) -> Result<()> {
        self.refuse_unknown_schema().await?;
        let binary = (Self::migrator(self.backend()).iter())
            .map(|m| m.version)
            .max()
            .unwrap_or_default();
        let found = match self.applied_migrations().await?.last() {
            Some(&version) if version == binary => return Ok(()),
            Some(version) => format!("is at migration {version}"),
            None => "holds no nomos-continue schema (it was never migrated)".to_string(),
        };
        Err(StoreError::NotMigrated { found, binary })
    }

    /// Versions recorded as applied, ascending (empty before the first
    /// migration). Used by `status` and by tests after up/down/up.
    pub async fn applied_migrations(&self) -> Result<Vec<i64>> {
        if !self.has_migrations_table().await? {
            return Ok(Vec::new());
        }
        let rows = query("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
            .fetch_all(self)
            .await?;
        rows.iter().map(|r| r.bigint("version")).collect()
    }

    async fn has_migrations_table(&self) -> Result<bool> {
        Ok(self.tables().await?.iter().any(|t| t == "_sqlx_migrations"))
    }

    /// Refuses a database whose recorded migrations are not this binary's:
    /// one a pre-release build migrated ([`StoreError::PreRelease`]), or one
    /// that records a migration newer than any this binary embeds
    /// ([`StoreError::NewerSchema`]). Either schema may differ from this
    /// code's in ways it does not know, so running (or migrating) would be a
    /// guess.
    async fn refuse_unknown_schema(&self) -> Result<()> {
        if !self.has_migrations_table().await? {
            return Ok(());
        }
        let rows = query("SELECT version, checksum FROM _sqlx_migrations ORDER BY version")
            .fetch_all(self)
            .await?;
        let mut applied = Vec::with_capacity(rows.len());
        for row in &rows {
            applied.push((row.bigint("version")?, row.bytes("checksum")?));
        }
        check_applied(Self::migrator(self.backend()), &applied)
    }

    /// One run of the migrator. On PostgreSQL it runs on one connection that
    /// first takes the migrator's advisory lock, so that the cleanup of
    /// interrupted index builds cannot race another migrator; the connection
    /// is closed if anything fails, because sqlx leaves the (session-level)
    /// advisory lock held when a migration fails, and a pooled connection
    /// holding it would block the next attempt forever.
    async fn migrate_once(&self) -> Result<()> {
        match &self.db {
            Db::Pg(pool) => {
                let mut conn = pool.acquire().await?;
                let result = migrate_pg(&mut conn).await;
                if result.is_err() {
                    // Best effort: the result already says what went wrong.
                    let _ = sqlx::Connection::close(conn.detach()).await;
                }
                result
            }
            Db::Lite(pool) => Ok(SQLITE_MIGRATOR.run(pool).await?),
        }
    }
}

/// Takes our migration lock (see the module documentation), drops
/// leftovers of interrupted index builds, runs, unlocks. The migrator takes
/// sqlx's own lock inside `run`, uncontended among our processes.
async fn migrate_pg(conn: &mut PgConnection) -> Result<()> {
    lock_migrations(conn).await?;
    conn.ensure_migrations_table().await?;
    drop_interrupted_indexes(conn).await?;
    run_seed(conn).await?;
    PG_MIGRATOR.run(&mut *conn).await?;
    sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(MIGRATE_LOCK)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Polls for the migration lock, so that waiting leaves no statement
/// running for another migrator's index build to wait on.
async fn lock_migrations(conn: &mut PgConnection) -> Result<()> {
    for polls in 0u64.. {
        let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(MIGRATE_LOCK)
            .fetch_one(&mut *conn)
            .await?;
        if locked {
            break;
        }
        // Once at first, then about every half minute.
        if polls % 120 == 0 {
            tracing::info!("another process is migrating the database; waiting for it");
        }
        tokio::time::sleep(MIGRATE_LOCK_POLL).await;
    }
    Ok(())
}

/// Runs the seed's migration, if pending, on its own under a lock timeout
/// (see the module documentation); the rest then finds it applied. The
/// timeout is the session's for that one run only: the later
/// no-transaction migrations must not have one, because
/// `CREATE INDEX CONCURRENTLY` waits (harmlessly) for every older
/// transaction and would be cancelled.
async fn run_seed(conn: &mut PgConnection) -> Result<()> {
    let Some(seed) = PG_MIGRATOR
        .iter()
        .find(|m| m.version == SEED && m.migration_type.is_up_migration())
    else {
        return Ok(());
    };
    let applied: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM _sqlx_migrations WHERE version = $1)")
            .bind(SEED)
            .fetch_one(&mut *conn)
            .await?;
    if applied {
        return Ok(());
    }
    let mut only = Migrator::new(Only(seed.clone())).await?;
    // Other applied versions are checked by the full run that follows.
    only.set_ignore_missing(true);
    sqlx::raw_sql(SEED_LOCK_TIMEOUT).execute(&mut *conn).await?;
    // On failure the caller closes the connection, and its timeout with it.
    only.run(&mut *conn).await?;
    sqlx::raw_sql("RESET lock_timeout")
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// One migration as a migration source, to run it alone.
#[derive(Debug)]
struct Only(Migration);

impl MigrationSource<'static> for Only {
    fn resolve(
        self,
    ) -> Pin<Box<dyn Future<Output = std::result::Result<Vec<Migration>, BoxDynError>> + Send>>
    {
        Box::pin(async move { Ok(vec![self.0]) })
    }
}

/// Drops each INVALID index of the current schema that a pending
/// no-transaction migration names: what an interrupted
/// `CREATE INDEX CONCURRENTLY` leaves behind, and what its `IF NOT EXISTS`
/// would otherwise take for a built index. Dropped `CONCURRENTLY`, so
/// writes to the table go on meanwhile.
async fn drop_interrupted_indexes(conn: &mut PgConnection) -> Result<()> {
    let applied: Vec<i64> = sqlx::query_scalar("SELECT version FROM _sqlx_migrations")
        .fetch_all(&mut *conn)
        .await?;
    let invalid: Vec<String> = sqlx::query_scalar(
        "SELECT c.relname::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
         JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE NOT i.indisvalid AND n.nspname = current_schema()",
    )
    .fetch_all(&mut *conn)
    .await?;
    for name in invalid {
        let named = PG_MIGRATOR.iter().any(|m| {
            m.migration_type.is_up_migration()
                && m.no_tx
                && !applied.contains(&m.version)
                && names(&m.sql, &name)
        });
        if named {
            tracing::warn!(index = %name, "dropping an index left invalid by an interrupted build");
            let sql = format!(
                "DROP INDEX CONCURRENTLY IF EXISTS \"{}\"",
                name.replace('"', "\"\"")
            );
            sqlx::raw_sql(&sql).execute(&mut *conn).await?;
        }
    }
    Ok(())
}

/// Checks the applied `(version, checksum)` pairs against `migrator`; see
/// [`Store::refuse_unknown_schema`]. A pre-release database is named as such
/// even when it also records versions beyond this binary's. A changed
/// checksum outside [`PRE_RELEASE`] is left to sqlx ("previously applied but
/// has been modified").
fn check_applied(migrator: &Migrator, applied: &[(i64, Vec<u8>)]) -> Result<()> {
    let ups = || {
        migrator
            .iter()
            .filter(|m| m.migration_type.is_up_migration())
    };
    for (version, checksum) in applied {
        let pre_release = PRE_RELEASE.contains(version)
            && ups()
                .find(|m| m.version == *version)
                .is_some_and(|known| *known.checksum != **checksum);
        if pre_release {
            return Err(StoreError::PreRelease { version: *version });
        }
    }
    let binary = ups().map(|m| m.version).max().unwrap_or(0);
    let database = applied.iter().map(|(v, _)| *v).max().unwrap_or(0);
    if database > binary {
        return Err(StoreError::NewerSchema { database, binary });
    }
    Ok(())
}

/// Whether `sql` contains `identifier` as a whole word.
fn names(sql: &str, identifier: &str) -> bool {
    sql.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|word| word.eq_ignore_ascii_case(identifier))
}

/// Whether a migration failed because `lock_timeout` expired.
fn is_lock_timeout(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|code| code == LOCK_NOT_AVAILABLE || code == DEADLOCK_DETECTED)
}

#[cfg(test)]
mod tests;
