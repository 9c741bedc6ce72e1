//! Reads of history by key: the rows of a table whose key is one of a
//! list of values, each looked up on its own, in either dialect.
//!
//! Why a module of its own: every read on the hot path that meets a table
//! of history (`executions`, the settled links, the delivered ledger, the
//! trace side table) goes through here, so that no planner's guess can
//! turn it into a read of the whole table (ARCHITECTURE.md, "The hot path
//! reads no history").

use super::Backend;

/// What [`Backend::rows_by_keys`] probes: `table` by `key`, for each value
/// of the list bound as `param`, read as `alias`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Keys<'a> {
    table: &'a str,
    key: &'a str,
    param: &'a str,
    /// The PostgreSQL type of the list's elements (`uuid` unless set).
    ty: &'a str,
    alias: &'a str,
    /// More conditions on the rows, ` AND …`, or "".
    filter: &'a str,
    /// A row-lock clause for the rows found (PostgreSQL), or "".
    lock: &'a str,
}

impl<'a> Keys<'a> {
    pub(crate) fn new(table: &'a str, key: &'a str, param: &'a str, alias: &'a str) -> Self {
        Self {
            table,
            key,
            param,
            ty: "uuid",
            alias,
            filter: "",
            lock: "",
        }
    }

    /// Only the rows that also meet `filter` (` AND …`): a lock then takes
    /// those alone.
    pub(crate) fn filtered(self, filter: &'a str) -> Self {
        Self { filter, ..self }
    }

    /// Keys of another type than `uuid` (`text`).
    pub(crate) fn of_type(self, ty: &'a str) -> Self {
        Self { ty, ..self }
    }

    /// Locks the rows found with `lock` (` FOR UPDATE SKIP LOCKED`).
    pub(crate) fn locked(self, lock: &'a str) -> Self {
        Self { lock, ..self }
    }
}

impl Backend {
    /// The rows of `table` whose `key` is one of the ids bound as `param`
    /// (deduplicated by the caller), as a `FROM` item named `alias`, each
    /// probed by its key: [`Backend::rows_by_keys`] of UUIDs, unlocked.
    pub(crate) fn rows_by_ids(self, table: &str, key: &str, param: &str, alias: &str) -> String {
        self.rows_by_keys(Keys::new(table, key, param, alias))
    }

    /// The rows of `keys.table` whose `keys.key` is one of the values bound
    /// as `keys.param` (a list of `keys.ty`, deduplicated by the caller), as
    /// a `FROM` item named `keys.alias`, each probed by its key.
    ///
    /// On PostgreSQL a `LATERAL` subquery behind `OFFSET 0` per value,
    /// which the planner cannot turn into a read of the whole table: with a
    /// few thousand ids it judged a sequential scan of every execution ever
    /// reported cheaper than the probes, and that read grows with the
    /// history (issue 64). The lock clause, if any, locks the rows each
    /// probe finds. SQLite searches the key for each member of the list
    /// (and locks nothing: its transactions hold the write lock).
    pub(crate) fn rows_by_keys(self, keys: Keys<'_>) -> String {
        let Keys {
            table,
            key,
            param,
            ty,
            alias,
            filter,
            lock,
        } = keys;
        match self {
            Self::Postgres => format!(
                "UNNEST({param}::{ty}[]) AS {alias}_keys(probed) CROSS JOIN LATERAL \
                 (SELECT * FROM {table} WHERE {key} = {alias}_keys.probed{filter} \
                  OFFSET 0{lock}) {alias}"
            ),
            Self::Sqlite => format!(
                "(SELECT * FROM {table} WHERE {key} {}{filter}) {alias}",
                self.in_ids(param)
            ),
        }
    }
}
