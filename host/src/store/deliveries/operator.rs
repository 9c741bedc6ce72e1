//! A notice's second channel: its copy for the operator
//! (`nomos_operator_notices`), queued by a trigger whenever a notice row is
//! written, and sent by the notifier apart from the agent.
//!
//! Why a table of its own rather than the notice row's columns: the agent's
//! delivery of the notice keeps its own attempts, lease and claim, and the
//! two channels' retries must not hold each other up or overwrite each
//! other's outcome. Why a trigger: every path that writes a notice (a drop
//! in the planner, a failed call, a stuck execution, the operator's own drop)
//! queues the copy in its own transaction without having to remember to.

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

use crate::store::decode::RowExt;
use crate::store::dialect::{query, trunc};
use crate::store::types::{DeliveryState, OperatorState};
use crate::store::{Claim, Result, Store};

/// A notice claimed for the operator's channel: what to send, and how the
/// agent's delivery of the same notice is faring (so the operator learns
/// when the agent, too, was not reached).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorNotice {
    /// The notice's ledger row, and the claim on its operator copy.
    pub claim: Claim,
    /// The session the notice is about.
    pub session_id: Uuid,
    /// The notice's idempotency key, the same on both channels.
    pub idempotency_key: String,
    /// What the operator is told.
    pub message: String,
    /// The executions concerned.
    pub execution_ids: Vec<Uuid>,
    /// When the notice was written.
    pub created_at: DateTime<Utc>,
    /// Attempts on the operator channel before this one.
    pub attempts: i32,
    /// The agent's delivery of the notice, at the claim.
    pub agent_state: DeliveryState,
    /// The agent's last error, if any.
    pub agent_error: Option<String>,
}

/// How an attempt on the operator channel ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OperatorOutcome {
    /// The channel accepted it.
    Delivered,
    /// Try again at `at`.
    Retry {
        /// The next attempt's time.
        at: DateTime<Utc>,
        /// What went wrong.
        error: String,
    },
    /// The budget ran out, or trying again cannot help.
    Failed {
        /// What went wrong.
        error: String,
    },
}

/// Notices that reached no one: the agent's delivery ended without success
/// and so did the operator's copy (or there was none: notices written
/// before the operator channel existed). Counted by `/metrics` and shown by
/// the console; served by the ended rows' partial index and the ledger's
/// primary key.
const UNDELIVERED: &str = "FROM nomos_deliveries d \
     LEFT JOIN nomos_operator_notices o ON o.notice_id = d.id \
     WHERE d.kind = 'notice' AND d.state IN ('failed', 'dropped') \
       AND (o.state IS NULL OR o.state IN ('failed', 'expired', 'none'))";

impl Store {
    /// Claims up to `limit` operator copies due at `now` for `worker_id`
    /// until `now + lease`, under one fresh token, oldest first.
    pub async fn claim_operator_notices(
        &self,
        worker_id: &str,
        now: DateTime<Utc>,
        lease: Duration,
        limit: i64,
    ) -> Result<Vec<OperatorNotice>> {
        let now = trunc(now);
        let token = Uuid::new_v4();
        let sql = format!(
            "UPDATE nomos_operator_notices \
             SET lease_owner = $1, lease_expires_at = $2, claim_token = $5, updated_at = $3 \
             WHERE notice_id IN ( \
                 SELECT notice_id FROM nomos_operator_notices \
                 WHERE state = 'pending' AND next_attempt_at <= $3 \
                   AND (lease_owner IS NULL OR lease_expires_at <= $3) \
                 ORDER BY next_attempt_at, created_at LIMIT $4 {})",
            self.backend().lock("FOR UPDATE SKIP LOCKED")
        );
        let claimed = query(sql)
            .bind(worker_id)
            .bind(trunc(now + lease))
            .bind(now)
            .bind(limit)
            .bind(token)
            .execute(self)
            .await?;
        if claimed == 0 {
            return Ok(Vec::new());
        }
        let rows = query(
            "SELECT o.notice_id, o.attempts, d.session_id, d.idempotency_key, d.note, \
               d.execution_ids, d.created_at, d.state, d.last_error \
             FROM nomos_operator_notices o JOIN nomos_deliveries d ON d.id = o.notice_id \
             WHERE o.claim_token = $1 ORDER BY o.next_attempt_at, o.created_at",
        )
        .bind(token)
        .fetch_all(self)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(OperatorNotice {
                    claim: Claim {
                        id: r.uuid("notice_id")?,
                        token,
                    },
                    session_id: r.uuid("session_id")?,
                    idempotency_key: r.text("idempotency_key")?,
                    message: r.text("note")?,
                    execution_ids: r.uuids("execution_ids")?,
                    created_at: r.time("created_at")?,
                    attempts: r.int("attempts")?,
                    agent_state: r.parsed("state")?,
                    agent_error: r.opt_text("last_error")?,
                })
            })
            .collect()
    }

    /// Records how an attempt under `claim` ended; a compare-and-set on the
    /// claim, so a notifier whose lease another took over records nothing.
    /// Returns whether it was recorded.
    pub async fn finish_operator_notice(
        &self,
        claim: Claim,
        outcome: &OperatorOutcome,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        let now = trunc(now);
        let (state, next, error, delivered) = match outcome {
            OperatorOutcome::Delivered => ("delivered", now, None, Some(now)),
            OperatorOutcome::Retry { at, error } => ("pending", trunc(*at), Some(error), None),
            OperatorOutcome::Failed { error } => ("failed", now, Some(error), None),
        };
        let n = query(
            "UPDATE nomos_operator_notices \
             SET state = $3, attempts = attempts + 1, next_attempt_at = $4, \
                 last_error = COALESCE($5, last_error), delivered_at = $6, \
                 lease_owner = NULL, lease_expires_at = NULL, updated_at = $7 \
             WHERE notice_id = $1 AND claim_token = $2 AND state = 'pending'",
        )
        .bind(claim.id)
        .bind(claim.token)
        .bind(state)
        .bind(next)
        .bind(error.map(String::as_str))
        .bind(delivered)
        .bind(now)
        .execute(self)
        .await?;
        Ok(n == 1)
    }

    /// Ends every unleased pending copy as `state` (`none`: this process
    /// has no operator channel; `expired`: written before `older_than`, too
    /// old to send late), and returns how many. A copy under a live lease is
    /// left to its notifier.
    pub async fn end_operator_notices(
        &self,
        state: OperatorState,
        older_than: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<u64> {
        let now = trunc(now);
        query(
            "UPDATE nomos_operator_notices SET state = $1, updated_at = $2 \
             WHERE state = 'pending' AND (lease_owner IS NULL OR lease_expires_at <= $2) \
               AND ($3 IS NULL OR created_at < $3)",
        )
        .bind(state.as_str())
        .bind(now)
        .bind(older_than.map(trunc))
        .execute(self)
        .await
    }

    /// How many notices reached no one (see [`UNDELIVERED`]).
    pub async fn undelivered_notices(&self) -> Result<i64> {
        let row = query(format!("SELECT COUNT(*) AS n {UNDELIVERED}"))
            .fetch_one(self)
            .await?;
        row.bigint("n")
    }

    #[cfg(feature = "test-support")]
    /// How many operator copies are still to be sent (due or waiting for a
    /// retry): the operator channel's backlog.
    pub async fn pending_operator_notices(&self) -> Result<i64> {
        let row = query("SELECT COUNT(*) AS n FROM nomos_operator_notices WHERE state = 'pending'")
            .fetch_one(self)
            .await?;
        row.bigint("n")
    }

    #[cfg(feature = "test-support")]
    /// The operator copy of notice `id`: its state, attempts and last
    /// error; `None` when it has none (not a notice, or written before the
    /// channel existed).
    pub async fn operator_copy(&self, id: Uuid) -> Result<Option<OperatorCopy>> {
        let row = query(
            "SELECT state, attempts, last_error, delivered_at FROM nomos_operator_notices \
             WHERE notice_id = $1",
        )
        .bind(id)
        .fetch_optional(self)
        .await?;
        row.map(|r| {
            Ok(OperatorCopy {
                state: r.parsed("state")?,
                attempts: r.int("attempts")?,
                last_error: r.opt_text("last_error")?,
                delivered_at: r.opt_time("delivered_at")?,
            })
        })
        .transpose()
    }
}

/// Where a notice's operator copy stands, for the tests and the simulator
/// (the API and the console read it with the notice: `read::notices`).
#[cfg(feature = "test-support")]
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct OperatorCopy {
    /// Its state.
    pub state: OperatorState,
    /// Attempts made on the channel.
    pub attempts: i32,
    /// The channel's last error, if any.
    pub last_error: Option<String>,
    /// When the channel accepted it.
    pub delivered_at: Option<DateTime<Utc>>,
}
