//! Claims on the ledger: taking due deliveries under a lease, keeping the
//! lease while the call runs, and recording what the call did.
//!
//! Every change after the claim is a compare-and-set on the claim's token
//! ([`Claim`]), not on the worker id: a worker whose lease another worker
//! took over can no longer record anything, and two processes wrongly given
//! the same worker id cannot settle each other's claims.

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

use super::decode::{self, RowExt};
use super::deliveries::delivery_cols;
use super::dialect::{query, trunc};
use super::notices::{insert_notice, settle_links};
use super::types::{AttemptOutcome, Claim, Delivery, DeliveryKind, DeliveryState};
use super::{Backend, Result, Store};

/// What a failed call leaves behind, for [`Store::fail_delivery_attempt`].
#[derive(Clone, Copy, Debug)]
pub struct FailedCall<'a> {
    /// The error, kept as the row's `last_error`.
    pub error: &'a str,
    /// When the row may be claimed again (ignored when giving up).
    pub next_attempt_at: DateTime<Utc>,
    /// The agent was short (down, timed out, throttling): counted in
    /// `shortages` as well as in `attempts`.
    pub shortage: bool,
    /// End the delivery as `failed` (a permanent error, or the retry budget
    /// is spent).
    pub give_up: bool,
    /// For a continuation that gives up: the one notice that says so,
    /// written in the same transaction. Its idempotency key is derived from
    /// the delivery, so it is written once however often this is called.
    pub notice: Option<&'a str>,
}

/// The notice key for a continuation that ended without being accepted:
/// one per delivery and reason class, so a repeat writes nothing.
pub(crate) fn settled_notice_key(prefix: &str, delivery: Uuid) -> String {
    format!("{prefix}-{delivery}")
}

impl Store {
    /// Claims up to `limit` due deliveries for `worker_id` until `now + lease`,
    /// under one fresh claim token.
    ///
    /// Due means: `pending`, `next_attempt_at <= now`, not leased or the
    /// lease has expired at `now`, and, for a continuation, the session's
    /// assent window is open at `now`. The window is checked in the claim
    /// itself (on PostgreSQL with a share lock on the window row, so a deny
    /// either commits before the claim and the claim skips the row, or waits
    /// for the claim: then the call was already in flight when the deny
    /// landed). Notices are claimed whatever the window. Oldest due first.
    ///
    /// A continuation's claim is stamped (`claimed_at`) no earlier than its
    /// window's opening: the claim read the approval, so it happened after
    /// it, even when `now` was read before the approval landed (a worker
    /// slow between reading the clock and claiming) or this replica's clock
    /// is a little behind the approver's. Refusing such a claim instead
    /// would hold back a continuation its window allows.
    ///
    /// Taking over an expired lease is the rescue of a dead worker; the row
    /// keeps its idempotency key, so the runtime can recognise the redelivery.
    pub async fn claim_deliveries(
        &self,
        worker_id: &str,
        now: DateTime<Utc>,
        lease: Duration,
        limit: i64,
    ) -> Result<Vec<Delivery>> {
        let now = trunc(now);
        let until = trunc(now + lease);
        // PostgreSQL locks the rows it picks (skipping rows another claim
        // holds) and share-locks the window; SQLite holds the write lock.
        // The window's opening, for a continuation (see above).
        let claimed_at = format!(
            "{}($3, COALESCE((SELECT w.opened_at FROM nomos_assent_windows w \
               WHERE w.session_id = nomos_deliveries.session_id \
                 AND nomos_deliveries.kind = 'continuation'), $3))",
            self.backend().greatest()
        );
        let sql = self.backend().pick(
            &format!(concat!(
                "WITH notices AS ( \
                     SELECT id, next_attempt_at, created_at FROM nomos_deliveries \
                     WHERE state = 'pending' AND kind = 'notice' AND next_attempt_at <= $3 \
                       AND (lease_owner IS NULL OR lease_expires_at <= $3) \
                     ORDER BY next_attempt_at, created_at, id LIMIT $4 \
                     FOR UPDATE SKIP LOCKED), \
                 continuations AS ( \
                     SELECT d.id, d.next_attempt_at, d.created_at FROM nomos_deliveries d \
                     JOIN nomos_assent_windows w ON w.session_id = d.session_id \
                     WHERE d.state = 'pending' AND d.kind = 'continuation' \
                       AND d.next_attempt_at <= $3 \
                       AND (d.lease_owner IS NULL OR d.lease_expires_at <= $3) \
                       AND w.closed_at IS NULL AND w.expires_at > $3 \
                     ORDER BY d.next_attempt_at, d.created_at, d.id LIMIT $4 \
                     FOR UPDATE OF d SKIP LOCKED FOR SHARE OF w), \
                 picked AS ( \
                     SELECT id FROM (SELECT * FROM notices UNION ALL SELECT * FROM continuations) c \
                     ORDER BY next_attempt_at, created_at, id LIMIT $4) \
                 UPDATE nomos_deliveries \
                 SET lease_owner = $1, lease_expires_at = $2, updated_at = $3, \
                     claims = claims + 1, claim_token = $5, claimed_at = {claimed_at} \
                 WHERE id IN (SELECT id FROM picked) \
                 RETURNING ",
                delivery_cols!()
            ), claimed_at = claimed_at),
            &format!(concat!(
                "UPDATE nomos_deliveries \
                 SET lease_owner = $1, lease_expires_at = $2, updated_at = $3, \
                     claims = claims + 1, claim_token = $5, claimed_at = {claimed_at} \
                 WHERE id IN ( \
                     SELECT d.id FROM nomos_deliveries d \
                     WHERE d.state = 'pending' AND d.next_attempt_at <= $3 \
                       AND (d.lease_owner IS NULL OR d.lease_expires_at <= $3) \
                       AND (d.kind = 'notice' OR EXISTS ( \
                           SELECT 1 FROM nomos_assent_windows w \
                           WHERE w.session_id = d.session_id AND w.closed_at IS NULL \
                             AND w.expires_at > $3)) \
                     ORDER BY d.next_attempt_at, d.created_at, d.id \
                     LIMIT $4) \
                 RETURNING ",
                delivery_cols!()
            ), claimed_at = claimed_at),
        )
        .to_string();
        let rows = query(sql)
            .bind(worker_id)
            .bind(until)
            .bind(now)
            .bind(limit)
            .bind(Uuid::new_v4())
            .fetch_all(self)
            .await?;
        let mut out = rows
            .iter()
            .map(decode::delivery)
            .collect::<Result<Vec<_>>>()?;
        out.sort_by_key(|d| (d.next_attempt_at, d.created_at, d.id));
        Ok(out)
    }

    /// Extends the leases of `claims` to `now + lease`, in one statement.
    /// Never shortens one: two renewals of a claim can reach the database
    /// out of order (a worker's tick and its pre-call check), and a later
    /// write of an earlier `now` must not hand the row to another worker.
    /// Returns the ids still held; a claim missing from the answer was taken
    /// over (or settled) and its call's outcome can no longer be recorded.
    pub async fn renew_leases(
        &self,
        claims: &[Claim],
        now: DateTime<Utc>,
        lease: Duration,
    ) -> Result<Vec<Uuid>> {
        if claims.is_empty() {
            return Ok(Vec::new());
        }
        let (ids, tokens) = split(claims);
        let backend = self.backend();
        let sql = format!(
            "UPDATE nomos_deliveries AS d \
             SET lease_expires_at = {}(lease_expires_at, $3), updated_at = $4 \
             FROM {} \
             WHERE d.id = c.cid AND d.claim_token = c.ctoken AND d.state = 'pending' \
               AND d.lease_owner IS NOT NULL \
             RETURNING id",
            backend.greatest(),
            claim_set(backend),
        );
        let rows = query(sql)
            .bind(&ids)
            .bind(&tokens)
            .bind(trunc(now + lease))
            .bind(trunc(now))
            .fetch_all(self)
            .await?;
        rows.iter().map(|r| r.uuid("id")).collect()
    }

    /// Records calls the agent accepted: each delivery becomes `delivered`
    /// and a continuation's links are settled `continued`, in one
    /// transaction. Only rows still held under the given claim change; the
    /// answer lists those. An expired but not taken-over lease still counts
    /// as held: the call did succeed.
    pub async fn complete_deliveries(
        &self,
        claims: &[Claim],
        now: DateTime<Utc>,
    ) -> Result<Vec<Uuid>> {
        if claims.is_empty() {
            return Ok(Vec::new());
        }
        let now = trunc(now);
        let (ids, tokens) = split(claims);
        let mut tx = self.begin().await?;
        let backend = tx.backend();
        let sql = format!(
            "UPDATE nomos_deliveries AS d \
             SET state = 'delivered', delivered_at = $3, updated_at = $3, \
                 lease_owner = NULL, lease_expires_at = NULL \
             FROM {} \
             WHERE d.id = c.cid AND d.claim_token = c.ctoken AND d.state = 'pending' \
             RETURNING id, kind",
            claim_set(backend),
        );
        let done = query(sql)
            .bind(&ids)
            .bind(&tokens)
            .bind(now)
            .fetch_all(&mut tx)
            .await?;
        let mut delivered = Vec::with_capacity(done.len());
        let mut continued = Vec::new();
        for row in &done {
            let id = row.uuid("id")?;
            if row.parsed::<DeliveryKind>("kind")? == DeliveryKind::Continuation {
                continued.push(id);
            }
            delivered.push(id);
        }
        if !continued.is_empty() {
            let sql = format!(
                "UPDATE nomos_plan_executions SET continued_at = $2, outcome = 'continued' \
                 WHERE delivery_id {} AND continued_at IS NULL",
                backend.in_ids("$1"),
            );
            query(sql)
                .bind(&continued)
                .bind(now)
                .execute(&mut tx)
                .await?;
        }
        tx.commit().await?;
        Ok(delivered)
    }

    /// Records a failed call (an error, a 5xx, a time-out, a 4xx).
    ///
    /// Compare-and-set on the claim. `attempts` goes up by one (and
    /// `shortages` for a shortage), `first_failed_at` is set on the first
    /// failure, the lease is released, and the row becomes claimable again at
    /// `next_attempt_at`, unless `give_up`: then the row ends `failed`, a
    /// continuation's links are settled `failed` with the error as reason,
    /// and the notice (if given) is written, all in one transaction.
    pub async fn fail_delivery_attempt(
        &self,
        claim: Claim,
        call: &FailedCall<'_>,
        now: DateTime<Utc>,
    ) -> Result<AttemptOutcome> {
        let now = trunc(now);
        let state = if call.give_up {
            DeliveryState::Failed
        } else {
            DeliveryState::Pending
        };
        let mut tx = self.begin().await?;
        let row = query(concat!(
            "UPDATE nomos_deliveries \
             SET attempts = attempts + 1, shortages = shortages + $7, last_error = $3, \
                 lease_owner = NULL, lease_expires_at = NULL, \
                 next_attempt_at = $5, updated_at = $4, state = $6, \
                 first_failed_at = COALESCE(first_failed_at, $4) \
             WHERE id = $1 AND claim_token = $2 AND state = 'pending' \
             RETURNING ",
            delivery_cols!()
        ))
        .bind(claim.id)
        .bind(claim.token)
        .bind(call.error)
        .bind(now)
        .bind(trunc(call.next_attempt_at))
        .bind(state.as_str())
        .bind(i32::from(call.shortage))
        .fetch_optional(&mut tx)
        .await?;
        let row = row.as_ref().map(decode::delivery).transpose()?;
        if let Some(d) = row.as_ref().filter(|d| gave_up_continuation(d)) {
            settle_links(&mut tx, d.id, "failed", call.error, now).await?;
            if let Some(message) = call.notice {
                let key = settled_notice_key("f", d.id);
                insert_notice(&mut tx, d.into(), &key, message, now).await?;
            }
        }
        tx.commit().await?;
        Ok(match row {
            None => AttemptOutcome::LeaseLost,
            Some(d) if d.state == DeliveryState::Failed => AttemptOutcome::GaveUp {
                attempts: d.attempts,
            },
            Some(d) => AttemptOutcome::Retry {
                attempts: d.attempts,
                next_attempt_at: d.next_attempt_at,
            },
        })
    }

    /// Gives a lease back without recording an attempt (graceful shutdown:
    /// the row becomes claimable at once by another worker). `false` if the
    /// claim no longer held it.
    pub async fn release_lease(&self, claim: Claim, now: DateTime<Utc>) -> Result<bool> {
        let n = query(
            "UPDATE nomos_deliveries \
             SET lease_owner = NULL, lease_expires_at = NULL, updated_at = $3 \
             WHERE id = $1 AND claim_token = $2 AND state = 'pending'",
        )
        .bind(claim.id)
        .bind(claim.token)
        .bind(trunc(now))
        .execute(self)
        .await?;
        Ok(n == 1)
    }
}

fn gave_up_continuation(d: &Delivery) -> bool {
    d.kind == DeliveryKind::Continuation && d.state == DeliveryState::Failed
}

fn split(claims: &[Claim]) -> (Vec<Uuid>, Vec<Uuid>) {
    claims.iter().map(|c| (c.id, c.token)).unzip()
}

/// The claims bound as `$1` (ids) and `$2` (tokens), as a relation `c` of
/// pairs `(cid, ctoken)` to join the ledger with.
fn claim_set(backend: Backend) -> String {
    backend.zip("c", &[("$1", "cid", "uuid"), ("$2", "ctoken", "uuid")])
}
