//! Claims on the ledger: taking due deliveries under a lease, keeping the
//! lease while the call runs, and recording what the call did.
//!
//! Every change after the claim is a compare-and-set on the claim's token
//! ([`Claim`]), not on the worker id: a worker whose lease another worker
//! took over can no longer record anything, and two processes wrongly given
//! the same worker id cannot settle each other's claims.

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

use super::decode;
use super::deliveries::delivery_cols;
use super::notices::{insert_notice_lite, insert_notice_pg, settle_links_lite, settle_links_pg};
use super::types::{AttemptOutcome, Claim, Delivery, DeliveryKind, DeliveryState};
use super::{micros, trunc, Db, Result, Store, SQLITE_BEGIN};

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
        let token = Uuid::new_v4();
        let rows = match &self.db {
            Db::Pg(pool) => sqlx::query(concat!(
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
                       AND w.closed_at IS NULL AND w.opened_at <= $3 AND w.expires_at > $3 \
                     ORDER BY d.next_attempt_at, d.created_at, d.id LIMIT $4 \
                     FOR UPDATE OF d SKIP LOCKED FOR SHARE OF w), \
                 picked AS ( \
                     SELECT id FROM (SELECT * FROM notices UNION ALL SELECT * FROM continuations) c \
                     ORDER BY next_attempt_at, created_at, id LIMIT $4) \
                 UPDATE nomos_deliveries \
                 SET lease_owner = $1, lease_expires_at = $2, updated_at = $3, \
                     claims = claims + 1, claim_token = $5, claimed_at = $3 \
                 WHERE id IN (SELECT id FROM picked) \
                 RETURNING ",
                delivery_cols!()
            ))
            .bind(worker_id)
            .bind(until)
            .bind(now)
            .bind(limit)
            .bind(token)
            .fetch_all(pool)
            .await?
            .iter()
            .map(decode::delivery)
            .collect::<Result<Vec<_>>>()?,
            Db::Lite(pool) => sqlx::query(concat!(
                "UPDATE nomos_deliveries \
                 SET lease_owner = ?1, lease_expires_at = ?2, updated_at = ?3, \
                     claims = claims + 1, claim_token = ?5, claimed_at = ?3 \
                 WHERE id IN ( \
                     SELECT d.id FROM nomos_deliveries d \
                     WHERE d.state = 'pending' AND d.next_attempt_at <= ?3 \
                       AND (d.lease_owner IS NULL OR d.lease_expires_at <= ?3) \
                       AND (d.kind = 'notice' OR EXISTS ( \
                           SELECT 1 FROM nomos_assent_windows w \
                           WHERE w.session_id = d.session_id AND w.closed_at IS NULL \
                             AND w.opened_at <= ?3 AND w.expires_at > ?3)) \
                     ORDER BY d.next_attempt_at, d.created_at, d.id \
                     LIMIT ?4) \
                 RETURNING ",
                delivery_cols!()
            ))
            .bind(worker_id)
            .bind(micros(until))
            .bind(micros(now))
            .bind(limit)
            .bind(token.to_string())
            .fetch_all(pool)
            .await?
            .iter()
            .map(decode::delivery)
            .collect::<Result<Vec<_>>>()?,
        };
        let mut out = rows;
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
        let now = trunc(now);
        let until = trunc(now + lease);
        let (ids, tokens) = split(claims);
        match &self.db {
            Db::Pg(pool) => Ok(sqlx::query_scalar(
                "UPDATE nomos_deliveries d \
                 SET lease_expires_at = GREATEST(d.lease_expires_at, $3), updated_at = $4 \
                 FROM UNNEST($1::uuid[], $2::uuid[]) AS c(id, token) \
                 WHERE d.id = c.id AND d.claim_token = c.token AND d.state = 'pending' \
                   AND d.lease_owner IS NOT NULL \
                 RETURNING d.id",
            )
            .bind(&ids)
            .bind(&tokens)
            .bind(until)
            .bind(now)
            .fetch_all(pool)
            .await?),
            Db::Lite(pool) => {
                let held: Vec<String> = sqlx::query_scalar(
                    "UPDATE nomos_deliveries \
                     SET lease_expires_at = MAX(lease_expires_at, ?2), updated_at = ?3 \
                     WHERE state = 'pending' AND lease_owner IS NOT NULL \
                       AND id || ' ' || claim_token IN (SELECT value FROM json_each(?1)) \
                     RETURNING id",
                )
                .bind(lite_claims(claims))
                .bind(micros(until))
                .bind(micros(now))
                .fetch_all(pool)
                .await?;
                Ok(held
                    .iter()
                    .filter_map(|s| Uuid::parse_str(s).ok())
                    .collect())
            }
        }
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
        match &self.db {
            Db::Pg(pool) => Ok(sqlx::query_scalar(
                "WITH done AS ( \
                     UPDATE nomos_deliveries d \
                     SET state = 'delivered', delivered_at = $3, updated_at = $3, \
                         lease_owner = NULL, lease_expires_at = NULL \
                     FROM UNNEST($1::uuid[], $2::uuid[]) AS c(id, token) \
                     WHERE d.id = c.id AND d.claim_token = c.token AND d.state = 'pending' \
                     RETURNING d.id, d.kind), \
                 settled AS ( \
                     UPDATE nomos_plan_executions \
                     SET continued_at = $3, outcome = 'continued' \
                     WHERE delivery_id IN (SELECT id FROM done WHERE kind = 'continuation') \
                       AND continued_at IS NULL) \
                 SELECT id FROM done",
            )
            .bind(&ids)
            .bind(&tokens)
            .bind(now)
            .fetch_all(pool)
            .await?),
            Db::Lite(pool) => {
                let mut tx = pool.begin_with(SQLITE_BEGIN).await?;
                let done: Vec<(String, String)> = sqlx::query_as(
                    "UPDATE nomos_deliveries \
                     SET state = 'delivered', delivered_at = ?2, updated_at = ?2, \
                         lease_owner = NULL, lease_expires_at = NULL \
                     WHERE state = 'pending' \
                       AND id || ' ' || claim_token IN (SELECT value FROM json_each(?1)) \
                     RETURNING id, kind",
                )
                .bind(lite_claims(claims))
                .bind(micros(now))
                .fetch_all(&mut *tx)
                .await?;
                let continued: Vec<&str> = done
                    .iter()
                    .filter(|(_, kind)| kind == DeliveryKind::Continuation.as_str())
                    .map(|(id, _)| id.as_str())
                    .collect();
                if !continued.is_empty() {
                    sqlx::query(
                        "UPDATE nomos_plan_executions SET continued_at = ?2, outcome = 'continued' \
                         WHERE delivery_id IN (SELECT value FROM json_each(?1)) \
                           AND continued_at IS NULL",
                    )
                    .bind(serde_json::Value::from(continued).to_string())
                    .bind(micros(now))
                    .execute(&mut *tx)
                    .await?;
                }
                tx.commit().await?;
                Ok(done
                    .iter()
                    .filter_map(|(id, _)| Uuid::parse_str(id).ok())
                    .collect())
            }
        }
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
        let next = trunc(call.next_attempt_at);
        let state = if call.give_up {
            DeliveryState::Failed
        } else {
            DeliveryState::Pending
        };
        let shortage = i32::from(call.shortage);
        let row: Option<Delivery> = match &self.db {
            Db::Pg(pool) => {
                let mut tx = pool.begin().await?;
                let row = sqlx::query(concat!(
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
                .bind(next)
                .bind(state.as_str())
                .bind(shortage)
                .fetch_optional(&mut *tx)
                .await?
                .map(|r| decode::delivery(&r))
                .transpose()?;
                if let Some(d) = row.as_ref().filter(|d| gave_up_continuation(d)) {
                    settle_links_pg(&mut tx, d.id, "failed", call.error, now).await?;
                    if let Some(message) = call.notice {
                        let key = settled_notice_key("f", d.id);
                        insert_notice_pg(&mut tx, d.into(), &key, message, now).await?;
                    }
                }
                tx.commit().await?;
                row
            }
            Db::Lite(pool) => {
                let mut tx = pool.begin_with(SQLITE_BEGIN).await?;
                let row = sqlx::query(concat!(
                    "UPDATE nomos_deliveries \
                     SET attempts = attempts + 1, shortages = shortages + ?7, last_error = ?3, \
                         lease_owner = NULL, lease_expires_at = NULL, \
                         next_attempt_at = ?5, updated_at = ?4, state = ?6, \
                         first_failed_at = COALESCE(first_failed_at, ?4) \
                     WHERE id = ?1 AND claim_token = ?2 AND state = 'pending' \
                     RETURNING ",
                    delivery_cols!()
                ))
                .bind(claim.id.to_string())
                .bind(claim.token.to_string())
                .bind(call.error)
                .bind(micros(now))
                .bind(micros(next))
                .bind(state.as_str())
                .bind(shortage)
                .fetch_optional(&mut *tx)
                .await?
                .map(|r| decode::delivery(&r))
                .transpose()?;
                if let Some(d) = row.as_ref().filter(|d| gave_up_continuation(d)) {
                    settle_links_lite(&mut tx, d.id, "failed", call.error, now).await?;
                    if let Some(message) = call.notice {
                        let key = settled_notice_key("f", d.id);
                        insert_notice_lite(&mut tx, d.into(), &key, message, now).await?;
                    }
                }
                tx.commit().await?;
                row
            }
        };
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
        let now = trunc(now);
        let n = match &self.db {
            Db::Pg(pool) => sqlx::query(
                "UPDATE nomos_deliveries \
                 SET lease_owner = NULL, lease_expires_at = NULL, updated_at = $3 \
                 WHERE id = $1 AND claim_token = $2 AND state = 'pending'",
            )
            .bind(claim.id)
            .bind(claim.token)
            .bind(now)
            .execute(pool)
            .await?
            .rows_affected(),
            Db::Lite(pool) => sqlx::query(
                "UPDATE nomos_deliveries \
                 SET lease_owner = NULL, lease_expires_at = NULL, updated_at = ?3 \
                 WHERE id = ?1 AND claim_token = ?2 AND state = 'pending'",
            )
            .bind(claim.id.to_string())
            .bind(claim.token.to_string())
            .bind(micros(now))
            .execute(pool)
            .await?
            .rows_affected(),
        };
        Ok(n == 1)
    }
}

fn gave_up_continuation(d: &Delivery) -> bool {
    d.kind == DeliveryKind::Continuation && d.state == DeliveryState::Failed
}

fn split(claims: &[Claim]) -> (Vec<Uuid>, Vec<Uuid>) {
    claims.iter().map(|c| (c.id, c.token)).unzip()
}

/// SQLite has no arrays of pairs: `"<id> <token>"` strings in a JSON array,
/// compared with `id || ' ' || claim_token`.
fn lite_claims(claims: &[Claim]) -> String {
    let pairs: Vec<String> = claims
        .iter()
        .map(|c| format!("{} {}", c.id, c.token))
        .collect();
    serde_json::Value::from(pairs).to_string()
}
