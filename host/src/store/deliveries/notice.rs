//! Writing notices and settling a delivery's links: the pieces every path
//! that ends a delivery without an acceptance shares, inside its own
//! transaction.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::store::dialect::{query, trunc, On};
use crate::store::types::Delivery;
use crate::store::{Result, Store};

/// Settles the unsettled links of a delivery with `outcome` and `reason`.
pub(crate) async fn settle_links<'c>(
    on: impl Into<On<'c>>,
    delivery: Uuid,
    outcome: &str,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    query(
        "UPDATE nomos_plan_executions SET continued_at = $2, outcome = $3, reason = $4 \
         WHERE delivery_id = $1 AND continued_at IS NULL",
    )
    .bind(delivery)
    .bind(now)
    .bind(outcome)
    .bind(reason)
    .execute(on)
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
/// Returns the new row's id, or `None` when a notice with that key exists.
pub(crate) async fn insert_notice<'c>(
    on: impl Into<On<'c>>,
    about: NoticeAbout<'_>,
    key: &str,
    message: &str,
    now: DateTime<Utc>,
) -> Result<Option<Uuid>> {
    let id = Uuid::new_v4();
    let written = query(
        "INSERT INTO nomos_deliveries (id, session_id, kind, idempotency_key, execution_ids, \
           note, policy_revision, state, attempts, next_attempt_at, created_at, updated_at) \
         VALUES ($1, $2, 'notice', $3, $4, $5, $6, 'pending', 0, $7, $7, $7) \
         ON CONFLICT (idempotency_key) DO NOTHING",
    )
    .bind(id)
    .bind(about.session_id)
    .bind(key)
    .bind(about.execution_ids)
    .bind(message)
    .bind(about.policy_revision)
    .bind(now)
    .execute(on)
    .await?;
    Ok((written == 1).then_some(id))
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
        let written = insert_notice(self, about, key, message, trunc(now)).await?;
        Ok(written.is_some())
    }
}
