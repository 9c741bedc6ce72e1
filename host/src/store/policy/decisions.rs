//! The decision log: every decision the host took through the policy, with
//! the input the policy saw, its answer and what the host then did, kept
//! for a retention period so a candidate can be replayed on real traffic.
//!
//! The store keeps texts: the input and output are JSON the caller wrote
//! (the golden-file form), not parsed here.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::store::decode::RowExt;
use crate::store::dialect::{query, trunc};
use crate::store::{Backend, Result, Store};

/// One decision to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDecision {
    /// The session the execution belongs to.
    pub session_id: Uuid,
    /// The execution decided on.
    pub execution_id: Uuid,
    /// The policy revision (hash) that decided.
    pub revision: String,
    /// The decision input, as the policy saw it, in golden-file JSON.
    pub input: String,
    /// The answer line, or `{"error": …}` when the policy failed on it.
    pub output: String,
    /// What the host then did: `continued`, `dropped`, `refused`, `waited`,
    /// `deferred` or `failed`.
    pub action: String,
    /// The continuation's idempotency key, when it was continued.
    pub idempotency_key: Option<String>,
    /// The reason of a drop or a refusal, or why it was deferred.
    pub detail: Option<String>,
}

/// A recorded decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedDecision {
    /// Its id, for `policy capture`.
    pub id: i64,
    /// When it was taken.
    pub decided_at: DateTime<Utc>,
    /// What was recorded.
    pub decision: NewDecision,
}

/// Which recorded decisions to read.
#[derive(Debug, Clone, Copy, Default)]
pub struct DecisionFilter {
    /// Taken at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Of this session only.
    pub session_id: Option<Uuid>,
    /// With an id above this one (paging).
    pub after_id: i64,
}

/// Rows per `INSERT` on SQLite: 8 values a row, well under its limit of
/// 32,766 bound values.
const SQLITE_ROWS: usize = 500;

pub(in crate::store) const COLS: &str =
    "id, decided_at, session_id, execution_id, revision, input, output, action, \
     idempotency_key, detail";

impl Store {
    /// Records `decisions`, all taken at `now`, in one statement.
    pub async fn record_decisions(
        &self,
        decisions: &[NewDecision],
        now: DateTime<Utc>,
    ) -> Result<u64> {
        if decisions.is_empty() {
            return Ok(0);
        }
        if self.backend() == Backend::Sqlite {
            return self.record_decisions_in_rows(decisions, now).await;
        }
        let mut sessions = Vec::with_capacity(decisions.len());
        let mut executions = Vec::with_capacity(decisions.len());
        let (mut revisions, mut inputs, mut outputs) = (Vec::new(), Vec::new(), Vec::new());
        let (mut actions, mut keys, mut details) = (Vec::new(), Vec::new(), Vec::new());
        for d in decisions {
            sessions.push(d.session_id);
            executions.push(d.execution_id);
            revisions.push(d.revision.clone());
            inputs.push(d.input.clone());
            outputs.push(d.output.clone());
            actions.push(d.action.clone());
            // A list of texts has no NULL on SQLite: "" stands for none.
            keys.push(d.idempotency_key.clone().unwrap_or_default());
            details.push(d.detail.clone().unwrap_or_default());
        }
        let sql = format!(
            "INSERT INTO nomos_policy_decisions (decided_at, session_id, execution_id, revision, \
               input, output, action, idempotency_key, detail) \
             SELECT $1, z.s, z.e, z.rev, z.i, z.o, z.a, NULLIF(z.k, ''), NULLIF(z.d, '') \
             FROM {}",
            self.backend().zip(
                "z",
                &[
                    ("$2", "s", "uuid"),
                    ("$3", "e", "uuid"),
                    ("$4", "rev", "text"),
                    ("$5", "i", "text"),
                    ("$6", "o", "text"),
                    ("$7", "a", "text"),
                    ("$8", "k", "text"),
                    ("$9", "d", "text"),
                ]
            )
        );
        query(sql)
            .bind(trunc(now))
            .bind(&sessions)
            .bind(&executions)
            .bind(&revisions[..])
            .bind(&inputs[..])
            .bind(&outputs[..])
            .bind(&actions[..])
            .bind(&keys[..])
            .bind(&details[..])
            .execute(self)
            .await
    }

    /// [`Store::record_decisions`] on SQLite: rows of bound values, a few
    /// hundred per statement, in one transaction. Zipping lists of texts
    /// reads each list's JSON again per row there, which for inputs of a
    /// kilobyte and more made the plan pass twice as slow (measured:
    /// BENCHMARKS.md, "Decision log").
    async fn record_decisions_in_rows(
        &self,
        decisions: &[NewDecision],
        now: DateTime<Utc>,
    ) -> Result<u64> {
        const COLUMNS: usize = 8;
        let mut tx = self.begin().await?;
        let mut written = 0;
        for chunk in decisions.chunks(SQLITE_ROWS) {
            let rows: Vec<String> = (0..chunk.len())
                .map(|i| {
                    let first = 2 + i * COLUMNS;
                    let params: Vec<String> =
                        (first..first + COLUMNS).map(|n| format!("${n}")).collect();
                    format!("($1, {})", params.join(", "))
                })
                .collect();
            let sql = format!(
                "INSERT INTO nomos_policy_decisions (decided_at, session_id, execution_id, \
                   revision, input, output, action, idempotency_key, detail) VALUES {}",
                rows.join(", ")
            );
            let mut q = query(sql).bind(trunc(now));
            for d in chunk {
                q = q
                    .bind(d.session_id)
                    .bind(d.execution_id)
                    .bind(d.revision.as_str())
                    .bind(d.input.as_str())
                    .bind(d.output.as_str())
                    .bind(d.action.as_str())
                    .bind(d.idempotency_key.as_deref())
                    .bind(d.detail.as_deref());
            }
            written += q.execute(&mut tx).await?;
        }
        tx.commit().await?;
        Ok(written)
    }

    /// Up to `limit` recorded decisions matching `filter`, oldest first.
    pub async fn decisions(
        &self,
        filter: DecisionFilter,
        limit: i64,
    ) -> Result<Vec<LoggedDecision>> {
        let mut sql =
            format!("SELECT {COLS} FROM nomos_policy_decisions WHERE id > $1 AND decided_at >= $2");
        if filter.session_id.is_some() {
            sql.push_str(" AND session_id = $4");
        }
        sql.push_str(" ORDER BY id LIMIT $3");
        let since = filter.since.unwrap_or(DateTime::UNIX_EPOCH);
        let mut q = query(sql)
            .bind(filter.after_id)
            .bind(trunc(since))
            .bind(limit);
        if let Some(session) = filter.session_id {
            q = q.bind(session);
        }
        let rows = q.fetch_all(self).await?;
        rows.iter().map(logged).collect()
    }

    /// One recorded decision, `None` if there is none with that id (or it
    /// was purged).
    pub async fn decision(&self, id: i64) -> Result<Option<LoggedDecision>> {
        let sql = format!("SELECT {COLS} FROM nomos_policy_decisions WHERE id = $1");
        let row = query(sql).bind(id).fetch_optional(self).await?;
        row.as_ref().map(logged).transpose()
    }

    /// Deletes up to `batch` decisions taken before `before`, oldest first;
    /// returns how many. Small batches keep each delete's locks short; the
    /// caller repeats while a batch comes back full.
    pub async fn purge_decisions(&self, before: DateTime<Utc>, batch: i64) -> Result<u64> {
        query(
            "DELETE FROM nomos_policy_decisions WHERE id IN ( \
               SELECT id FROM nomos_policy_decisions WHERE decided_at < $1 \
               ORDER BY decided_at LIMIT $2)",
        )
        .bind(trunc(before))
        .bind(batch)
        .execute(self)
        .await
    }

    /// A stored revision's component bytes, `None` if no revision has that
    /// hash.
    pub async fn policy_revision_wasm(&self, hash: &str) -> Result<Option<Vec<u8>>> {
        let row = query("SELECT wasm FROM nomos_policy_revisions WHERE hash = $1")
            .bind(hash)
            .fetch_optional(self)
            .await?;
        row.as_ref().map(|r| r.bytes("wasm")).transpose()
    }
}

pub(in crate::store) fn logged<R: RowExt>(r: &R) -> Result<LoggedDecision> {
    Ok(LoggedDecision {
        id: r.bigint("id")?,
        decided_at: r.time("decided_at")?,
        decision: NewDecision {
            session_id: r.uuid("session_id")?,
            execution_id: r.uuid("execution_id")?,
            revision: r.text("revision")?,
            input: r.text("input")?,
            output: r.text("output")?,
            action: r.text("action")?,
            idempotency_key: r.opt_text("idempotency_key")?,
            detail: r.opt_text("detail")?,
        },
    })
}
