//! How each policy revision classified each status string (`nomos_status_classes`).
//!
//! A revision is a pure function of its bytes, so its class for a status
//! never changes: it is asked once and kept here, keyed by the revision's
//! hash, instead of being asked again on every report, plan pass and
//! delivery. The store does not know what a class means; the host decides
//! which revision's classes to read (the active one) and what to do about a
//! status that has none yet.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::store::decode::RowExt;
use crate::store::dialect::{query, trunc};
use crate::store::{Result, Store};

/// Rows written per `INSERT`: well under SQLite's limit on parameters.
const SAVE_CHUNK: usize = 200;

/// How a revision classified one status, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StoredClass {
    /// The status string, as reported.
    pub status: String,
    /// `None`: not terminal (still running). `Some`: terminal, with the
    /// outcome's word (`completed`, `failed` or `cancelled`, which the
    /// table's check constraint holds it to).
    pub outcome: Option<String>,
    /// Not terminal, waiting for a person: what for (`input` or
    /// `authorization`, held to those by the table, and never with an
    /// outcome). Migration 031.
    pub person: Option<String>,
}

impl StoredClass {
    /// Whether the status is terminal (the table's `terminal` column).
    pub fn is_terminal(&self) -> bool {
        self.outcome.is_some()
    }
}

impl Store {
    /// The stored classes of `statuses` under `revision`, in status order;
    /// a status with no class under it is left out (the caller asks the
    /// policy). Duplicates in `statuses` count once.
    pub async fn status_classes(
        &self,
        revision: &str,
        statuses: &[String],
    ) -> Result<Vec<StoredClass>> {
        if statuses.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT status, outcome, person FROM nomos_status_classes \
             WHERE revision = $1 AND status {} ORDER BY status",
            self.backend().in_ids("$2")
        );
        let rows = query(sql)
            .bind(revision)
            .bind(statuses)
            .fetch_all(self)
            .await?;
        rows.iter()
            .map(|r| {
                Ok(StoredClass {
                    status: r.text("status")?,
                    outcome: r.opt_text("outcome")?,
                    person: r.opt_text("person")?,
                })
            })
            .collect()
    }

    /// Saves how `revision` classified these statuses. Idempotent, first
    /// writer wins: a class already stored is kept (a revision answers the
    /// same every time, so two replicas racing write the same value).
    /// Returns how many rows were new. An outcome outside the policy's
    /// three words, a person's need outside its two, or both on one class,
    /// are refused by the table, as a database error.
    pub async fn save_status_classes(
        &self,
        revision: &str,
        classes: &[StoredClass],
        now: DateTime<Utc>,
    ) -> Result<u64> {
        let now = trunc(now);
        let mut written = 0;
        for chunk in classes.chunks(SAVE_CHUNK) {
            // `$1` the revision, `$2` the time, then four per row.
            let rows: Vec<String> = (0..chunk.len())
                .map(|i| {
                    let n = 3 + 4 * i;
                    format!("($1, ${n}, ${}, ${}, ${}, $2)", n + 1, n + 2, n + 3)
                })
                .collect();
            let sql = format!(
                "INSERT INTO nomos_status_classes \
                 (revision, status, terminal, outcome, person, classified_at) VALUES {} \
                 ON CONFLICT (revision, status) DO NOTHING",
                rows.join(", ")
            );
            let mut insert = query(sql).uncached().bind(revision).bind(now);
            for class in chunk {
                insert = insert
                    .bind(class.status.as_str())
                    .bind(class.is_terminal())
                    .bind(class.outcome.as_deref())
                    .bind(class.person.as_deref());
            }
            written += insert.execute(self).await?;
        }
        Ok(written)
    }

    /// Distinct statuses of executions linked to unsettled links (pending or
    /// planned) that have no class under `revision` yet, in status order, at
    /// most `limit`: what a newly active revision classifies up front, so
    /// the first pass after a swap does not pay for it.
    pub async fn statuses_to_classify(&self, revision: &str, limit: i64) -> Result<Vec<String>> {
        const SQL: &str = "SELECT DISTINCT e.status FROM nomos_plan_executions l \
             JOIN executions e ON e.id = l.execution_id \
             WHERE l.continued_at IS NULL AND e.status IS NOT NULL \
               AND NOT EXISTS (SELECT 1 FROM nomos_status_classes c \
                               WHERE c.revision = $1 AND c.status = e.status) \
             ORDER BY e.status LIMIT $2";
        let rows = query(SQL)
            .bind(revision)
            .bind(limit)
            .fetch_all(self)
            .await?;
        rows.iter().map(|r| r.text("status")).collect()
    }
}
