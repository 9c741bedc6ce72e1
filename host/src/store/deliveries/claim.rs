//! Claims on the ledger: taking due deliveries under a lease, keeping the
//! lease while the call runs, and giving it back.
//!
//! Every change after the claim is a compare-and-set on the claim's token
//! ([`Claim`]), not on the worker id: a worker whose lease another worker
//! took over can no longer record anything, and two processes wrongly given
//! the same worker id cannot settle each other's claims.

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

use crate::store::decode::{self, RowExt};
use crate::store::deliveries::delivery_cols;
use crate::store::dialect::{query, trunc};
use crate::store::types::{Claim, Delivery};
use crate::store::{Backend, Result, Store};

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
    /// itself (on PostgreSQL with a key-share lock on the window row, which
    /// a deny's `FOR UPDATE` waits for, so a deny either commits before the
    /// claim and the claim skips the row, or waits for the claim: then the
    /// call was already in flight when the deny landed). A planner's lock on
    /// the window does not conflict with it (see the lock order in
    /// `store::deliveries`). Notices are claimed whatever the window.
    /// Oldest due first.
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
    ///
    /// The claim (like a lease renewal) writes only columns no index reads,
    /// and leaves `updated_at`, which two indexes read, as it was: on
    /// PostgreSQL it can then be a heap-only update on the room migration
    /// 032 leaves on each page, writing no index entry. (`updated_at` says
    /// when the row's state last changed, not who holds it.)
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
        // holds) and key-share-locks the window; SQLite holds the write lock.
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
                     FOR UPDATE OF d SKIP LOCKED FOR KEY SHARE OF w), \
                 picked AS ( \
                     SELECT id FROM (SELECT * FROM notices UNION ALL SELECT * FROM continuations) c \
                     ORDER BY next_attempt_at, created_at, id LIMIT $4) \
                 UPDATE nomos_deliveries \
                 SET lease_owner = $1, lease_expires_at = $2, \
                     claims = claims + 1, claim_token = $5, claimed_at = {claimed_at} \
                 WHERE id IN (SELECT id FROM picked) \
                 RETURNING ",
                delivery_cols!()
            ), claimed_at = claimed_at),
            &format!(concat!(
                "UPDATE nomos_deliveries \
                 SET lease_owner = $1, lease_expires_at = $2, \
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
             SET lease_expires_at = {}(lease_expires_at, $3) \
             FROM {} \
             WHERE d.id = c.cid AND d.claim_token = c.ctoken AND d.state = 'pending' \
               AND d.lease_owner IS NOT NULL{} \
             RETURNING id",
            backend.greatest(),
            claim_set(backend),
            in_id_order(backend),
        );
        let rows = query(sql)
            .bind(&ids)
            .bind(&tokens)
            .bind(trunc(now + lease))
            .fetch_all(self)
            .await?;
        rows.iter().map(|r| r.uuid("id")).collect()
    }

    #[cfg(feature = "test-support")]
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

pub(in crate::store) fn split(claims: &[Claim]) -> (Vec<Uuid>, Vec<Uuid>) {
    claims.iter().map(|c| (c.id, c.token)).unzip()
}

/// A condition on the ledger rows (alias `d`) of the ids bound as `$1`
/// that locks them in id order before the statement updates them, on
/// PostgreSQL: the lock order in `store::deliveries`. Without it an
/// `UPDATE` over several rows locks them in the order its plan meets them,
/// which two statements need not share (a renewal of a worker's leases
/// and the record of its calls crossed so, and deadlocked).
///
/// The locking read is an `ARRAY(…)`, which PostgreSQL runs once, before
/// the update, as an init plan. As `d.id IN (SELECT …)` the planner made
/// it the inner side of a nested loop and ran it again for every row
/// updated, each time locking the sorted rows up to the one it wanted: a
/// batch of n claims took about n²/2 row locks (a record of 100 calls
/// 5,000, 5,428 buffers; issue 64's renewals and records that stalled for
/// seconds under load).
pub(in crate::store) fn in_id_order(backend: Backend) -> &'static str {
    backend.pick(
        " AND d.id = ANY(ARRAY(SELECT id FROM nomos_deliveries WHERE id = ANY($1) \
           ORDER BY id FOR UPDATE))",
        "",
    )
}

/// The claims bound as `$1` (ids) and `$2` (tokens), as a relation `c` of
/// pairs `(cid, ctoken)` to join the ledger with.
pub(in crate::store) fn claim_set(backend: Backend) -> String {
    backend.zip("c", &[("$1", "cid", "uuid"), ("$2", "ctoken", "uuid")])
}
