//! Retention of the text that tool output reaches: delivery notes and
//! errors, the chat history `chatWith` replays, and its notices. Each may
//! hold a secret a tool printed, and each grows with every session. The
//! `maintenance::Retention` task calls these in bounded batches, oldest
//! first, each served by an index of migration 026.
//!
//! What a link still needs is never touched: a pending delivery (the
//! deliverer sends its note), a notice the operator's channel has not
//! ended (it sends the notice's text), and the history and notices of a
//! session that has an unsettled link, a pending delivery or an open
//! assent window (its next continuation replays them).
//!
//! Ledger rows (`nomos_deliveries`) are scrubbed, not deleted: the API, the
//! console and `status` list them, a row's idempotency key keeps the same
//! continuation from being planned twice, and deleting a notice's row would
//! cascade to its `nomos_operator_notices` row. So a settled row keeps its
//! state, times and counts, and loses its note (left empty) and last error
//! (`NULL`); a retry of a scrubbed row is refused
//! (`RetryOutcome::Purged`): it has nothing left to send. Chat turns and
//! `chatWith` notices are deleted: nothing but the replay and the notice
//! list reads them, and a session with nothing in flight replays nothing.

use chrono::{DateTime, Utc};

use super::dialect::{query, trunc};
use super::{Result, Store};

/// A session with nothing in flight at `$3`: no unsettled link, no pending
/// delivery, no open window. `X` is the row's alias.
const SESSION_IDLE: &str = "NOT EXISTS (SELECT 1 FROM nomos_plan_executions l \
       WHERE l.session_id = X.session_id AND l.continued_at IS NULL) \
     AND NOT EXISTS (SELECT 1 FROM nomos_deliveries p \
       WHERE p.session_id = X.session_id AND p.state = 'pending') \
     AND NOT EXISTS (SELECT 1 FROM nomos_assent_windows w \
       WHERE w.session_id = X.session_id AND w.closed_at IS NULL AND w.expires_at > $3)";

impl Store {
    /// Empties the note and the last error of at most `batch` settled
    /// deliveries last updated before `before` (oldest first), leaving a
    /// notice whose operator delivery is still pending alone; returns how
    /// many it scrubbed.
    pub async fn scrub_deliveries(&self, before: DateTime<Utc>, batch: i64) -> Result<u64> {
        query(
            "UPDATE nomos_deliveries SET note = '', last_error = NULL WHERE id IN ( \
               SELECT d.id FROM nomos_deliveries d \
               WHERE d.state <> 'pending' AND (d.note <> '' OR d.last_error IS NOT NULL) \
                 AND d.updated_at < $1 \
                 AND NOT EXISTS (SELECT 1 FROM nomos_operator_notices o \
                   WHERE o.notice_id = d.id AND o.state = 'pending') \
               ORDER BY d.updated_at LIMIT $2)",
        )
        .bind(trunc(before))
        .bind(batch)
        .execute(self)
        .await
    }

    /// Deletes at most `batch` chat turns recorded before `before` (oldest
    /// first) of sessions with nothing in flight at `now`; returns how many.
    pub async fn purge_chat_turns(
        &self,
        before: DateTime<Utc>,
        now: DateTime<Utc>,
        batch: i64,
    ) -> Result<u64> {
        self.purge_idle("nomos_chat_turns", before, now, batch)
            .await
    }

    /// Deletes at most `batch` `chatWith` notices recorded before `before`
    /// (oldest first) of sessions with nothing in flight at `now`; returns
    /// how many.
    pub async fn purge_chat_notices(
        &self,
        before: DateTime<Utc>,
        now: DateTime<Utc>,
        batch: i64,
    ) -> Result<u64> {
        self.purge_idle("nomos_notices", before, now, batch).await
    }

    /// The delete both chat tables share (each has `id`, `session_id` and
    /// `created_at`, and an index on `created_at`).
    async fn purge_idle(
        &self,
        table: &'static str,
        before: DateTime<Utc>,
        now: DateTime<Utc>,
        batch: i64,
    ) -> Result<u64> {
        let sql = format!(
            "DELETE FROM {table} WHERE id IN ( \
               SELECT X.id FROM {table} X WHERE X.created_at < $1 AND {SESSION_IDLE} \
               ORDER BY X.created_at LIMIT $2)"
        );
        query(sql)
            .bind(trunc(before))
            .bind(batch)
            .bind(trunc(now))
            .execute(self)
            .await
    }
}
