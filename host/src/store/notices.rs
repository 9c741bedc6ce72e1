//! Writing notices and settling a delivery's links: the pieces every path
//! that ends a delivery without an acceptance shares, inside its own
//! transaction.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::types::Delivery;
use super::{micros, trunc, Db, Result, Store};

/// Settles the unsettled links of a delivery with `outcome` and `reason`.
pub(crate) async fn settle_links_pg(
    tx: &mut sqlx::PgConnection,
    delivery: Uuid,
    outcome: &str,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    sqlx::query(
        "UPDATE nomos_plan_executions SET continued_at = $2, outcome = $3, reason = $4 \
         WHERE delivery_id = $1 AND continued_at IS NULL",
    )
    .bind(delivery)
    .bind(now)
    .bind(outcome)
    .bind(reason)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// [`settle_links_pg`] for SQLite.
pub(crate) async fn settle_links_lite(
    tx: &mut sqlx::SqliteConnection,
    delivery: Uuid,
    outcome: &str,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    sqlx::query(
        "UPDATE nomos_plan_executions SET continued_at = ?2, outcome = ?3, reason = ?4 \
         WHERE delivery_id = ?1 AND continued_at IS NULL",
    )
    .bind(delivery.to_string())
    .bind(micros(now))
    .bind(outcome)
    .bind(reason)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Whom a notice is about: a session, some of its executions, and the
/// policy revision that decided.
#[derive(Clone, Copy, Debug)]
pub struct NoticeAbout<'a> {
    /// The session whose operator is told.
    pub session_id: Uuid,
    /// The executions concerned.
    pub execution_ids: &'a [Uuid],
    /// The policy revision (hash) in charge.
    pub policy_revision: &'a str,
}

impl<'a> From<&'a Delivery> for NoticeAbout<'a> {
    fn from(d: &'a Delivery) -> Self {
        Self {
            session_id: d.session_id,
            execution_ids: &d.execution_ids,
            policy_revision: &d.policy_revision,
        }
    }
}

/// Writes a pending notice about `about`'s executions under `key`, once.
pub(crate) async fn insert_notice_pg(
    tx: &mut sqlx::PgConnection,
    about: NoticeAbout<'_>,
    key: &str,
    message: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    let written = sqlx::query(
        "INSERT INTO nomos_deliveries (id, session_id, kind, idempotency_key, execution_ids, \
           note, policy_revision, state, attempts, next_attempt_at, created_at, updated_at) \
         VALUES ($1, $2, 'notice', $3, $4, $5, $6, 'pending', 0, $7, $7, $7) \
         ON CONFLICT (idempotency_key) DO NOTHING",
    )
    .bind(Uuid::new_v4())
    .bind(about.session_id)
    .bind(key)
    .bind(about.execution_ids)
    .bind(message)
    .bind(about.policy_revision)
    .bind(now)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    Ok(written == 1)
}

/// [`insert_notice_pg`] for SQLite.
pub(crate) async fn insert_notice_lite(
    tx: &mut sqlx::SqliteConnection,
    about: NoticeAbout<'_>,
    key: &str,
    message: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    let written = sqlx::query(
        "INSERT INTO nomos_deliveries (id, session_id, kind, idempotency_key, execution_ids, \
           note, policy_revision, state, attempts, next_attempt_at, created_at, updated_at) \
         VALUES (?1, ?2, 'notice', ?3, ?4, ?5, ?6, 'pending', 0, ?7, ?7, ?7) \
         ON CONFLICT (idempotency_key) DO NOTHING",
    )
    .bind(Uuid::new_v4().to_string())
    .bind(about.session_id.to_string())
    .bind(key)
    .bind(super::json_ids(about.execution_ids))
    .bind(message)
    .bind(about.policy_revision)
    .bind(micros(now))
    .execute(&mut *tx)
    .await?
    .rows_affected();
    Ok(written == 1)
}

impl Store {
    /// Writes one pending notice under `key` (nothing if a notice with that
    /// key exists); for a notice that settles nothing, such as a status the
    /// policy could not classify. Returns whether it was written.
    pub async fn record_notice(
        &self,
        about: NoticeAbout<'_>,
        key: &str,
        message: &str,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        let now = trunc(now);
        match &self.db {
            Db::Pg(pool) => {
                let mut conn = pool.acquire().await?;
                insert_notice_pg(&mut conn, about, key, message, now).await
            }
            Db::Lite(pool) => {
                let mut conn = pool.acquire().await?;
                insert_notice_lite(&mut conn, about, key, message, now).await
            }
        }
    }
}
