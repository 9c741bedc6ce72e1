//! Databases for the integration tests: a fresh PostgreSQL database or SQLite
//! file per test, migrated.
//!
//! PostgreSQL is the machine's server (`postgres://postgres@127.0.0.1:5432/postgres`,
//! override with `NOMOS_TEST_PG_URL`). Each test gets its own database named
//! `nomos_t_<unix seconds>_<uuid>`: identifiable by prefix, and old enough
//! ones (over an hour, left by a crashed or panicking run) are dropped once
//! per test process. When the server cannot be reached the PostgreSQL half
//! of a test is skipped with a line on stderr, except under `CI=true`, where
//! it panics: CI must fail, not silently skip.

use std::time::{SystemTime, UNIX_EPOCH};

use nomos_continue::store::Store;
use sqlx::{Connection, PgConnection};
use tempfile::TempDir;
use tokio::sync::OnceCell;

/// The admin URL when `NOMOS_TEST_PG_URL` is not set.
pub const DEFAULT_PG_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The newest migration, the same on both backends: the tests that list
/// the applied versions expect `17..=LATEST_MIGRATION`.
pub const LATEST_MIGRATION: i64 = 39;

/// Prefix of every test database, for identification and cleanup.
pub const TEST_DB_PREFIX: &str = "nomos_t_";

/// A PostgreSQL test database; drop it with [`PgTestDb::cleanup`].
pub struct PgTestDb {
    /// The store connected to it.
    pub store: Store,
    /// Its name.
    pub name: String,
    /// Its URL (for tools such as a second store or `sqlx migrate`).
    pub url: String,
}

impl PgTestDb {
    /// Closes the store and drops the database (best effort: a failure is
    /// printed, and the next run's cleanup catches it).
    pub async fn cleanup(self) {
        self.store.close().await;
        if let Ok(mut admin) = PgConnection::connect(&admin_url()).await {
            let sql = format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.name);
            if let Err(e) = sqlx::query(&sql).execute(&mut admin).await {
                eprintln!("could not drop test database {}: {e}", self.name);
            }
        }
    }
}

/// The admin URL: `NOMOS_TEST_PG_URL` or [`DEFAULT_PG_URL`].
pub fn admin_url() -> String {
    std::env::var("NOMOS_TEST_PG_URL").unwrap_or_else(|_| DEFAULT_PG_URL.to_owned())
}

/// Whether this run is CI's, where a missing service fails a test instead of
/// skipping it.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// The URL of another database on the same server as `admin`.
fn with_database(admin: &str, name: &str) -> String {
    let (base, query) = match admin.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (admin, None),
    };
    // postgres://user@host:port/db → replace the path after the authority.
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    let base = match base[after_scheme..].find('/') {
        Some(i) => &base[..after_scheme + i],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{name}?{q}"),
        None => format!("{base}/{name}"),
    }
}

static CLEANED: OnceCell<()> = OnceCell::const_new();

/// Drops `nomos_t_*` databases older than an hour (once per process).
async fn cleanup_old(admin: &mut PgConnection) {
    let names: Vec<String> = match sqlx::query_scalar(
        "SELECT datname::text FROM pg_database WHERE datname LIKE 'nomos\\_t\\_%'",
    )
    .fetch_all(&mut *admin)
    .await
    {
        Ok(n) => n,
        Err(_) => return,
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for name in names {
        let created: Option<u64> = name
            .strip_prefix(TEST_DB_PREFIX)
            .and_then(|rest| rest.split('_').next())
            .and_then(|secs| secs.parse().ok());
        if created.is_some_and(|c| c + 3600 < now) {
            let sql = format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)");
            let _ = sqlx::query(&sql).execute(&mut *admin).await;
        }
    }
}

/// A new, empty (not migrated) PostgreSQL database, or `None` (skip) when
/// the server is unreachable outside CI. Panics under `CI=true`.
pub async fn empty_postgres() -> Option<PgTestDb> {
    let admin = admin_url();
    let mut conn = match PgConnection::connect(&admin).await {
        Ok(c) => c,
        Err(e) => {
            if in_ci() {
                panic!("CI=true but PostgreSQL is unreachable at {admin}: {e}");
            }
            eprintln!("skipping PostgreSQL half: cannot connect to {admin}: {e}");
            return None;
        }
    };
    CLEANED.get_or_init(|| cleanup_old(&mut conn)).await;
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let name = format!("{TEST_DB_PREFIX}{secs}_{}", uuid::Uuid::new_v4().simple());
    let create = format!("CREATE DATABASE \"{name}\"");
    sqlx::query(&create)
        .execute(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
    let url = with_database(&admin, &name);
    let store = Store::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("connect to {name}: {e}"));
    Some(PgTestDb { store, name, url })
}

/// A new, migrated PostgreSQL database with its name, for tests that drop it.
pub async fn fresh_postgres_db() -> Option<PgTestDb> {
    let db = empty_postgres().await?;
    db.store
        .migrate()
        .await
        .unwrap_or_else(|e| panic!("migrate {}: {e}", db.name));
    Some(db)
}

/// A store on a new, migrated PostgreSQL database; `None` when skipped.
/// The database is left behind (cleaned up by a later run); use
/// [`fresh_postgres_db`] to drop it at the end.
pub async fn fresh_postgres() -> Option<Store> {
    fresh_postgres_db().await.map(|db| db.store)
}

/// A store on a new, migrated SQLite file in a temporary directory; keep the
/// directory alive as long as the store.
pub async fn fresh_sqlite() -> (Store, TempDir) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let url = format!("sqlite://{}", dir.path().join("nomos.db").display());
    let store = Store::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"));
    store
        .migrate()
        .await
        .unwrap_or_else(|e| panic!("migrate {url}: {e}"));
    (store, dir)
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn database_url_swaps_only_the_path() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/postgres", "x"),
            "postgres://postgres@127.0.0.1:5432/x"
        );
        assert_eq!(
            with_database("postgres://u:p@h/db?sslmode=disable", "x"),
            "postgres://u:p@h/x?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h", "x"), "postgres://h/x");
    }
}
