//! Ending a continuation that will not be sent (its window closed while it
//! waited), and the operator's retry of one that ended `failed`.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::claims::settled_notice_key;
use super::decode;
use super::deliveries::delivery_cols;
use super::notices::{insert_notice_lite, insert_notice_pg, settle_links_lite, settle_links_pg};
use super::types::{Claim, Delivery, DeliveryKind, DeliveryState, Window};
use super::{micros, trunc, Db, Result, Store, SQLITE_BEGIN};

/// A pending continuation not held by a live lease, on PostgreSQL; `$1` is now.
const UNHELD_PG: &str = "d.state = 'pending' AND d.kind = 'continuation' \
     AND (d.lease_owner IS NULL OR d.lease_expires_at <= $1)";
const WINDOW_OPEN_PG: &str = "EXISTS (SELECT 1 FROM nomos_assent_windows w \
     WHERE w.session_id = d.session_id AND w.closed_at IS NULL \
       AND w.opened_at <= $1 AND w.expires_at > $1)";
const UNHELD_LITE: &str = "d.state = 'pending' AND d.kind = 'continuation' \
     AND (d.lease_owner IS NULL OR d.lease_expires_at <= ?1)";
const WINDOW_OPEN_LITE: &str = "EXISTS (SELECT 1 FROM nomos_assent_windows w \
     WHERE w.session_id = d.session_id AND w.closed_at IS NULL \
       AND w.opened_at <= ?1 AND w.expires_at > ?1)";

/// What [`Store::retry_delivery`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RetryOutcome {
    /// The delivery is pending again, due now, with a fresh retry budget and
    /// its links unsettled; it keeps its idempotency key.
    Retried(Box<Delivery>),
    /// No delivery has this id.
    NotFound,
    /// Only a `failed` or `dropped` delivery can be retried.
    NotEnded(DeliveryState),
    /// A continuation is sent only inside an open window: approve first.
    WindowClosed,
    /// Another continuation of the session is pending; retry after it.
    SessionBusy,
}

impl RetryOutcome {
    /// The outcome in words, for the API and the command line alike.
    pub fn explain(&self, id: Uuid) -> String {
        match self {
            Self::Retried(_) => format!("delivery {id} is pending again"),
            Self::NotFound => format!("no delivery {id}"),
            Self::NotEnded(state) => format!(
                "delivery {id} is {}: only a failed or dropped delivery can be retried",
                state.as_str()
            ),
            Self::WindowClosed => format!(
                "delivery {id} is a continuation and its session's assent window is not open: approve the plan first"
            ),
            Self::SessionBusy => format!(
                "delivery {id}'s session has another continuation pending: retry once it is settled"
            ),
        }
    }
}

impl Store {
    /// Pending continuations whose session has no open window at `now` and
    /// that no live lease holds (waiting for their first call or between
    /// retries), at most `limit`, each with its window row if any. The
    /// worker drops them with [`Store::drop_continuation`].
    pub async fn continuations_outside_window(
        &self,
        now: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<(Delivery, Option<Window>)>> {
        let now = trunc(now);
        let found: Vec<Delivery> = match &self.db {
            Db::Pg(pool) => {
                let sql = format!(
                    "SELECT {} FROM nomos_deliveries d WHERE {UNHELD_PG} AND NOT {WINDOW_OPEN_PG} \
                     ORDER BY d.created_at LIMIT $2",
                    delivery_cols!()
                );
                sqlx::query(&sql)
                    .bind(now)
                    .bind(limit)
                    .fetch_all(pool)
                    .await?
                    .iter()
                    .map(decode::delivery)
                    .collect::<Result<_>>()?
            }
            Db::Lite(pool) => {
                let sql = format!(
                    "SELECT {} FROM nomos_deliveries d WHERE {UNHELD_LITE} AND NOT {WINDOW_OPEN_LITE} \
                     ORDER BY d.created_at LIMIT ?2",
                    delivery_cols!()
                );
                sqlx::query(&sql)
                    .bind(micros(now))
                    .bind(limit)
                    .fetch_all(pool)
                    .await?
                    .iter()
                    .map(decode::delivery)
                    .collect::<Result<_>>()?
            }
        };
        let mut out = Vec::with_capacity(found.len());
        for delivery in found {
            let window = self.window(delivery.session_id).await?;
            out.push((delivery, window));
        }
        Ok(out)
    }

    /// Ends a pending continuation as `dropped`, settles its links `dropped`
    /// with `reason`, and writes one notice with `message`, in one
    /// transaction; only if it is still pending, unheld, and its window is
    /// still not open at `now` (a claim or an approval that came first
    /// wins). Returns whether it was dropped.
    pub async fn drop_continuation(
        &self,
        id: Uuid,
        reason: &str,
        message: &str,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        let now = trunc(now);
        let key = settled_notice_key("w", id);
        match &self.db {
            Db::Pg(pool) => {
                let mut tx = pool.begin().await?;
                let sql = format!(
                    "UPDATE nomos_deliveries d SET state = 'dropped', last_error = $3, \
                       lease_owner = NULL, lease_expires_at = NULL, updated_at = $1 \
                     WHERE d.id = $2 AND {UNHELD_PG} AND NOT {WINDOW_OPEN_PG} \
                     RETURNING {}",
                    delivery_cols!()
                );
                let row = sqlx::query(&sql)
                    .bind(now)
                    .bind(id)
                    .bind(reason)
                    .fetch_optional(&mut *tx)
                    .await?;
                let Some(row) = row else { return Ok(false) };
                let delivery = decode::delivery(&row)?;
                settle_links_pg(&mut tx, id, "dropped", reason, now).await?;
                insert_notice_pg(&mut tx, (&delivery).into(), &key, message, now).await?;
                tx.commit().await?;
            }
            Db::Lite(pool) => {
                let mut tx = pool.begin_with(SQLITE_BEGIN).await?;
                let sql = format!(
                    "UPDATE nomos_deliveries AS d SET state = 'dropped', last_error = ?3, \
                       lease_owner = NULL, lease_expires_at = NULL, updated_at = ?1 \
                     WHERE d.id = ?2 AND {UNHELD_LITE} AND NOT {WINDOW_OPEN_LITE} \
                     RETURNING {}",
                    delivery_cols!()
                );
                let row = sqlx::query(&sql)
                    .bind(micros(now))
                    .bind(id.to_string())
                    .bind(reason)
                    .fetch_optional(&mut *tx)
                    .await?;
                let Some(row) = row else { return Ok(false) };
                let delivery = decode::delivery(&row)?;
                settle_links_lite(&mut tx, id, "dropped", reason, now).await?;
                insert_notice_lite(&mut tx, (&delivery).into(), &key, message, now).await?;
                tx.commit().await?;
            }
        }
        Ok(true)
    }

    /// Ends a claimed continuation as `dropped` (the policy, asked again
    /// before a retry, gave up on it): links settled `dropped` with
    /// `reason`, one notice with `message`, in one transaction; only while
    /// `claim` still holds it.
    pub async fn drop_claimed(
        &self,
        claim: Claim,
        reason: &str,
        message: &str,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        let now = trunc(now);
        let key = settled_notice_key("p", claim.id);
        match &self.db {
            Db::Pg(pool) => {
                let mut tx = pool.begin().await?;
                let sql = format!(
                    "UPDATE nomos_deliveries SET state = 'dropped', last_error = $3, \
                       lease_owner = NULL, lease_expires_at = NULL, updated_at = $4 \
                     WHERE id = $1 AND claim_token = $2 AND state = 'pending' RETURNING {}",
                    delivery_cols!()
                );
                let row = sqlx::query(&sql)
                    .bind(claim.id)
                    .bind(claim.token)
                    .bind(reason)
                    .bind(now)
                    .fetch_optional(&mut *tx)
                    .await?;
                let Some(row) = row else { return Ok(false) };
                let delivery = decode::delivery(&row)?;
                settle_links_pg(&mut tx, claim.id, "dropped", reason, now).await?;
                insert_notice_pg(&mut tx, (&delivery).into(), &key, message, now).await?;
                tx.commit().await?;
            }
            Db::Lite(pool) => {
                let mut tx = pool.begin_with(SQLITE_BEGIN).await?;
                let sql = format!(
                    "UPDATE nomos_deliveries SET state = 'dropped', last_error = ?3, \
                       lease_owner = NULL, lease_expires_at = NULL, updated_at = ?4 \
                     WHERE id = ?1 AND claim_token = ?2 AND state = 'pending' RETURNING {}",
                    delivery_cols!()
                );
                let row = sqlx::query(&sql)
                    .bind(claim.id.to_string())
                    .bind(claim.token.to_string())
                    .bind(reason)
                    .bind(micros(now))
                    .fetch_optional(&mut *tx)
                    .await?;
                let Some(row) = row else { return Ok(false) };
                let delivery = decode::delivery(&row)?;
                settle_links_lite(&mut tx, claim.id, "dropped", reason, now).await?;
                insert_notice_lite(&mut tx, (&delivery).into(), &key, message, now).await?;
                tx.commit().await?;
            }
        }
        Ok(true)
    }

    /// The operator's retry of a delivery that ended `failed` (or a
    /// continuation that was `dropped`): pending again, due at `now`, with a
    /// fresh retry budget and claim count, the same idempotency key (so the
    /// runtime still recognises it), and its links unsettled so that the
    /// agent's acceptance settles them `continued`. A continuation needs an
    /// open window and no other pending continuation of its session.
    pub async fn retry_delivery(&self, id: Uuid, now: DateTime<Utc>) -> Result<RetryOutcome> {
        let now = trunc(now);
        let Some(current) = self.delivery(id).await? else {
            return Ok(RetryOutcome::NotFound);
        };
        if !matches!(
            current.state,
            DeliveryState::Failed | DeliveryState::Dropped
        ) {
            return Ok(RetryOutcome::NotEnded(current.state));
        }
        let continuation = current.kind == DeliveryKind::Continuation;
        if continuation
            && !self
                .window(current.session_id)
                .await?
                .is_some_and(|w| w.is_open_at(now))
        {
            return Ok(RetryOutcome::WindowClosed);
        }
        if continuation && self.in_flight(current.session_id).await?.is_some() {
            return Ok(RetryOutcome::SessionBusy);
        }
        let reset = "SET state = 'pending', attempts = 0, shortages = 0, claims = 0, \
             first_failed_at = NULL, lease_owner = NULL, lease_expires_at = NULL, \
             claim_token = NULL, claimed_at = NULL";
        let unsettle = "UPDATE nomos_plan_executions \
             SET continued_at = NULL, outcome = NULL, reason = NULL";
        let row = match &self.db {
            Db::Pg(pool) => {
                let mut tx = pool.begin().await?;
                let sql = format!(
                    "UPDATE nomos_deliveries {reset}, next_attempt_at = $2, updated_at = $2 \
                     WHERE id = $1 AND state IN ('failed', 'dropped') RETURNING {}",
                    delivery_cols!()
                );
                let row = sqlx::query(&sql)
                    .bind(id)
                    .bind(now)
                    .fetch_optional(&mut *tx)
                    .await;
                let row = match row {
                    Err(e) if super::plan::is_unique_violation(&e, "in_flight") => {
                        return Ok(RetryOutcome::SessionBusy)
                    }
                    other => other?,
                };
                if row.is_some() && continuation {
                    sqlx::query(&format!(
                        "{unsettle} WHERE delivery_id = $1 AND outcome <> 'continued'"
                    ))
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                }
                tx.commit().await?;
                row.map(|r| decode::delivery(&r)).transpose()?
            }
            Db::Lite(pool) => {
                let mut tx = pool.begin_with(SQLITE_BEGIN).await?;
                let sql = format!(
                    "UPDATE nomos_deliveries {reset}, next_attempt_at = ?2, updated_at = ?2 \
                     WHERE id = ?1 AND state IN ('failed', 'dropped') RETURNING {}",
                    delivery_cols!()
                );
                let row = sqlx::query(&sql)
                    .bind(id.to_string())
                    .bind(micros(now))
                    .fetch_optional(&mut *tx)
                    .await;
                let row = match row {
                    Err(e) if super::plan::is_unique_violation(&e, "in_flight") => {
                        return Ok(RetryOutcome::SessionBusy)
                    }
                    other => other?,
                };
                if row.is_some() && continuation {
                    sqlx::query(&format!(
                        "{unsettle} WHERE delivery_id = ?1 AND outcome <> 'continued'"
                    ))
                    .bind(id.to_string())
                    .execute(&mut *tx)
                    .await?;
                }
                tx.commit().await?;
                row.map(|r| decode::delivery(&r)).transpose()?
            }
        };
        Ok(match row {
            Some(d) => RetryOutcome::Retried(Box::new(d)),
            // Changed under us (another retry won): report what it is now.
            None => match self.delivery(id).await? {
                Some(d) => RetryOutcome::NotEnded(d.state),
                None => RetryOutcome::NotFound,
            },
        })
    }
}
