//! The dialect layer: one statement, run on either backend.
//!
//! Every store function is written once against this module. What differs
//! between PostgreSQL and SQLite lives here and nowhere else:
//!
//! - **Arguments** ([`Arg`]): a UUID, a time or an id list is bound as the
//!   backend stores it (PostgreSQL `UUID`, `TIMESTAMPTZ`, `UUID[]`; SQLite
//!   lowercase `TEXT`, `INTEGER` microseconds, a JSON array). With
//!   [`trunc`] and the decoders in `decode.rs`, this is the only code that
//!   converts a time.
//! - **Statement text** ([`Query`]): placeholders are `$1`, `$2`, … on both
//!   backends (sqlx binds SQLite's `$NNN` parameters by number, like `?NNN`),
//!   so most statements have one text. Where the SQL really differs, the
//!   caller picks with [`Backend::pick`] (two texts side by side) or builds
//!   the fragment with [`Backend::in_ids`], [`Backend::lock`] or
//!   [`Backend::greatest`].
//! - **Where it runs** ([`On`]): the pool, or a transaction ([`Tx`]) begun
//!   the backend's way (SQLite with `BEGIN IMMEDIATE`, see [`SQLITE_BEGIN`]).
//! - **Rows** ([`Row`]): either backend's row, read through
//!   [`RowExt`](super::decode::RowExt).

use std::borrow::Cow;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::sqlite::{SqliteArguments, SqliteRow};
use sqlx::{PgConnection, PgPool, Postgres, Sqlite, SqliteConnection, SqlitePool, Transaction};
use uuid::Uuid;

use super::primary::Primary;
use super::{Backend, Db, Result, Store, StoreError, WAKE_CHANNEL};

/// SQLite transactions that will write start with `BEGIN IMMEDIATE`: taking
/// the write lock up front means a read-then-write never fails half way with
/// `SQLITE_BUSY` (the busy timeout covers the wait instead). PostgreSQL
/// transactions lock row by row (`FOR UPDATE`, `FOR SHARE`) in the SQL.
pub(crate) const SQLITE_BEGIN: &str = "BEGIN IMMEDIATE";

/// Truncates a time to microseconds, the precision both backends store, so
/// that what a caller writes and what it reads back compare equal.
pub(crate) fn trunc(t: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(t.timestamp_micros()).unwrap_or(t)
}

/// A time as SQLite stores it: microseconds since the Unix epoch, UTC (they
/// compare as numbers, which RFC 3339 text with varying fractions would not).
fn micros(t: DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

/// The inverse of [`micros`], for the decoders.
pub(crate) fn from_micros(column: &'static str, m: i64) -> Result<DateTime<Utc>> {
    DateTime::from_timestamp_micros(m).ok_or_else(|| StoreError::Corrupt {
        column,
        value: m.to_string(),
    })
}

/// Texts as a JSON array, the SQLite representation of a text list.
fn json_texts(texts: &[String]) -> String {
    serde_json::Value::from(texts).to_string()
}

/// The ids as a JSON array, the SQLite representation of a UUID list.
fn json_ids(ids: &[Uuid]) -> String {
    let parts: Vec<String> = ids.iter().map(|id| format!("\"{id}\"")).collect();
    format!("[{}]", parts.join(","))
}

impl Backend {
    /// `pg` on PostgreSQL, `lite` on SQLite: for the few statements whose
    /// SQL differs, written side by side at the call.
    pub(crate) fn pick<'s>(self, pg: &'s str, lite: &'s str) -> &'s str {
        match self {
            Self::Postgres => pg,
            Self::Sqlite => lite,
        }
    }

    /// "is one of the ids in parameter `param`" (an [`Arg::Ids`], or the
    /// texts of an [`Arg::Texts`]): `= ANY` of the array on PostgreSQL,
    /// membership in the JSON array on SQLite.
    pub(crate) fn in_ids(self, param: &str) -> String {
        match self {
            Self::Postgres => format!("= ANY({param})"),
            Self::Sqlite => format!("IN (SELECT value FROM json_each({param}))"),
        }
    }

    /// A row-lock clause (`FOR UPDATE SKIP LOCKED`, `FOR SHARE`, …) on
    /// PostgreSQL; nothing on SQLite, whose transactions hold the write lock
    /// from their `BEGIN IMMEDIATE` on.
    pub(crate) fn lock(self, clause: &'static str) -> &'static str {
        self.pick(clause, "")
    }

    /// Parameters holding lists of equal length, zipped into the relation
    /// `alias(column, …)`: one row per position. `columns` are
    /// `(parameter, column, PostgreSQL element type)`; the lists are bound
    /// as [`Arg::Ids`] or [`Arg::Texts`]. `UNNEST` of the arrays on
    /// PostgreSQL; on SQLite the first JSON array's elements, with the
    /// others' taken by position from their binary form (`jsonb($n)` of a
    /// bound argument is computed once per statement; joining `json_each`
    /// tables on their keys scans one per row of the other, and
    /// `json_extract` on six texts re-parsed them per row: an `INSERT` of
    /// 512 continuations took 168 ms and 155 ms that way). This is what
    /// lets one statement write a whole pass's rows (`INSERT … SELECT`,
    /// `UPDATE … FROM`).
    pub(crate) fn zip(self, alias: &str, columns: &[(&str, &str, &str)]) -> String {
        match self {
            Self::Postgres => {
                let params: Vec<String> = columns
                    .iter()
                    .map(|(param, _, ty)| format!("{param}::{ty}[]"))
                    .collect();
                let names: Vec<&str> = columns.iter().map(|(_, name, _)| *name).collect();
                format!(
                    "UNNEST({}) AS {alias}({})",
                    params.join(", "),
                    names.join(", ")
                )
            }
            Self::Sqlite => {
                let Some((first, _, _)) = columns.first() else {
                    return format!("(SELECT NULL WHERE 0) AS {alias}");
                };
                let values: Vec<String> = columns
                    .iter()
                    .enumerate()
                    .map(|(n, (param, name, _))| match n {
                        0 => format!("j.value AS {name}"),
                        _ => format!("jsonb({param}) ->> j.key AS {name}"),
                    })
                    .collect();
                format!(
                    "(SELECT {} FROM json_each({first}) AS j) AS {alias}",
                    values.join(", ")
                )
            }
        }
    }

    /// A UUID list column's value from `expr`, a JSON array of UUID strings
    /// (the per-row form a zipped text parameter can carry): a `UUID[]` in
    /// order on PostgreSQL, the JSON text itself on SQLite (which stores it
    /// so).
    pub(crate) fn ids_from_json(self, expr: &str) -> String {
        match self {
            Self::Postgres => format!(
                "ARRAY(SELECT x::uuid FROM jsonb_array_elements_text({expr}::jsonb) \
                 WITH ORDINALITY AS t(x, n) ORDER BY n)"
            ),
            Self::Sqlite => expr.to_string(),
        }
    }

    /// The larger of two values: `GREATEST` on PostgreSQL, the two-argument
    /// scalar `MAX` on SQLite.
    pub(crate) fn greatest(self) -> &'static str {
        self.pick("GREATEST", "MAX")
    }
}

/// A bind argument, encoded as its backend stores it.
#[derive(Clone, Debug)]
pub(crate) enum Arg<'a> {
    Uuid(Uuid),
    Time(DateTime<Utc>),
    OptTime(Option<DateTime<Utc>>),
    /// A UUID list: `UUID[]` on PostgreSQL, a JSON array on SQLite.
    Ids(&'a [Uuid]),
    Text(&'a str),
    OptText(Option<&'a str>),
    /// A text list: `TEXT[]` on PostgreSQL, a JSON array on SQLite.
    Texts(&'a [String]),
    Int(i32),
    OptInt(Option<i32>),
    BigInt(i64),
    Bool(bool),
    Bytes(&'a [u8]),
    /// Bytes or NULL, borrowed or built for the statement.
    OptBytes(Option<Cow<'a, [u8]>>),
}

macro_rules! arg_from {
    ($($t:ty => $v:ident),+ $(,)?) => {
        $(impl<'a> From<$t> for Arg<'a> {
            fn from(value: $t) -> Self {
                Self::$v(value)
            }
        })+
    };
}
arg_from!(
    Uuid => Uuid,
    DateTime<Utc> => Time,
    Option<DateTime<Utc>> => OptTime,
    &'a [Uuid] => Ids,
    &'a str => Text,
    Option<&'a str> => OptText,
    &'a [String] => Texts,
    i32 => Int,
    Option<i32> => OptInt,
    i64 => BigInt,
    bool => Bool,
    &'a [u8] => Bytes,
);

impl<'a> From<Option<&'a [u8]>> for Arg<'a> {
    fn from(value: Option<&'a [u8]>) -> Self {
        Self::OptBytes(value.map(Cow::Borrowed))
    }
}

impl<'a> From<Option<Vec<u8>>> for Arg<'a> {
    fn from(value: Option<Vec<u8>>) -> Self {
        Self::OptBytes(value.map(Cow::Owned))
    }
}

impl<'a> From<&'a Vec<Uuid>> for Arg<'a> {
    fn from(value: &'a Vec<Uuid>) -> Self {
        Self::Ids(value)
    }
}

/// One statement and its arguments, for either backend.
#[derive(Clone, Debug)]
pub(crate) struct Query<'a> {
    pub(crate) text: Cow<'a, str>,
    args: Vec<Arg<'a>>,
    /// Kept in the connection's statement cache (see [`Query::uncached`]).
    cached: bool,
}

/// A statement with `$n` placeholders (see the module docs).
pub(crate) fn query<'a>(text: impl Into<Cow<'a, str>>) -> Query<'a> {
    Query {
        text: text.into(),
        args: Vec::new(),
        cached: true,
    }
}

/// Where a statement runs: a pool, or the connection of a transaction.
/// On PostgreSQL with several servers, the primary's watch sees every
/// error (see [`seen`]).
pub(crate) enum On<'c> {
    PgPool(&'c PgPool, Option<&'c Primary>),
    LitePool(&'c SqlitePool),
    Pg(&'c mut PgConnection, Option<&'c Primary>),
    Lite(&'c mut SqliteConnection),
}

/// `result`, after showing its error to the primary's watch, which looks
/// for another primary at once when the error is how a lost one fails.
fn seen<T>(primary: Option<&Primary>, result: Result<T, sqlx::Error>) -> Result<T, sqlx::Error> {
    if let (Some(primary), Err(e)) = (primary, &result) {
        primary.suspect(e);
    }
    result
}

impl<'c> From<&'c Store> for On<'c> {
    fn from(store: &'c Store) -> Self {
        match &store.db {
            Db::Pg(pool) => Self::PgPool(pool, store.primary.as_deref()),
            Db::Lite(pool) => Self::LitePool(pool),
        }
    }
}

impl<'c, 't> From<&'c mut Tx<'t>> for On<'c> {
    fn from(tx: &'c mut Tx<'t>) -> Self {
        match tx {
            Tx::Pg(tx, primary) => Self::Pg(tx, primary.as_deref()),
            Tx::Lite(tx) => Self::Lite(tx),
        }
    }
}

/// A row of either backend; decode it with
/// [`RowExt`](super::decode::RowExt).
pub(crate) enum Row {
    Pg(PgRow),
    Lite(SqliteRow),
}

impl<'a> Query<'a> {
    /// Adds the next argument (`$1` first).
    pub(crate) fn bind(mut self, arg: impl Into<Arg<'a>>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Not kept prepared once run: for a statement whose text varies with
    /// its batch (a multi-row `VALUES` list). Cached, each batch size is a
    /// statement of its own held by every connection until evicted, and a
    /// compiled `INSERT` of hundreds of rows is hundreds of kilobytes: on
    /// SQLite that was most of `serve`'s heap under load (issue 47), on
    /// PostgreSQL it sits in every server backend.
    pub(crate) fn uncached(mut self) -> Self {
        self.cached = false;
        self
    }

    fn pg(&self) -> sqlx::query::Query<'_, Postgres, PgArguments> {
        let mut q = sqlx::query(&self.text).persistent(self.cached);
        for arg in &self.args {
            q = match *arg {
                Arg::Uuid(v) => q.bind(v),
                Arg::Time(v) => q.bind(v),
                Arg::OptTime(v) => q.bind(v),
                Arg::Ids(v) => q.bind(v),
                Arg::Text(v) => q.bind(v),
                Arg::OptText(v) => q.bind(v),
                Arg::Texts(v) => q.bind(v),
                Arg::Int(v) => q.bind(v),
                Arg::OptInt(v) => q.bind(v),
                Arg::BigInt(v) => q.bind(v),
                Arg::Bool(v) => q.bind(v),
                Arg::Bytes(v) => q.bind(v),
                Arg::OptBytes(ref v) => q.bind(v.as_deref()),
            };
        }
        q
    }

    fn lite(&self) -> sqlx::query::Query<'_, Sqlite, SqliteArguments<'_>> {
        self.lite_text(&self.text).persistent(self.cached)
    }

    /// `text` bound with this statement's arguments as SQLite takes them.
    pub(crate) fn lite_text<'q>(
        &'q self,
        text: &'q str,
    ) -> sqlx::query::Query<'q, Sqlite, SqliteArguments<'q>> {
        let mut q = sqlx::query(text);
        for arg in &self.args {
            q = match *arg {
                Arg::Uuid(v) => q.bind(v.to_string()),
                Arg::Time(v) => q.bind(micros(v)),
                Arg::OptTime(v) => q.bind(v.map(micros)),
                Arg::Ids(v) => q.bind(json_ids(v)),
                Arg::Text(v) => q.bind(v),
                Arg::OptText(v) => q.bind(v),
                Arg::Texts(v) => q.bind(json_texts(v)),
                Arg::Int(v) => q.bind(v),
                Arg::OptInt(v) => q.bind(v),
                Arg::BigInt(v) => q.bind(v),
                Arg::Bool(v) => q.bind(v),
                Arg::Bytes(v) => q.bind(v),
                Arg::OptBytes(ref v) => q.bind(v.as_deref()),
            };
        }
        q
    }

    /// Runs the statement; returns the number of rows it changed.
    pub(crate) async fn execute<'c>(&self, on: impl Into<On<'c>>) -> Result<u64> {
        Ok(match on.into() {
            On::PgPool(pool, p) => seen(p, self.pg().execute(pool).await)?.rows_affected(),
            On::LitePool(pool) => {
                self.plan_lite(pool).await;
                self.lite().execute(pool).await?.rows_affected()
            }
            On::Pg(conn, p) => seen(p, self.pg().execute(conn).await)?.rows_affected(),
            On::Lite(conn) => {
                self.plan_lite(&mut *conn).await;
                self.lite().execute(conn).await?.rows_affected()
            }
        })
    }

    /// Every row the statement returns.
    pub(crate) async fn fetch_all<'c>(&self, on: impl Into<On<'c>>) -> Result<Vec<Row>> {
        Ok(match on.into() {
            On::PgPool(pool, p) => wrap(seen(p, self.pg().fetch_all(pool).await)?, Row::Pg),
            On::LitePool(pool) => {
                self.plan_lite(pool).await;
                wrap(self.lite().fetch_all(pool).await?, Row::Lite)
            }
            On::Pg(conn, p) => wrap(seen(p, self.pg().fetch_all(conn).await)?, Row::Pg),
            On::Lite(conn) => {
                self.plan_lite(&mut *conn).await;
                wrap(self.lite().fetch_all(conn).await?, Row::Lite)
            }
        })
    }

    /// The first row, if any.
    pub(crate) async fn fetch_optional<'c>(&self, on: impl Into<On<'c>>) -> Result<Option<Row>> {
        Ok(match on.into() {
            On::PgPool(pool, p) => seen(p, self.pg().fetch_optional(pool).await)?.map(Row::Pg),
            On::LitePool(pool) => {
                self.plan_lite(pool).await;
                self.lite().fetch_optional(pool).await?.map(Row::Lite)
            }
            On::Pg(conn, p) => seen(p, self.pg().fetch_optional(conn).await)?.map(Row::Pg),
            On::Lite(conn) => {
                self.plan_lite(&mut *conn).await;
                self.lite().fetch_optional(conn).await?.map(Row::Lite)
            }
        })
    }

    /// The plan SQLite picks for this statement, recorded where a test
    /// asks for it (`testing::record_sqlite_plans`); nothing without the
    /// test support.
    async fn plan_lite<'e>(&self, _on: impl sqlx::SqliteExecutor<'e>) {
        #[cfg(feature = "test-support")]
        super::testing::explain_lite(self, _on).await;
    }

    /// The first row; [`sqlx::Error::RowNotFound`] if there is none.
    pub(crate) async fn fetch_one<'c>(&self, on: impl Into<On<'c>>) -> Result<Row> {
        self.fetch_optional(on)
            .await?
            .ok_or(StoreError::Database(sqlx::Error::RowNotFound))
    }
}

fn wrap<R>(rows: Vec<R>, row: fn(R) -> Row) -> Vec<Row> {
    rows.into_iter().map(row).collect()
}

/// A transaction on either backend.
///
/// Dropping it without [`Tx::commit`] rolls back, so every early return of
/// a refusal leaves nothing half written.
pub(crate) enum Tx<'c> {
    /// With the primary's watch, when there are several servers.
    Pg(Transaction<'c, Postgres>, Option<Arc<Primary>>),
    Lite(Transaction<'c, Sqlite>),
}

impl Store {
    /// Begins a transaction: on SQLite with the write lock taken up front
    /// ([`SQLITE_BEGIN`]).
    ///
    /// On a task of its own, because sqlx's `begin` is not safe to cancel:
    /// a caller dropped while its `BEGIN` is in flight (a client that hangs
    /// up, a timeout around a store call) leaves the connection in the pool
    /// inside a transaction sqlx does not count, and the statements that
    /// later run alone on it are in that transaction, answered as done and
    /// lost when the connection closes (sqlx 0.8.6; upstream: transact-rs/sqlx#4393).
    /// On its own task the `BEGIN` always completes, and a transaction
    /// nobody took is dropped, which rolls it back before the connection is
    /// used again.
    pub(crate) async fn begin(&self) -> Result<Tx<'static>> {
        let (db, primary) = (self.db.clone(), self.primary.clone());
        let begun = tokio::spawn(async move {
            Ok::<_, sqlx::Error>(match db {
                Db::Pg(pool) => Tx::Pg(seen(primary.as_deref(), pool.begin().await)?, primary),
                Db::Lite(pool) => Tx::Lite(pool.begin_with(SQLITE_BEGIN).await?),
            })
        })
        .await;
        match begun {
            Ok(tx) => Ok(tx?),
            Err(e) => {
                tracing::error!("beginning a transaction failed: {e}");
                Err(StoreError::Database(sqlx::Error::BeginFailed))
            }
        }
    }
}

impl Tx<'_> {
    /// Which backend the transaction runs on, for [`Backend::pick`].
    pub(crate) fn backend(&self) -> Backend {
        match self {
            Self::Pg(..) => Backend::Postgres,
            Self::Lite(_) => Backend::Sqlite,
        }
    }

    pub(crate) async fn commit(self) -> Result<()> {
        match self {
            Self::Pg(tx, primary) => seen(primary.as_deref(), tx.commit().await)?,
            Self::Lite(tx) => tx.commit().await?,
        }
        Ok(())
    }

    /// Wakes the workers listening on [`WAKE_CHANNEL`] when this transaction
    /// commits (PostgreSQL `pg_notify`, delivered on commit, so a woken
    /// worker always sees the rows). A no-op on SQLite, where the caller
    /// signals its in-process worker itself.
    pub(crate) async fn notify_wake(&mut self) -> Result<()> {
        if matches!(self, Self::Pg(..)) {
            query("SELECT pg_notify($1, '')")
                .bind(WAKE_CHANNEL)
                .execute(self)
                .await?;
        }
        Ok(())
    }
}
