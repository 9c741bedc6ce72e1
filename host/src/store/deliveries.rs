//! The ledger: claiming pending deliveries under a lease, and settling them
//! with compare-and-set against the lease holder.

use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::decode;
use super::types::{AttemptOutcome, Delivery, DeliveryKind, DeliveryState};
use super::{micros, trunc, Db, Result, Store, SQLITE_BEGIN};

/// Every ledger column, in the order [`decode::delivery`] reads them.
macro_rules! delivery_cols {
    () => {
        "id, session_id, kind, idempotency_key, execution_ids, note, policy_revision, state, \
         attempts, next_attempt_at, lease_owner, lease_expires_at, last_error, created_at, \
         delivered_at, updated_at, claims"
    };
}
pub(crate) use delivery_cols;

impl Store {
    /// Claims up to `limit` due deliveries for `worker_id` until `now + lease`.
    ///
    /// Due means: `pending`, `next_attempt_at <= now`, and not leased or the
    /// lease has expired at `now`. Taking over an expired lease *is* the
    /// rescue of a crashed worker; the row keeps its idempotency key, so the
    /// runtime can recognise the redelivery. Oldest due first.
    ///
    /// PostgreSQL locks the candidates with `FOR UPDATE SKIP LOCKED` inside
    /// one `UPDATE … RETURNING`, so concurrent workers (any number of
    /// replicas) never claim the same row and never wait on each other.
    /// SQLite runs a single `UPDATE … RETURNING` (writers are serialised).
    pub async fn claim_deliveries(
        &self,
        worker_id: &str,
        now: OffsetDateTime,
        lease: Duration,
        limit: i64,
    ) -> Result<Vec<Delivery>> {
        let now = trunc(now);
        let until = trunc(now + lease);
        let mut out = match &self.db {
            Db::Pg(pool) => {
                let rows = sqlx::query(concat!(
                    "UPDATE nomos_deliveries \
                     SET lease_owner = $1, lease_expires_at = $2, updated_at = $3, \
                         claims = claims + 1 \
                     WHERE id = ANY(ARRAY( \
                         SELECT id FROM nomos_deliveries \
                         WHERE state = 'pending' AND next_attempt_at <= $3 \
                           AND (lease_owner IS NULL OR lease_expires_at <= $3) \
                         ORDER BY next_attempt_at, created_at, id \
                         LIMIT $4 FOR UPDATE SKIP LOCKED)) \
                       AND state = 'pending' \
                       AND (lease_owner IS NULL OR lease_expires_at <= $3) \
                     RETURNING ",
                    delivery_cols!()
                ))
                .bind(worker_id)
                .bind(until)
                .bind(now)
                .bind(limit)
                .fetch_all(pool)
                .await?;
                rows.iter()
                    .map(decode::delivery)
                    .collect::<Result<Vec<_>>>()?
            }
            Db::Lite(pool) => {
                let rows = sqlx::query(concat!(
                    "UPDATE nomos_deliveries \
                     SET lease_owner = ?1, lease_expires_at = ?2, updated_at = ?3, \
                         claims = claims + 1 \
                     WHERE id IN ( \
                         SELECT id FROM nomos_deliveries \
                         WHERE state = 'pending' AND next_attempt_at <= ?3 \
                           AND (lease_owner IS NULL OR lease_expires_at <= ?3) \
                         ORDER BY next_attempt_at, created_at, id \
                         LIMIT ?4) \
                     RETURNING ",
                    delivery_cols!()
                ))
                .bind(worker_id)
                .bind(micros(until))
                .bind(micros(now))
                .bind(limit)
                .fetch_all(pool)
                .await?;
                rows.iter()
                    .map(decode::delivery)
                    .collect::<Result<Vec<_>>>()?
            }
        };
        out.sort_by_key(|d| (d.next_attempt_at, d.created_at, d.id));
        Ok(out)
    }

    /// Marks a delivery delivered after the agent call succeeded.
    ///
    /// Compare-and-set: only if `worker_id` still holds the lease and the row
    /// is still pending. In the same transaction a continuation's links are
    /// settled (`continued_at = now`, outcome `continued`). Returns `false`
    /// and changes nothing if the lease was lost (released or taken over):
    /// the new holder will redeliver with the same idempotency key. An
    /// expired but not yet taken-over lease still counts as held: the call
    /// did succeed.
    pub async fn complete_delivery(
        &self,
        id: Uuid,
        worker_id: &str,
        now: OffsetDateTime,
    ) -> Result<bool> {
        let now = trunc(now);
        match &self.db {
            Db::Pg(pool) => {
                let mut tx = pool.begin().await?;
                let kind: Option<String> = sqlx::query_scalar(
                    "UPDATE nomos_deliveries \
                     SET state = 'delivered', delivered_at = $3, updated_at = $3, \
                         lease_owner = NULL, lease_expires_at = NULL \
                     WHERE id = $1 AND lease_owner = $2 AND state = 'pending' \
                     RETURNING kind",
                )
                .bind(id)
                .bind(worker_id)
                .bind(now)
                .fetch_optional(&mut *tx)
                .await?;
                let Some(kind) = kind else {
                    return Ok(false);
                };
                if kind == DeliveryKind::Continuation.as_str() {
                    sqlx::query(
                        "UPDATE nomos_plan_executions \
                         SET continued_at = $2, outcome = 'continued' \
                         WHERE delivery_id = $1 AND continued_at IS NULL",
                    )
                    .bind(id)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                }
                tx.commit().await?;
            }
            Db::Lite(pool) => {
                let mut tx = pool.begin_with(SQLITE_BEGIN).await?;
                let kind: Option<String> = sqlx::query_scalar(
                    "UPDATE nomos_deliveries \
                     SET state = 'delivered', delivered_at = ?3, updated_at = ?3, \
                         lease_owner = NULL, lease_expires_at = NULL \
                     WHERE id = ?1 AND lease_owner = ?2 AND state = 'pending' \
                     RETURNING kind",
                )
                .bind(id.to_string())
                .bind(worker_id)
                .bind(micros(now))
                .fetch_optional(&mut *tx)
                .await?;
                let Some(kind) = kind else {
                    return Ok(false);
                };
                if kind == DeliveryKind::Continuation.as_str() {
                    sqlx::query(
                        "UPDATE nomos_plan_executions \
                         SET continued_at = ?2, outcome = 'continued' \
                         WHERE delivery_id = ?1 AND continued_at IS NULL",
                    )
                    .bind(id.to_string())
                    .bind(micros(now))
                    .execute(&mut *tx)
                    .await?;
                }
                tx.commit().await?;
            }
        }
        Ok(true)
    }

    /// Records a failed attempt (agent call error, 5xx, timeout, 4xx).
    ///
    /// Compare-and-set on the lease holder, like [`Store::complete_delivery`].
    /// `attempts` goes up by one, `last_error` is kept, the lease is released
    /// and the row becomes claimable again at `next_attempt_at` (the caller's
    /// backoff). When the new count reaches `max_attempts` the row becomes
    /// `failed` instead, and a continuation's links are settled in the same
    /// transaction (outcome `failed`, `reason = error`, `continued_at = now`):
    /// a visible end, never a silent loss. Pass `max_attempts = 0` to give up
    /// at once (a permanent error such as a 4xx).
    pub async fn fail_delivery_attempt(
        &self,
        id: Uuid,
        worker_id: &str,
        error: &str,
        now: OffsetDateTime,
        next_attempt_at: OffsetDateTime,
        max_attempts: i32,
    ) -> Result<AttemptOutcome> {
        let now = trunc(now);
        let next = trunc(next_attempt_at);
        let (state, attempts) = match &self.db {
            Db::Pg(pool) => {
                let mut tx = pool.begin().await?;
                let row: Option<(String, String, i32)> = sqlx::query_as(
                    "UPDATE nomos_deliveries \
                     SET attempts = attempts + 1, last_error = $3, \
                         lease_owner = NULL, lease_expires_at = NULL, \
                         next_attempt_at = $5, updated_at = $4, \
                         state = CASE WHEN attempts + 1 >= $6 THEN 'failed' ELSE 'pending' END \
                     WHERE id = $1 AND lease_owner = $2 AND state = 'pending' \
                     RETURNING kind, state, attempts",
                )
                .bind(id)
                .bind(worker_id)
                .bind(error)
                .bind(now)
                .bind(next)
                .bind(max_attempts)
                .fetch_optional(&mut *tx)
                .await?;
                let Some(row) = row else {
                    return Ok(AttemptOutcome::LeaseLost);
                };
                if row.0 == DeliveryKind::Continuation.as_str()
                    && row.1 == DeliveryState::Failed.as_str()
                {
                    sqlx::query(
                        "UPDATE nomos_plan_executions \
                         SET continued_at = $2, outcome = 'failed', reason = $3 \
                         WHERE delivery_id = $1 AND continued_at IS NULL",
                    )
                    .bind(id)
                    .bind(now)
                    .bind(error)
                    .execute(&mut *tx)
                    .await?;
                }
                tx.commit().await?;
                (row.1, row.2)
            }
            Db::Lite(pool) => {
                let mut tx = pool.begin_with(SQLITE_BEGIN).await?;
                let row: Option<(String, String, i64)> = sqlx::query_as(
                    "UPDATE nomos_deliveries \
                     SET attempts = attempts + 1, last_error = ?3, \
                         lease_owner = NULL, lease_expires_at = NULL, \
                         next_attempt_at = ?5, updated_at = ?4, \
                         state = CASE WHEN attempts + 1 >= ?6 THEN 'failed' ELSE 'pending' END \
                     WHERE id = ?1 AND lease_owner = ?2 AND state = 'pending' \
                     RETURNING kind, state, attempts",
                )
                .bind(id.to_string())
                .bind(worker_id)
                .bind(error)
                .bind(micros(now))
                .bind(micros(next))
                .bind(max_attempts)
                .fetch_optional(&mut *tx)
                .await?;
                let Some((kind, state, attempts)) = row else {
                    return Ok(AttemptOutcome::LeaseLost);
                };
                if kind == DeliveryKind::Continuation.as_str()
                    && state == DeliveryState::Failed.as_str()
                {
                    sqlx::query(
                        "UPDATE nomos_plan_executions \
                         SET continued_at = ?2, outcome = 'failed', reason = ?3 \
                         WHERE delivery_id = ?1 AND continued_at IS NULL",
                    )
                    .bind(id.to_string())
                    .bind(micros(now))
                    .bind(error)
                    .execute(&mut *tx)
                    .await?;
                }
                tx.commit().await?;
                (state, i32::try_from(attempts).unwrap_or(i32::MAX))
            }
        };
        Ok(if state == DeliveryState::Failed.as_str() {
            AttemptOutcome::GaveUp { attempts }
        } else {
            AttemptOutcome::Retry {
                attempts,
                next_attempt_at: next,
            }
        })
    }

    /// Gives a lease back without recording an attempt (graceful shutdown:
    /// the row becomes claimable at once by another worker). Compare-and-set
    /// on the holder; `false` if `worker_id` did not hold it.
    pub async fn release_lease(
        &self,
        id: Uuid,
        worker_id: &str,
        now: OffsetDateTime,
    ) -> Result<bool> {
        let now = trunc(now);
        let n = match &self.db {
            Db::Pg(pool) => sqlx::query(
                "UPDATE nomos_deliveries \
                 SET lease_owner = NULL, lease_expires_at = NULL, updated_at = $3 \
                 WHERE id = $1 AND lease_owner = $2 AND state = 'pending'",
            )
            .bind(id)
            .bind(worker_id)
            .bind(now)
            .execute(pool)
            .await?
            .rows_affected(),
            Db::Lite(pool) => sqlx::query(
                "UPDATE nomos_deliveries \
                 SET lease_owner = NULL, lease_expires_at = NULL, updated_at = ?3 \
                 WHERE id = ?1 AND lease_owner = ?2 AND state = 'pending'",
            )
            .bind(id.to_string())
            .bind(worker_id)
            .bind(micros(now))
            .execute(pool)
            .await?
            .rows_affected(),
        };
        Ok(n == 1)
    }

    /// Clears leases that have expired at `now` and returns how many, for a
    /// rescuer loop whose metric shows crashed or stuck workers. Not needed
    /// for correctness ([`Store::claim_deliveries`] takes expired leases over
    /// by itself) and it does not count an attempt: a crash is not the
    /// agent's failure.
    pub async fn release_expired_leases(&self, now: OffsetDateTime) -> Result<u64> {
        let now = trunc(now);
        Ok(match &self.db {
            Db::Pg(pool) => sqlx::query(
                "UPDATE nomos_deliveries \
                 SET lease_owner = NULL, lease_expires_at = NULL, updated_at = $1 \
                 WHERE state = 'pending' AND lease_owner IS NOT NULL AND lease_expires_at <= $1",
            )
            .bind(now)
            .execute(pool)
            .await?
            .rows_affected(),
            Db::Lite(pool) => sqlx::query(
                "UPDATE nomos_deliveries \
                 SET lease_owner = NULL, lease_expires_at = NULL, updated_at = ?1 \
                 WHERE state = 'pending' AND lease_owner IS NOT NULL AND lease_expires_at <= ?1",
            )
            .bind(micros(now))
            .execute(pool)
            .await?
            .rows_affected(),
        })
    }

    /// One ledger row by id; `None` if unknown.
    pub async fn delivery(&self, id: Uuid) -> Result<Option<Delivery>> {
        let row = match &self.db {
            Db::Pg(pool) => sqlx::query(concat!(
                "SELECT ",
                delivery_cols!(),
                " FROM nomos_deliveries WHERE id = $1"
            ))
            .bind(id)
            .fetch_optional(pool)
            .await?
            .map(|r| decode::delivery(&r)),
            Db::Lite(pool) => sqlx::query(concat!(
                "SELECT ",
                delivery_cols!(),
                " FROM nomos_deliveries WHERE id = ?1"
            ))
            .bind(id.to_string())
            .fetch_optional(pool)
            .await?
            .map(|r| decode::delivery(&r)),
        };
        row.transpose()
    }

    /// The session's ledger, newest first (empty for an unknown session).
    pub async fn deliveries_for_session(&self, session_id: Uuid) -> Result<Vec<Delivery>> {
        match &self.db {
            Db::Pg(pool) => sqlx::query(concat!(
                "SELECT ",
                delivery_cols!(),
                " FROM nomos_deliveries WHERE session_id = $1 ORDER BY created_at DESC, id DESC"
            ))
            .bind(session_id)
            .fetch_all(pool)
            .await?
            .iter()
            .map(decode::delivery)
            .collect(),
            Db::Lite(pool) => sqlx::query(concat!(
                "SELECT ",
                delivery_cols!(),
                " FROM nomos_deliveries WHERE session_id = ?1 ORDER BY created_at DESC, id DESC"
            ))
            .bind(session_id.to_string())
            .fetch_all(pool)
            .await?
            .iter()
            .map(decode::delivery)
            .collect(),
        }
    }
}
