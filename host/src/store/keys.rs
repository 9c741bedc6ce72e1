//! Idempotency keys of the API's writes (`nomos_idempotency_keys`): the
//! first answer of a request sent with a key, kept so that a retry of it
//! gets that answer instead of a second effect.
//!
//! A request first reserves its key (a row with no response), acts, then
//! completes the row with its answer, or releases it when it failed so its
//! retry runs again. Reserving is one `INSERT … ON CONFLICT DO NOTHING`, so
//! of two concurrent requests with one key exactly one acts.

use chrono::{DateTime, Utc};

use super::decode::RowExt;
use super::dialect::{query, trunc};
use super::{Result, Store};

/// What reserving a key found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyClaim {
    /// The key is this request's: act, then complete or release it.
    Reserved,
    /// A request with this key was answered: its hash and its answer.
    Answered {
        /// The hash of the request that used the key.
        request_hash: String,
        /// Its answer's body.
        response: String,
    },
    /// A request with this key is being handled now.
    InFlight {
        /// The hash of that request.
        request_hash: String,
    },
}

impl Store {
    /// Reserves `key` in `scope` for a request hashing to `request_hash`. A
    /// reservation of the same request made before `stale_before` (its
    /// process died, or it hangs) is taken over.
    pub async fn reserve_key(
        &self,
        scope: &str,
        key: &str,
        request_hash: &str,
        now: DateTime<Utc>,
        stale_before: DateTime<Utc>,
    ) -> Result<KeyClaim> {
        let inserted = query(
            "INSERT INTO nomos_idempotency_keys (scope, idempotency_key, request_hash, created_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (scope, idempotency_key) DO NOTHING",
        )
        .bind(scope)
        .bind(key)
        .bind(request_hash)
        .bind(trunc(now))
        .execute(self)
        .await?;
        if inserted == 1 {
            return Ok(KeyClaim::Reserved);
        }
        let taken_over = query(
            "UPDATE nomos_idempotency_keys SET created_at = $4 \
             WHERE scope = $1 AND idempotency_key = $2 AND request_hash = $3 \
               AND response IS NULL AND created_at < $5",
        )
        .bind(scope)
        .bind(key)
        .bind(request_hash)
        .bind(trunc(now))
        .bind(trunc(stale_before))
        .execute(self)
        .await?;
        if taken_over == 1 {
            return Ok(KeyClaim::Reserved);
        }
        let row = query(
            "SELECT request_hash, response FROM nomos_idempotency_keys \
             WHERE scope = $1 AND idempotency_key = $2",
        )
        .bind(scope)
        .bind(key)
        .fetch_optional(self)
        .await?;
        let Some(row) = row else {
            // Released between the insert and this read: the key is free.
            return Box::pin(self.reserve_key(scope, key, request_hash, now, stale_before)).await;
        };
        let request_hash = row.text("request_hash")?;
        Ok(match row.opt_text("response")? {
            Some(response) => KeyClaim::Answered {
                request_hash,
                response,
            },
            None => KeyClaim::InFlight { request_hash },
        })
    }

    /// Records the answer of the request that reserved `key`.
    pub async fn complete_key(&self, scope: &str, key: &str, response: &str) -> Result<()> {
        query(
            "UPDATE nomos_idempotency_keys SET response = $3 \
             WHERE scope = $1 AND idempotency_key = $2 AND response IS NULL",
        )
        .bind(scope)
        .bind(key)
        .bind(response)
        .execute(self)
        .await?;
        Ok(())
    }

    /// Frees `key` after its request failed, so a retry acts again.
    pub async fn release_key(&self, scope: &str, key: &str) -> Result<()> {
        query(
            "DELETE FROM nomos_idempotency_keys \
             WHERE scope = $1 AND idempotency_key = $2 AND response IS NULL",
        )
        .bind(scope)
        .bind(key)
        .execute(self)
        .await?;
        Ok(())
    }

    /// Deletes the keys recorded before `before`; answers how many.
    pub async fn purge_keys(&self, before: DateTime<Utc>) -> Result<u64> {
        query("DELETE FROM nomos_idempotency_keys WHERE created_at < $1")
            .bind(trunc(before))
            .execute(self)
            .await
    }
}
