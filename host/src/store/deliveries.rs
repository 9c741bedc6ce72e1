//! The ledger: reading it, and releasing expired leases (the claims
//! themselves are in `claims`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::decode;
use super::types::Delivery;
use super::{micros, trunc, Db, Result, Store};

/// Every ledger column, in the order [`decode::delivery`] reads them.
macro_rules! delivery_cols {
    () => {
        "id, session_id, kind, idempotency_key, execution_ids, note, policy_revision, state, \
         attempts, next_attempt_at, lease_owner, lease_expires_at, last_error, created_at, \
         delivered_at, updated_at, claims, claim_token, claimed_at, first_failed_at, shortages"
    };
}
pub(crate) use delivery_cols;

impl Store {
    /// Clears leases that have expired at `now` and returns how many, for a
    /// rescuer loop whose metric shows crashed or stuck workers. Not needed
    /// for correctness ([`Store::claim_deliveries`] takes expired leases over
    /// by itself) and it does not count an attempt: a crash is not the
    /// agent's failure.
    pub async fn release_expired_leases(&self, now: DateTime<Utc>) -> Result<u64> {
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
