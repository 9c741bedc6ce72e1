//! Turning rows of either backend into the store's types.
//!
//! The two backends differ only in how a UUID, a time and a UUID list are
//! represented (see [`super::dialect`]). [`RowExt`] undoes that for a
//! [`Row`] of either, so each row type has one decoder.

use chrono::{DateTime, Utc};
use sqlx::Row as _;
use uuid::Uuid;

use super::dialect::{from_micros, Row};
use super::types::{Delivery, Execution, LateReport, Link, PendingCursor, ReadyLink, Turn, Window};
use super::LinkTask;
use super::{Result, StoreError};

/// Column access with the backend's representation already undone.
pub(crate) trait RowExt {
    fn uuid(&self, col: &'static str) -> Result<Uuid>;
    fn opt_uuid(&self, col: &'static str) -> Result<Option<Uuid>>;
    fn time(&self, col: &'static str) -> Result<DateTime<Utc>>;
    fn opt_time(&self, col: &'static str) -> Result<Option<DateTime<Utc>>>;
    fn text(&self, col: &'static str) -> Result<String>;
    fn opt_text(&self, col: &'static str) -> Result<Option<String>>;
    fn int(&self, col: &'static str) -> Result<i32>;
    fn opt_int(&self, col: &'static str) -> Result<Option<i32>>;
    fn bigint(&self, col: &'static str) -> Result<i64>;
    fn uuids(&self, col: &'static str) -> Result<Vec<Uuid>>;
    fn bytes(&self, col: &'static str) -> Result<Vec<u8>>;
    fn opt_bytes(&self, col: &'static str) -> Result<Option<Vec<u8>>>;

    /// A text column parsed into one of the store's enums.
    fn parsed<T: std::str::FromStr>(&self, col: &'static str) -> Result<T> {
        let value = self.text(col)?;
        value
            .parse()
            .map_err(|_| StoreError::Corrupt { column: col, value })
    }

    /// A nullable text column parsed into one of the store's enums.
    fn opt_parsed<T: std::str::FromStr>(&self, col: &'static str) -> Result<Option<T>> {
        match self.opt_text(col)? {
            None => Ok(None),
            Some(value) => value
                .parse()
                .map(Some)
                .map_err(|_| StoreError::Corrupt { column: col, value }),
        }
    }
}

/// Parses a stored SQLite UUID (TEXT).
fn lite_uuid(col: &'static str, value: String) -> Result<Uuid> {
    Uuid::parse_str(&value).map_err(|_| StoreError::Corrupt { column: col, value })
}

/// A column that both backends read as the same Rust type.
macro_rules! same {
    ($row:expr, $col:expr) => {
        Ok(match $row {
            Row::Pg(r) => r.try_get($col)?,
            Row::Lite(r) => r.try_get($col)?,
        })
    };
}

impl RowExt for Row {
    fn uuid(&self, col: &'static str) -> Result<Uuid> {
        match self {
            Row::Pg(r) => Ok(r.try_get(col)?),
            Row::Lite(r) => lite_uuid(col, r.try_get(col)?),
        }
    }
    fn opt_uuid(&self, col: &'static str) -> Result<Option<Uuid>> {
        match self {
            Row::Pg(r) => Ok(r.try_get(col)?),
            Row::Lite(r) => {
                let value: Option<String> = r.try_get(col)?;
                value.map(|v| lite_uuid(col, v)).transpose()
            }
        }
    }
    fn time(&self, col: &'static str) -> Result<DateTime<Utc>> {
        match self {
            Row::Pg(r) => Ok(r.try_get(col)?),
            Row::Lite(r) => from_micros(col, r.try_get(col)?),
        }
    }
    fn opt_time(&self, col: &'static str) -> Result<Option<DateTime<Utc>>> {
        match self {
            Row::Pg(r) => Ok(r.try_get(col)?),
            Row::Lite(r) => {
                let value: Option<i64> = r.try_get(col)?;
                value.map(|v| from_micros(col, v)).transpose()
            }
        }
    }
    fn text(&self, col: &'static str) -> Result<String> {
        same!(self, col)
    }
    fn opt_text(&self, col: &'static str) -> Result<Option<String>> {
        same!(self, col)
    }
    fn int(&self, col: &'static str) -> Result<i32> {
        match self {
            Row::Pg(r) => Ok(r.try_get(col)?),
            Row::Lite(r) => {
                let value: i64 = r.try_get(col)?;
                i32::try_from(value).map_err(|_| StoreError::Corrupt {
                    column: col,
                    value: value.to_string(),
                })
            }
        }
    }
    fn opt_int(&self, col: &'static str) -> Result<Option<i32>> {
        match self {
            Row::Pg(r) => Ok(r.try_get(col)?),
            Row::Lite(r) => {
                let value: Option<i64> = r.try_get(col)?;
                value
                    .map(|v| {
                        i32::try_from(v).map_err(|_| StoreError::Corrupt {
                            column: col,
                            value: v.to_string(),
                        })
                    })
                    .transpose()
            }
        }
    }
    fn bigint(&self, col: &'static str) -> Result<i64> {
        same!(self, col)
    }
    fn uuids(&self, col: &'static str) -> Result<Vec<Uuid>> {
        match self {
            Row::Pg(r) => Ok(r.try_get(col)?),
            Row::Lite(r) => {
                let value: String = r.try_get(col)?;
                serde_json::from_str(&value).map_err(|_| StoreError::Corrupt { column: col, value })
            }
        }
    }
    fn bytes(&self, col: &'static str) -> Result<Vec<u8>> {
        same!(self, col)
    }
    fn opt_bytes(&self, col: &'static str) -> Result<Option<Vec<u8>>> {
        same!(self, col)
    }
}

/// The UUID in column `col` of every row (the ids a statement returned).
pub(crate) fn uuids<R: RowExt>(rows: &[R], col: &'static str) -> Result<Vec<Uuid>> {
    rows.iter().map(|r| r.uuid(col)).collect()
}

/// The columns [`window`] reads, in a fixed order for `SELECT`/`RETURNING`.
pub(crate) const WINDOW_COLS: &str =
    "session_id, opened_at, expires_at, route, continuations, closed_at, updated_at";

/// Decodes a [`Window`] from a row selecting [`WINDOW_COLS`].
pub(crate) fn window<R: RowExt>(r: &R) -> Result<Window> {
    Ok(Window {
        session_id: r.uuid("session_id")?,
        opened_at: r.time("opened_at")?,
        expires_at: r.time("expires_at")?,
        route: r.parsed("route")?,
        continuations: r.int("continuations")?,
        closed_at: r.opt_time("closed_at")?,
        updated_at: r.time("updated_at")?,
    })
}

/// Decodes a [`Delivery`] from a row selecting every ledger column
/// (see `delivery_cols!` in `deliveries.rs`).
pub(crate) fn delivery<R: RowExt>(r: &R) -> Result<Delivery> {
    Ok(Delivery {
        id: r.uuid("id")?,
        session_id: r.uuid("session_id")?,
        kind: r.parsed("kind")?,
        idempotency_key: r.text("idempotency_key")?,
        execution_ids: r.uuids("execution_ids")?,
        note: r.text("note")?,
        policy_revision: r.text("policy_revision")?,
        state: r.parsed("state")?,
        attempts: r.int("attempts")?,
        next_attempt_at: r.time("next_attempt_at")?,
        lease_owner: r.opt_text("lease_owner")?,
        lease_expires_at: r.opt_time("lease_expires_at")?,
        last_error: r.opt_text("last_error")?,
        created_at: r.time("created_at")?,
        delivered_at: r.opt_time("delivered_at")?,
        updated_at: r.time("updated_at")?,
        claims: r.int("claims")?,
        claim_token: r.opt_uuid("claim_token")?,
        claimed_at: r.opt_time("claimed_at")?,
        first_failed_at: r.opt_time("first_failed_at")?,
        shortages: r.int("shortages")?,
    })
}

/// Decodes a [`Link`] from a row of the link table left-joined with
/// `executions` (`e.status AS execution_status`).
pub(crate) fn link<R: RowExt>(r: &R) -> Result<Link> {
    Ok(Link {
        execution_id: r.uuid("execution_id")?,
        session_id: r.uuid("session_id")?,
        created_at: r.time("created_at")?,
        continued_at: r.opt_time("continued_at")?,
        delivery_id: r.opt_uuid("delivery_id")?,
        outcome: r.opt_parsed("outcome")?,
        reason: r.opt_text("reason")?,
        execution_status: r.opt_text("execution_status")?,
        task: match (r.opt_parsed("task_source")?, r.opt_text("task_id")?) {
            (Some(source), Some(task_id)) => Some(LinkTask { source, task_id }),
            _ => None,
        },
    })
}

/// Decodes a [`ReadyLink`] (the pending-links query).
pub(crate) fn ready_link<R: RowExt>(r: &R) -> Result<ReadyLink> {
    Ok(ReadyLink {
        execution_id: r.uuid("execution_id")?,
        session_id: r.uuid("session_id")?,
        linked_at: r.time("created_at")?,
        status: r.text("status")?,
        result_bytes: r.bigint("result_bytes")?,
        updated_at: r.time("updated_at")?,
        finished_at: r.opt_time("finished_at")?,
    })
}

/// Decodes an [`Execution`]; an `updated_at` that is NULL (the row has
/// neither `updated_at` nor `finished_at`, see `executions.rs`) reads as the
/// Unix epoch.
///
/// Why the epoch: no time of the report is known, and the epoch says so
/// plainly, where an invented time (such as now) would look like a real,
/// fresh report.
pub(crate) fn execution<R: RowExt>(r: &R) -> Result<Execution> {
    Ok(Execution {
        id: r.uuid("id")?,
        status: r.text("status")?,
        result: r.text("result")?,
        updated_at: r
            .opt_time("updated_at")?
            .unwrap_or(DateTime::<Utc>::UNIX_EPOCH),
        finished_at: r.opt_time("finished_at")?,
    })
}

/// Decodes a [`LateReport`].
pub(crate) fn late_report<R: RowExt>(r: &R) -> Result<LateReport> {
    Ok(LateReport {
        execution_id: r.uuid("execution_id")?,
        status: r.text("status")?,
        result: r.text("result")?,
        reported_at: r.time("reported_at")?,
    })
}

/// `decode(r)`, or `None` with a warning naming the execution (column
/// `id_col`) when the row does not decode.
///
/// Why skip rather than fail: these rows come from the `executions`
/// relation, which a runtime may own (see `executions.rs`), and one bad row
/// must cost only its own execution, not the read of every other one
/// (promise P5).
pub(crate) fn or_skip<R: RowExt, T>(
    r: &R,
    id_col: &'static str,
    decode: impl Fn(&R) -> Result<T>,
) -> Option<T> {
    match decode(r) {
        Ok(value) => Some(value),
        Err(e) => {
            match r.uuid(id_col) {
                Ok(id) => tracing::warn!(
                    execution_id = %id,
                    "skipping execution {id}: its row does not decode: {e}"
                ),
                Err(_) => {
                    tracing::warn!("skipping an execution whose row and id do not decode: {e}")
                }
            }
            None
        }
    }
}

/// Decodes a page of the pending-links query into `out`, skipping the rows
/// that do not decode ([`or_skip`]), and returns the cursor of the last row
/// *fetched*.
///
/// Why the cursor is read apart: it comes from the link's own columns
/// (nomos-continue's table, NOT NULL), so a skipped row still moves the
/// page on; were it read from the decoded rows, a bad row at the end of a
/// page would be fetched again forever. A link column that does not decode
/// is an error: the page cannot be continued past it.
pub(crate) fn ready_page<R: RowExt>(
    rows: &[R],
    out: &mut Vec<ReadyLink>,
) -> Result<Option<PendingCursor>> {
    let mut last = None;
    for r in rows {
        last = Some(PendingCursor {
            linked_at: r.time("created_at")?,
            execution_id: r.uuid("execution_id")?,
        });
        out.extend(or_skip(r, "execution_id", ready_link));
    }
    Ok(last)
}

/// Decodes a [`Turn`].
pub(crate) fn turn<R: RowExt>(r: &R) -> Result<Turn> {
    Ok(Turn {
        id: r.bigint("id")?,
        session_id: r.uuid("session_id")?,
        role: r.parsed("role")?,
        content: r.text("content")?,
        idempotency_key: r.opt_text("idempotency_key")?,
        created_at: r.time("created_at")?,
    })
}
