//! Storage: every SQL query of nomos-continue, for PostgreSQL (production) and
//! an SQLite file (the embedded default), behind one [`Store`].
//!
//! # Why one module owns all SQL
//!
//! The worker's guarantees (a link never moves session, no execution is
//! continued twice, at most one continuation in flight per session, every
//! state change is a compare-and-set against the lease holder) live in the
//! `WHERE` clauses and transactions here. Keeping them in one place, behind
//! typed functions, means the worker and the API cannot bypass them, and one
//! conformance suite (`tests/tests/storage/store_conformance.rs`) checks both backends.
//!
//! # Conventions
//!
//! - **Time is an argument.** Every function that writes or compares a time
//!   takes `now: DateTime<Utc>` from the caller; no query reads the database
//!   clock. Tests inject a clock, and replicas with skewed database clocks
//!   agree with the worker that decided. Times are kept at microsecond
//!   precision (PostgreSQL's), so a value read back equals the value written.
//! - **Ids are [`Uuid`]s.** Text from the outside goes through [`parse_uuid`],
//!   the single parse boundary, which yields [`StoreError::InvalidUuid`].
//! - **Representation.** PostgreSQL uses `UUID`, `TIMESTAMPTZ`, `UUID[]`.
//!   SQLite uses lowercase hyphenated `TEXT` for UUIDs, `INTEGER`
//!   microseconds since the Unix epoch (UTC) for times (they compare as
//!   numbers, which RFC 3339 text with varying fractions would not), and a
//!   JSON array for `execution_ids`.
//! - **Expected refusals are values, not errors.** For example
//!   [`PlanOutcome::SessionBusy`] or [`AttemptOutcome::LeaseLost`]; a
//!   [`StoreError`] means the input was malformed or the database failed.
//!   Every refusal rolls back, so nothing is ever half written.
//!
//! # One function, two dialects
//!
//! Each store function is written once, against the private `dialect`
//! module, so the Rust around a statement (its checks, its transaction,
//! what a refusal returns) cannot drift between the backends: a fix lands
//! on both. Arguments are `dialect::Arg`s, bound as each backend represents
//! them (the representation above lives there and in `decode`, nowhere
//! else); rows are read through `decode::RowExt`; statements run on the
//! pool or on a `dialect::Tx`, begun with `BEGIN IMMEDIATE` on SQLite so a
//! read-then-write never fails half way with `SQLITE_BUSY`. Placeholders
//! are `$1`, `$2`, … on both backends, so most statements have one text.
//! Where the SQL really differs, both texts sit side by side at the call
//! (`Backend::pick`) or come from a `Backend` helper: the claim query
//! (PostgreSQL locks the rows it picks `FOR UPDATE SKIP LOCKED` and their
//! windows `FOR SHARE`; SQLite holds the write lock), the other lock
//! clauses, an id list (`= ANY` of an array, or a JSON list), the claims
//! passed as pairs, and `GREATEST` against the two-argument `MAX`.

mod chat;
mod connect;
mod decode;
mod deliveries;
mod dialect;
mod episode;
mod executions;
mod handle;
mod keys;
mod link_data;
mod links;
mod migrate;
mod policy;
mod primary;
mod probe;
mod read;
mod retention;
mod session_push;
mod standbys;
mod tasks;
#[cfg(feature = "test-support")]
pub mod testing;
mod types;
mod upkeep;
mod windows;
mod workers;

#[cfg(feature = "test-support")]
pub use chat::history::SessionNotice;
pub use deliveries::notice::NoticeAbout;
#[cfg(feature = "test-support")]
pub use deliveries::operator::OperatorCopy;
pub use deliveries::operator::{OperatorNotice, OperatorOutcome};
pub use deliveries::plan::FreshClaim;
pub use deliveries::record::FailedCall;
#[cfg(feature = "test-support")]
pub use deliveries::settle::OPERATOR_DROP_REASON;
pub use deliveries::settle::{OperatorDrop, RetryOutcome};
pub use episode::Episode;
pub use handle::Database;
pub use keys::KeyClaim;
pub use link_data::{LinkData, LinkTask, LinkTrace};
pub use links::stuck::{StuckExecution, STUCK_CLOSING_KEY, STUCK_KEY};
pub use links::Poll;
#[cfg(feature = "test-support")]
pub use migrate::LOCK_ATTEMPTS;
pub use policy::classes::StoredClass;
pub use policy::decisions::{
    DecisionFilter, InputParts, LoggedDecision, NewDecision, Recorded, SeenWindow,
};
pub use policy::shadow::Disagreement;
pub use read::notices::NoticeRow;
#[cfg(feature = "test-support")]
pub use read::notices::OperatorDelivery;
#[cfg(feature = "test-support")]
pub use read::overview::{Backlog, Overview};
pub use read::pulse::{Pulse, CHART_HOURS, PICKUP_WINDOW, RECENT};
#[cfg(feature = "test-support")]
pub use read::session::NoticeCursor;
#[cfg(feature = "test-support")]
pub use read::session::SessionSummary;
pub use read::session::{
    check_limit, each_page, DeliveryCursor, LinkCursor, Page, SessionCounts, DEFAULT_PAGE_LIMIT,
    MAX_PAGE_LIMIT,
};
pub use read::sessions::{SessionCursor, SessionFilter, SessionRow};
pub use read::status::{Judged, SessionStatus};
pub use read::timeline::Shown;
#[cfg(feature = "test-support")]
pub use read::timeline::SHOWN_CHARS;
pub use session_push::{PushedTaskLink, SessionPush};
pub use standbys::Standbys;
#[cfg(feature = "test-support")]
pub use standbys::WalPosition;
pub use tasks::{TaskAgent, TaskRecord};
#[cfg(feature = "test-support")]
pub use upkeep::{TableUpkeep, VacuumSettings};

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use sqlx::postgres::PgPool;
use sqlx::sqlite::SqlitePool;
use thiserror::Error;
use uuid::Uuid;

use decode::RowExt;
use dialect::query;
pub use types::*;

/// The PostgreSQL `LISTEN`/`NOTIFY` channel that wakes the worker.
///
/// Why a constant: the notifier ([`Store::notify_wake`], called inside
/// [`Store::upsert_execution_status`]) and the listener in the worker must
/// agree on it. The payload is empty: a wake-up only means "look again";
/// correctness never depends on it arriving.
pub const WAKE_CHANNEL: &str = "nomos_continue_wake";

/// The longest assent window a single approval can open or extend to.
///
/// The design bounds automatic continuation to 30 minutes after the
/// operator's approval; [`Store::approve`] refuses anything longer.
pub const MAX_WINDOW: Duration = Duration::minutes(30);

/// Everything that can go wrong in the store.
///
/// Malformed input gets its own variant so the API can answer with a 4xx
/// instead of a 500; database failures are passed through.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A string that should have been a UUID was not (the parse boundary is
    /// `parse_uuid`).
    #[error("malformed UUID: {0:?}")]
    InvalidUuid(String),
    /// The database URL names no supported backend. Only the scheme is kept,
    /// so a password in the URL never reaches a log.
    #[error(
        "unsupported database URL scheme {0:?}: expected postgres://, postgresql:// or sqlite:"
    )]
    UnsupportedUrl(String),
    /// An argument outside its domain (an unknown route, an empty status, a
    /// policy hash that does not match the bytes, ...).
    #[error("invalid {field}: {reason}")]
    InvalidValue {
        /// Which argument.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// An approval for zero, negative or more than `MAX_WINDOW` (30 minutes) time.
    #[error("approval duration must be > 0 and <= 30 minutes, got {0}")]
    InvalidDuration(Duration),
    /// `Store::activate_policy` with a hash that was never saved.
    #[error("unknown policy revision {0}")]
    UnknownPolicy(String),
    /// A stored value outside the domain the migrations allow (for example a
    /// row written by hand). Reported rather than guessed at.
    #[error("unexpected value in column {column}: {value:?}")]
    Corrupt {
        /// The column that held it.
        column: &'static str,
        /// The value found.
        value: String,
    },
    /// Several PostgreSQL servers were given and none is a writable
    /// primary: what each answered (never a password).
    #[error("no writable PostgreSQL primary among the servers given: {0}")]
    NoPrimary(String),
    /// The database failed (connection, constraint, ...).
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// A migration failed or the applied migrations do not match these.
    #[error("migration error: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The database records a migration newer than any this binary embeds:
    /// a newer release migrated it. Refused, because this code cannot know
    /// what that schema means.
    #[error(
        "the database is at migration {database}, newer than this binary's latest ({binary}): \
         it was migrated by a newer nomos-continue. Run that release (or a later one); to go \
         back to this one, first revert the migrations after {binary} with the newer \
         release's scripts (sqlx migrate revert --target-version {binary})"
    )]
    NewerSchema {
        /// The highest version recorded in `_sqlx_migrations`.
        database: i64,
        /// The highest version this binary embeds.
        binary: i64,
    },
    /// A read was pointed at an SQLite file that does not exist. Reading
    /// never creates one: it would report an empty system as if it were
    /// the real one.
    #[error(
        "no SQLite database at {0}: the file does not exist (`nomos-continue migrate` or \
         `serve` creates it; check the path, or --database-url)"
    )]
    NoDatabase(String),
    /// A read was pointed at a database whose schema is not this binary's
    /// latest (none at all, or an older one). Reading never migrates.
    #[error(
        "the database {found}; this binary reads migration {binary}: run `nomos-continue \
         migrate` first (reading never migrates)"
    )]
    NotMigrated {
        /// What the database holds, in words.
        found: String,
        /// The highest version this binary embeds.
        binary: i64,
    },
    /// The database was migrated by a build from before the first release,
    /// whose migrations 018-044 were squashed into this release's: its
    /// schema cannot be migrated to this one. Refused; it must be recreated.
    #[error(
        "the database records migration {version} of a pre-release nomos-continue build \
         (its migrations were squashed before the first release), so it cannot be migrated. \
         Recreate the database and migrate it again; to keep the seed's link table, first \
         revert to 17 with that build (sqlx migrate revert --target-version 17)"
    )]
    PreRelease {
        /// The first recorded version that is not this binary's.
        version: i64,
    },
    /// A migration kept timing out waiting for a table lock (its
    /// `lock_timeout`, see `docs/operations.md`), so it was given up.
    #[error(
        "migration {version} could not take its table lock in {attempts} attempts: a long \
         transaction holds a lock on the table (see pg_stat_activity and pg_locks); end it or \
         run the migration again later. Nothing was changed by that migration"
    )]
    LockTimeout {
        /// The migration that timed out.
        version: i64,
        /// How many times it was tried.
        attempts: u32,
    },
}

impl StoreError {
    /// Whether the failure passes by itself, so that the same call may
    /// succeed later: a connection lost or refused, a pool with no free
    /// connection, a serialization failure or deadlock, a database shutting
    /// down or out of resources, SQLite busy. A corrupt row, a schema this
    /// build cannot use or a violated constraint is not: retrying changes
    /// nothing, so the API answers 500 rather than 503.
    pub fn is_transient(&self) -> bool {
        let StoreError::Database(e) = self else {
            return false;
        };
        match e {
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => true,
            sqlx::Error::Database(db) => {
                let code = db.code().unwrap_or_default();
                // PostgreSQL SQLSTATE classes 08 (connection), 40
                // (serialization, deadlock), 53 (resources), 57P (operator
                // intervention: shutdown, cannot connect now), 55P03 (lock
                // not available), 25006 (read-only transaction: a
                // standby, while the store finds the primary again);
                // SQLite's BUSY (5) and LOCKED (6), with
                // their extended codes (SQLite's codes are numbers shorter
                // than a SQLSTATE's five characters).
                code.starts_with("08")
                    || code.starts_with("40")
                    || code.starts_with("53")
                    || code.starts_with("57P")
                    || code == "55P03"
                    || code == "25006"
                    || (code.len() < 5
                        && matches!(code.parse::<i32>().map(|c| c & 0xff), Ok(5 | 6)))
            }
            _ => false,
        }
    }
}

/// Shorthand used throughout the store.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// A connection pool's figures as sqlx keeps them (see [`Store::pool_use`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolUse {
    /// Connections open, idle or in use.
    pub size: u32,
    /// Of those, the idle ones.
    pub idle: u32,
    /// The most the pool opens.
    pub max: u32,
}

/// Which database a store talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// PostgreSQL: production, many replicas, `FOR UPDATE SKIP LOCKED`, NOTIFY.
    Postgres,
    /// SQLite: the embedded default for one process; writers are serialised.
    Sqlite,
}

/// The pool behind a [`Store`].
#[derive(Clone, Debug)]
pub(crate) enum Db {
    Pg(PgPool),
    Lite(SqlitePool),
}

/// The one handle to the database. Cheap to clone (it clones a pool).
#[derive(Clone, Debug)]
pub struct Store {
    pub(crate) db: Db,
    /// The candidates and the watch over them, when several PostgreSQL
    /// servers were given (see `primary`); `None` for one server.
    pub(crate) primary: Option<Arc<primary::Primary>>,
    /// The primary era: counts the switches to another primary (shared by
    /// the clones of this store, its request store and its `primary`). A
    /// switch may lose the old primary's last commits: see
    /// [`Store::primary_era`].
    pub(crate) era: Arc<std::sync::atomic::AtomicU64>,
}

impl Store {
    /// How full this store's connection pool is now, for `/metrics`.
    pub fn pool_use(&self) -> PoolUse {
        fn of<DB: sqlx::Database>(pool: &sqlx::Pool<DB>) -> PoolUse {
            PoolUse {
                size: pool.size(),
                idle: u32::try_from(pool.num_idle()).unwrap_or(u32::MAX),
                max: pool.options().get_max_connections(),
            }
        }
        match &self.db {
            Db::Pg(pool) => of(pool),
            Db::Lite(pool) => of(pool),
        }
    }

    /// How many times the store has switched to another primary so far.
    /// The worker's standby fence reads it around a claim: a confirmation
    /// from the standbys proves a claim durable only if it was asked of
    /// the primary that committed the claim. Always 0 with one server.
    pub fn primary_era(&self) -> u64 {
        self.era.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Which backend this store talks to.
    pub fn backend(&self) -> Backend {
        match self.db {
            Db::Pg(_) => Backend::Postgres,
            Db::Lite(_) => Backend::Sqlite,
        }
    }

    /// The PostgreSQL pool, if any: the worker needs it for
    /// `PgListener::connect_with` to LISTEN on [`WAKE_CHANNEL`].
    pub fn pg_pool(&self) -> Option<&PgPool> {
        match &self.db {
            Db::Pg(pool) => Some(pool),
            Db::Lite(_) => None,
        }
    }

    #[cfg(feature = "test-support")]
    /// Runs one statement of raw SQL that returns no rows, on either
    /// backend: for operators' scripts and for tests that inject faults
    /// (a trigger that fails a write) the way a real database can fail.
    pub async fn execute_raw(&self, sql: &str) -> Result<u64> {
        Ok(match &self.db {
            Db::Pg(pool) => sqlx::raw_sql(sql).execute(pool).await?.rows_affected(),
            Db::Lite(pool) => sqlx::raw_sql(sql).execute(pool).await?.rows_affected(),
        })
    }

    /// Names of the tables in the current schema (PostgreSQL) or file
    /// (SQLite), sorted. Lets `status` and the tests see what the migrations
    /// created or removed without SQL outside this module.
    pub async fn tables(&self) -> Result<Vec<String>> {
        let sql = self.backend().pick(
            "SELECT table_name::text AS name FROM information_schema.tables \
             WHERE table_schema = current_schema() ORDER BY 1",
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') \
             AND name NOT LIKE 'sqlite_%' ORDER BY 1",
        );
        let rows = query(sql).fetch_all(self).await?;
        rows.iter().map(|r| r.text("name")).collect()
    }

    /// The database's clock (`clock_timestamp()` on PostgreSQL), the one
    /// clock every replica times windows by (see `clock::OffsetClock`).
    /// SQLite is a file on this machine: its clock is this machine's.
    pub async fn database_now(&self) -> Result<DateTime<Utc>> {
        match self.backend() {
            Backend::Postgres => query("SELECT clock_timestamp() AS now")
                .fetch_one(self)
                .await?
                .time("now"),
            Backend::Sqlite => Ok(Utc::now()),
        }
    }

    /// Wakes every worker listening on [`WAKE_CHANNEL`] (PostgreSQL). A no-op
    /// on SQLite, where the worker is in the same process and is signalled
    /// in memory by the caller.
    pub async fn notify_wake(&self) -> Result<()> {
        if let Db::Pg(_) = &self.db {
            query("SELECT pg_notify($1, '')")
                .bind(WAKE_CHANNEL)
                .execute(self)
                .await?;
        }
        Ok(())
    }

    /// Closes the pool, waiting for checked-out connections (graceful shutdown).
    pub async fn close(&self) {
        match &self.db {
            Db::Pg(pool) => pool.close().await,
            Db::Lite(pool) => pool.close().await,
        }
    }
}

/// Parses a UUID from outside input (a path segment, a JSON field).
///
/// This is the parse boundary: a malformed id becomes
/// [`StoreError::InvalidUuid`] (a 4xx for the API) before any query runs.
/// Accepts the forms `uuid` accepts (hyphenated, simple, braced, URN).
pub fn parse_uuid(text: &str) -> Result<Uuid> {
    Uuid::parse_str(text.trim()).map_err(|_| StoreError::InvalidUuid(text.to_owned()))
}

/// Removes duplicates while keeping first-seen order, so a caller passing the
/// same id twice gets the same result as passing it once.
pub(crate) fn dedup(ids: &[Uuid]) -> Vec<Uuid> {
    // A set, not `Vec::contains`: a pass hands in thousands of ids.
    let mut seen = std::collections::HashSet::with_capacity(ids.len());
    ids.iter().copied().filter(|id| seen.insert(*id)).collect()
}
