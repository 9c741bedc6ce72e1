//! What one page of a session's timeline reads beside `session`'s lists:
//! its executions, late reports, decisions and continuations, with every
//! long text cut in SQL (and the cut itself, which the shadow's
//! disagreements use too).
//!
//! # Why cut in SQL
//!
//! A result, a decision's input and a note can each be as long as the
//! policy accepts (megabytes). A page of fifty executions read whole could
//! be hundreds of megabytes for a page that shows a few kilobytes of each.
//! So each long column is read as its first [`SHOWN_CHARS`] characters and
//! its length, and the page says how much it left out.

use uuid::Uuid;

use crate::store::decode::{self, RowExt};
use crate::store::deliveries::delivery_cols;
use crate::store::dialect::{query, Row};
use crate::store::policy::decisions::{logged, COLS as DECISION_COLS};
use crate::store::types::{Delivery, Execution, LateReport};
use crate::store::{DeliveryCursor, LoggedDecision, Page, Result, Store};

/// Characters of each long text a timeline page reads.
pub const SHOWN_CHARS: i64 = 2048;

/// A row whose long texts were read cut, and how many characters of them
/// were left out (0: nothing was cut).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shown<T> {
    /// The row, its long texts cut to [`SHOWN_CHARS`] characters each.
    pub row: T,
    /// Characters left out, over all its cut texts.
    pub left_out: i64,
    /// An execution's result only: its last [`SHOWN_CHARS`] characters
    /// after the start read into the row (empty when the start holds it
    /// all), because the end of an output is where its error is.
    pub tail: String,
    /// An execution's result only: how many lines the whole text has
    /// (0 for the other rows).
    pub lines: i64,
}

impl AsRef<Delivery> for Shown<Delivery> {
    fn as_ref(&self) -> &Delivery {
        &self.row
    }
}

/// A long column, and the name its length is read as.
pub(in crate::store) type Long = (&'static str, &'static str);
const RESULT: Long = ("result", "result_chars");
const INPUT: Long = ("input", "input_chars");
const OUTPUT: Long = ("output", "output_chars");
const NOTE: Long = ("note", "note_chars");

/// `col` as its first [`SHOWN_CHARS`] characters, and its length
/// (characters on both backends).
fn cut((col, chars): Long) -> String {
    format!("substr({col}, 1, {SHOWN_CHARS}) AS {col}, CAST(length({col}) AS BIGINT) AS {chars}")
}

/// `cols` (a comma-separated column list) with each of `long` cut.
pub(in crate::store) fn cutting(cols: &str, long: &[Long]) -> String {
    cols.split(',')
        .map(str::trim)
        .map(|c| match long.iter().find(|(name, _)| *name == c) {
            Some(l) => cut(*l),
            None => c.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads a row with `read`, and how much of each of `long` was left out.
pub(in crate::store) fn shown<T>(
    r: &Row,
    long: &[Long],
    read: impl Fn(&Row) -> Result<T>,
) -> Result<Shown<T>> {
    let mut left_out = 0;
    for (_, chars) in long {
        left_out += (r.bigint(chars)? - SHOWN_CHARS).max(0);
    }
    Ok(Shown {
        row: read(r)?,
        left_out,
        tail: String::new(),
        lines: 0,
    })
}

impl Store {
    /// The executions among `ids` that have reported, results cut to their
    /// start and their end ([`Shown::tail`]).
    pub async fn shown_executions(&self, ids: &[Uuid]) -> Result<Vec<Shown<Execution>>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let backend = self.backend();
        // The end starts after the start, so the two never overlap.
        let tail = format!(
            "CASE WHEN length(result) > {SHOWN_CHARS} \
               THEN substr(result, {}(length(result) - {SHOWN_CHARS} + 1, {})) \
               ELSE '' END AS result_tail",
            backend.greatest(),
            SHOWN_CHARS + 1
        );
        let newline = backend.pick("chr(10)", "char(10)");
        let sql = format!(
            "SELECT id, status, {}, {tail}, \
               CAST(length(result) - length(replace(result, {newline}, '')) AS BIGINT) \
                 AS result_breaks, \
               COALESCE(updated_at, finished_at) AS updated_at, finished_at \
             FROM (SELECT id, status, COALESCE(result, '') AS result, updated_at, finished_at \
                   FROM executions WHERE id {} AND status IS NOT NULL) AS e",
            cut(RESULT),
            backend.in_ids("$1")
        );
        let rows = query(sql).bind(ids).fetch_all(self).await?;
        rows.iter()
            .map(|r| {
                let mut shown = shown(r, &[RESULT], decode::execution)?;
                shown.tail = r.text("result_tail")?;
                shown.left_out = (shown.left_out - shown.tail.chars().count() as i64).max(0);
                shown.lines = r.bigint("result_breaks")? + 1;
                Ok(shown)
            })
            .collect()
    }

    /// The late reports of any of `ids`, in arrival order, results cut; at
    /// most `limit` (one more than a page shows, so it can say there are
    /// more).
    pub async fn shown_late_reports(
        &self,
        ids: &[Uuid],
        limit: i64,
    ) -> Result<Vec<Shown<LateReport>>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        // The rows are chosen on narrow columns first: cut in the same
        // query as the sort, every candidate row's text would be read.
        let sql = format!(
            "SELECT execution_id, status, {}, reported_at FROM nomos_late_reports \
             WHERE id IN (SELECT id FROM nomos_late_reports WHERE execution_id {} \
                          ORDER BY id LIMIT $2) \
             ORDER BY id",
            cut(RESULT),
            self.backend().in_ids("$1")
        );
        let rows = query(sql).bind(ids).bind(limit).fetch_all(self).await?;
        rows.iter()
            .map(|r| shown(r, &[RESULT], decode::late_report))
            .collect()
    }

    /// The recorded decisions on these executions of the session, oldest
    /// first, inputs and outputs cut; at most `limit`.
    pub async fn shown_decisions(
        &self,
        session_id: Uuid,
        execution_ids: &[Uuid],
        limit: i64,
    ) -> Result<Vec<Shown<LoggedDecision>>> {
        if execution_ids.is_empty() {
            return Ok(Vec::new());
        }
        const LONG: [Long; 2] = [INPUT, OUTPUT];
        // Chosen on narrow columns first, as the late reports above.
        let sql = format!(
            "SELECT {} FROM nomos_policy_decisions \
             WHERE id IN (SELECT id FROM nomos_policy_decisions \
                          WHERE session_id = $1 AND execution_id {} ORDER BY id LIMIT $3) \
             ORDER BY id",
            cutting(DECISION_COLS, &LONG),
            self.backend().in_ids("$2")
        );
        let rows = query(sql)
            .bind(session_id)
            .bind(execution_ids)
            .bind(limit)
            .fetch_all(self)
            .await?;
        rows.iter().map(|r| shown(r, &LONG, logged)).collect()
    }

    /// The ledger rows with these ids (a page of links' continuations),
    /// notes cut.
    pub async fn shown_deliveries(&self, ids: &[Uuid]) -> Result<Vec<Shown<Delivery>>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {} FROM nomos_deliveries WHERE id {} ORDER BY created_at, id",
            cutting(delivery_cols!(), &[NOTE]),
            self.backend().in_ids("$1")
        );
        let rows = query(sql).bind(ids).fetch_all(self).await?;
        rows.iter()
            .map(|r| shown(r, &[NOTE], decode::delivery))
            .collect()
    }

    /// One page of the session's ledger, newest first, notes cut.
    pub async fn shown_ledger(
        &self,
        session_id: Uuid,
        after: Option<DeliveryCursor>,
        limit: u32,
    ) -> Result<Page<Shown<Delivery>, DeliveryCursor>> {
        let cols = cutting(delivery_cols!(), &[NOTE]);
        self.ledger_page(session_id, None, after, limit, &cols, |r| {
            shown(r, &[NOTE], decode::delivery)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_long_columns_are_cut() {
        assert_eq!(
            cutting("id, note, state", &[NOTE]),
            format!("id, {}, state", cut(NOTE))
        );
        assert_eq!(cutting("id, state", &[NOTE]), "id, state");
    }
}
