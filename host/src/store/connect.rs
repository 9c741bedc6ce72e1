//! Opening a [`Store`]: one URL as it always was, or several PostgreSQL
//! servers of which the store uses the primary (see `primary`).

use std::str::FromStr;
use std::sync::Arc;

use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteAutoVacuum, SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::primary::Primary;
use super::{Db, Result, Store, StoreError};

/// Connections of the worker's pool on PostgreSQL.
const WORKER_CONNECTIONS: u32 = 16;
/// Connections of the request pool ([`Store::for_requests`]).
const REQUEST_CONNECTIONS: u32 = 8;

fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

impl Store {
    /// Connects by URL scheme: `postgres://` or `postgresql://` → PostgreSQL,
    /// `sqlite:` → an SQLite file (created if missing). A PostgreSQL URL
    /// may name several hosts in libpq's form (`postgresql://u@h1,h2/db`):
    /// see [`Store::connect_any`].
    ///
    /// Why these SQLite settings: WAL lets readers (the API) run while the
    /// worker writes; `busy_timeout` turns writer contention into a short
    /// wait instead of an error; foreign keys are on so the policy table's FK
    /// holds; a new file is made with `auto_vacuum = INCREMENTAL`, so the
    /// retention can give the pages it frees back to the file system
    /// (`Store::give_back_space`; a file made before keeps its mode until
    /// a `VACUUM`). `sqlite::memory:` gets a single connection, because every
    /// connection to `:memory:` would otherwise be a different database.
    /// Does not migrate: call [`Store::migrate`].
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_any(&[url]).await
    }

    /// Connects to the first writable server among `urls` (each URL's
    /// hosts in order, then the next URL's), when they name more than one
    /// PostgreSQL server: every connection is refused on a standby, and
    /// [`Store::follow_primary`] points the store at another candidate when
    /// the primary fails over. One server (or an SQLite file) is connected
    /// to as it is, with none of that.
    pub async fn connect_any(urls: &[&str]) -> Result<Self> {
        let Some(first) = urls.first() else {
            return Err(StoreError::UnsupportedUrl(String::new()));
        };
        if urls.len() > 1 {
            if let Some(other) = urls.iter().find(|u| !is_postgres(u)) {
                let scheme = other.split(':').next().unwrap_or_default().to_owned();
                return Err(StoreError::UnsupportedUrl(scheme));
            }
        }
        if is_postgres(first) {
            let era = Arc::default();
            if let Some(primary) = Primary::from_urls(urls, Arc::clone(&era))? {
                primary.find_first().await?;
                let pool = primary
                    .pool_options()
                    .max_connections(WORKER_CONNECTIONS)
                    .connect_with(primary.current_options())
                    .await?;
                primary.adopt(&pool);
                return Ok(Self {
                    db: Db::Pg(pool),
                    primary: Some(primary),
                    era,
                });
            }
            let pool = PgPoolOptions::new()
                .max_connections(WORKER_CONNECTIONS)
                .connect(first)
                .await?;
            return Ok(Self::from_pg_pool(pool));
        }
        let url = *first;
        if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .busy_timeout(std::time::Duration::from_secs(10))
                .foreign_keys(true)
                .auto_vacuum(SqliteAutoVacuum::Incremental);
            let in_memory = url.contains(":memory:") || url.contains("mode=memory");
            let pool = if in_memory {
                SqlitePoolOptions::new()
                    .max_connections(1)
                    .min_connections(1)
                    .idle_timeout(None)
                    .max_lifetime(None)
                    .connect_with(options)
                    .await?
            } else {
                SqlitePoolOptions::new()
                    .max_connections(8)
                    .connect_with(options)
                    .await?
            };
            return Ok(Self::from_sqlite_pool(pool));
        }
        let scheme = url.split(':').next().unwrap_or_default().to_owned();
        Err(StoreError::UnsupportedUrl(scheme))
    }

    /// Connects to an existing, migrated store to read it, as
    /// [`Store::connect_any`] but creating and changing nothing: a missing
    /// SQLite file is [`StoreError::NoDatabase`] (not a new empty one), and
    /// a database not migrated to this binary's schema is refused (see
    /// [`Store::check_migrated`]). What `status` and `policy replay` open.
    pub async fn open_to_read(urls: &[&str]) -> Result<Self> {
        let store = match sqlite_to_read(urls)? {
            Some(options) => {
                let pool = SqlitePoolOptions::new()
                    .max_connections(2)
                    .connect_with(options)
                    .await?;
                Self::from_sqlite_pool(pool)
            }
            None => Self::connect_any(urls).await?,
        };
        store.check_migrated().await?;
        Ok(store)
    }

    /// Wraps an existing PostgreSQL pool (an embedding runtime may share its own).
    pub fn from_pg_pool(pool: PgPool) -> Self {
        Self {
            db: Db::Pg(pool),
            primary: None,
            era: Arc::default(),
        }
    }

    /// Wraps an existing SQLite pool. The caller is responsible for the
    /// settings [`Store::connect`] applies (WAL, busy timeout, foreign keys).
    pub fn from_sqlite_pool(pool: SqlitePool) -> Self {
        Self {
            db: Db::Lite(pool),
            primary: None,
            era: Arc::default(),
        }
    }

    /// A store for request paths: on PostgreSQL a second pool to the same
    /// database whose connections are waited for at most `acquire`, so that
    /// during an outage a request answers (a 503) within that time rather
    /// than after sqlx's default 30 s, while the worker's pool keeps
    /// waiting as before. It connects lazily and holds at most 8
    /// connections, and follows the primary with the worker's pool. SQLite
    /// is a local file that cannot be unreachable: the same pool serves
    /// both.
    pub fn for_requests(&self, acquire: std::time::Duration) -> Self {
        let Db::Pg(pool) = &self.db else {
            return self.clone();
        };
        let (options, pool_options) = match &self.primary {
            Some(primary) => (primary.current_options(), primary.pool_options()),
            None => ((*pool.connect_options()).clone(), PgPoolOptions::new()),
        };
        let requests = pool_options
            .max_connections(REQUEST_CONNECTIONS)
            .acquire_timeout(acquire)
            .connect_lazy_with(options);
        if let Some(primary) = &self.primary {
            primary.adopt(&requests);
        }
        Self {
            db: Db::Pg(requests),
            primary: self.primary.clone(),
            era: Arc::clone(&self.era),
        }
    }

    /// Follows the primary until `shutdown` (see `primary`): a no-op that
    /// returns at once for a single server or SQLite. `serve` runs it as
    /// one of its tasks.
    pub async fn follow_primary(&self, shutdown: CancellationToken) {
        if let Some(primary) = &self.primary {
            primary.follow(shutdown).await;
        }
    }

    /// Changes each time the store switches to another primary, for a
    /// connection held outside the pools (the worker's LISTEN) to be opened
    /// again; `None` for a single server.
    pub fn primary_switches(&self) -> Option<watch::Receiver<u64>> {
        self.primary.as_ref().map(|p| p.switches())
    }
}

/// For a read of one SQLite file, options that neither create it nor
/// change it: no journal mode and no auto-vacuum mode (each is written
/// into the file; the file keeps those it was made with). A missing file is
/// [`StoreError::NoDatabase`]; `None` for an in-memory database or another
/// scheme.
fn sqlite_to_read(urls: &[&str]) -> Result<Option<SqliteConnectOptions>> {
    let [url] = urls else {
        return Ok(None);
    };
    if !url.starts_with("sqlite:") || url.contains(":memory:") || url.contains("mode=memory") {
        return Ok(None);
    }
    let options = SqliteConnectOptions::from_str(url)?
        .create_if_missing(false)
        .busy_timeout(std::time::Duration::from_secs(10));
    let path = options.get_filename();
    if !path.exists() {
        return Err(StoreError::NoDatabase(path.display().to_string()));
    }
    Ok(Some(options))
}
