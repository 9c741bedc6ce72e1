//! [`Database`]: the store as an embedding runtime holds it.
//!
//! Why a handle apart from [`Store`]: the store's hundred queries are the
//! engine's own (their guarantees live in their `WHERE` clauses, and a
//! caller that skips the worker would skip them). A runtime needs only to
//! open the database, migrate it and hand it to the assembly.

use sqlx::postgres::PgPool;

use super::{Backend, Result, Store};

/// An open database of nomos-continue: PostgreSQL, or an SQLite file.
/// Cheap to clone (it clones a pool).
#[derive(Clone, Debug)]
pub struct Database {
    store: Store,
}

impl Database {
    /// Connects by URL: `postgres://…` (or `postgresql://…`), or
    /// `sqlite:FILE` (created if missing). Does not migrate.
    pub async fn connect(url: &str) -> Result<Self> {
        Store::connect(url).await.map(|store| Self { store })
    }

    /// Connects to the primary among several PostgreSQL servers, and
    /// follows it through failovers (see `Store::connect_any`); one URL
    /// is [`Database::connect`].
    pub async fn connect_any(urls: &[&str]) -> Result<Self> {
        Store::connect_any(urls).await.map(|store| Self { store })
    }

    /// Over a PostgreSQL pool the runtime already has.
    pub fn from_pg_pool(pool: PgPool) -> Self {
        Self {
            store: Store::from_pg_pool(pool),
        }
    }

    /// Applies every pending migration (idempotent; replicas may race).
    pub async fn migrate(&self) -> Result<()> {
        self.store.migrate().await
    }

    /// Refuses a database not migrated to exactly this binary's schema
    /// (see `Store::check_migrated`), opened as the read commands open
    /// it, creating and changing nothing (see `Store::open_to_read`):
    /// what a replica started with `--no-migrate` checks instead of
    /// migrating.
    pub async fn check_migrated_at(urls: &[&str]) -> Result<()> {
        let store = Store::open_to_read(urls).await?;
        store.close().await;
        Ok(())
    }

    /// Which database this is.
    pub fn backend(&self) -> Backend {
        self.store.backend()
    }

    /// Closes the pool, waiting for connections in use.
    pub async fn close(&self) {
        self.store.close().await;
    }

    /// The store behind the handle, for the assembly.
    pub(crate) fn into_store(self) -> Store {
        self.store
    }

    /// A handle over a store a test opened.
    #[cfg(feature = "test-support")]
    pub fn over(store: Store) -> Self {
        Self { store }
    }
}
