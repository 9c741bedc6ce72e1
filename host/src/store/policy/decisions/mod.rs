//! The decision log: every decision the host took through the policy, with
//! what the policy saw, its answer and what the host then did, kept for a
//! retention period so a candidate can be replayed on real traffic.
//!
//! Kept compactly (migration 037): a row holds the input's small fields,
//! a hash of the whole input and of the answer, and no texts the system
//! keeps elsewhere. The result text is the execution's own (terminal is
//! final, so it does not change); the note is what the recorded revision,
//! a deterministic policy, answers again. Whoever rebuilds an input from
//! these parts checks it against `input_hash` (see
//! `worker::recorded_inputs`). Rows written before 037 keep their texts
//! whole ([`Recorded::Whole`]). The store keeps hashes and texts as given:
//! it parses no JSON and hashes nothing.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::store::decode::RowExt;
use crate::store::dialect::{query, trunc};
use crate::store::types::{Route, TaskSource};
use crate::store::{Result, Store};

mod row;

use row::insert_rows;
pub(in crate::store) use row::logged;

/// A window as a decision saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeenWindow {
    /// When it opened.
    pub opened_at: DateTime<Utc>,
    /// When it expires.
    pub expires_at: DateTime<Utc>,
    /// How it was approved.
    pub route: Route,
}

/// A decision's input as the log keeps it: every field the policy saw but
/// the result text, and the hash of the input whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputParts {
    /// The input's `now`.
    pub now: DateTime<Utc>,
    /// The execution's status.
    pub status: String,
    /// When the execution finished, if it had.
    pub finished_at: Option<DateTime<Utc>>,
    /// The protocol task the execution stands for, if any.
    pub task: Option<(TaskSource, String)>,
    /// The session's open window, if any.
    pub window: Option<SeenWindow>,
    /// Continuations already sent in that window.
    pub continuations_in_window: i32,
    /// The session's other executions still running.
    pub still_running: Vec<Uuid>,
    /// Failed calls before this decision (a retry's re-decision).
    pub attempts: i32,
    /// The byte limit the result was cut to, when it was cut.
    pub result_cut: Option<i32>,
    /// The first 16 bytes of the SHA-256 of the input's JSON.
    pub hash: Vec<u8>,
}

/// What a decision recorded of its input and answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// Since migration 037: the input's parts, the answer's kind (`wait`,
    /// `continue`, `drop`, `error`) and the hash of its line.
    Compact {
        /// The input, but its result.
        input: InputParts,
        /// The answer's kind.
        answer: String,
        /// The first 16 bytes of the SHA-256 of the answer line.
        answer_hash: Vec<u8>,
    },
    /// Before: the input's JSON and the answer line, whole.
    Whole {
        /// The decision input, in golden-file JSON.
        input: String,
        /// The answer line, or `{"error": …}`.
        output: String,
    },
}

/// One decision to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDecision {
    /// The session the execution belongs to.
    pub session_id: Uuid,
    /// The execution decided on.
    pub execution_id: Uuid,
    /// The policy revision (hash) that decided.
    pub revision: String,
    /// What the policy saw and answered.
    pub recorded: Recorded,
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

/// The columns a row is written with, after `decided_at` (`$1`, shared).
const WRITTEN: [&str; 24] = [
    "session_id",
    "execution_id",
    "revision",
    "revision_id",
    "input",
    "output",
    "action",
    "idempotency_key",
    "detail",
    "seen_now",
    "status",
    "finished_at",
    "task_source",
    "task_id",
    "window_opened_at",
    "window_expires_at",
    "window_route",
    "in_window",
    "still_running",
    "attempts",
    "result_cut",
    "input_hash",
    "answer",
    "answer_hash",
];

/// Rows per `INSERT`: 24 values a row, well under SQLite's limit of 32,766
/// bound values (and PostgreSQL's 65,535).
const ROWS_PER_INSERT: usize = 500;

/// What a read selects. The revision is the dictionary's hash for a compact
/// row (`revision` is empty there) and `revision` itself for a whole one;
/// no column holds a comma, so the timeline can cut `input` and `output`
/// by name (`read::timeline::cutting`).
pub(in crate::store) const COLS: &str = "id, decided_at, session_id, execution_id, revision, \
     (SELECT hash FROM nomos_decision_revisions WHERE id = revision_id) AS revision_hash, \
     input, output, action, idempotency_key, detail, seen_now, status, finished_at, \
     task_source, task_id, window_opened_at, window_expires_at, window_route, in_window, \
     still_running, attempts, result_cut, input_hash, answer, answer_hash";

impl Store {
    /// Records `decisions`, all taken at `now`: each revision's key in the
    /// dictionary first (a statement that writes only a revision not seen
    /// before), then the rows, a few hundred per statement, in one
    /// transaction when there are more.
    pub async fn record_decisions(
        &self,
        decisions: &[NewDecision],
        now: DateTime<Utc>,
    ) -> Result<u64> {
        if decisions.is_empty() {
            return Ok(0);
        }
        self.know_revisions(decisions).await?;
        let now = trunc(now);
        let mut chunks = decisions.chunks(ROWS_PER_INSERT);
        if decisions.len() <= ROWS_PER_INSERT {
            let chunk = chunks.next().unwrap_or_default();
            return insert_rows(chunk, now).execute(self).await;
        }
        let mut tx = self.begin().await?;
        let mut written = 0;
        for chunk in chunks {
            written += insert_rows(chunk, now).execute(&mut tx).await?;
        }
        tx.commit().await?;
        Ok(written)
    }

    /// Gives each compact decision's revision a key in
    /// `nomos_decision_revisions`. A revision already there is not written
    /// again (no sequence value is spent on it either).
    async fn know_revisions(&self, decisions: &[NewDecision]) -> Result<()> {
        let mut revisions: Vec<&str> = (decisions.iter())
            .filter(|d| matches!(d.recorded, Recorded::Compact { .. }))
            .map(|d| d.revision.as_str())
            .collect();
        revisions.sort_unstable();
        revisions.dedup();
        for revision in revisions {
            query(
                "INSERT INTO nomos_decision_revisions (hash) SELECT $1 \
                 WHERE NOT EXISTS (SELECT 1 FROM nomos_decision_revisions WHERE hash = $1) \
                 ON CONFLICT (hash) DO NOTHING",
            )
            .bind(revision)
            .execute(self)
            .await?;
        }
        Ok(())
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

    /// Deletes those of the `batch` oldest decisions (by id) taken before
    /// `before`; returns how many. Ids follow time closely (a pass writes
    /// its decisions a few seconds at most after taking them, and
    /// replicas' passes interleave), so the oldest are found on the primary
    /// key, with no B-tree on the time; a batch that comes back short has
    /// reached the decisions to keep, or a newer one written early, which
    /// the next pass gets past. The caller repeats while a batch comes back
    /// full.
    pub async fn purge_decisions(&self, before: DateTime<Utc>, batch: i64) -> Result<u64> {
        self.purge_oldest_by_id("nomos_policy_decisions", "decided_at", before, batch)
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
