//! Ending a continuation that will not be sent (its window closed while it
//! waited), and the operator's retry of one that ended `failed` or drop of
//! one that is still pending.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::store::decode;
use crate::store::deliveries::claim::settled_notice_key;
use crate::store::deliveries::delivery_cols;
use crate::store::deliveries::notice::{insert_notice, settle_links};
use crate::store::deliveries::plan::{in_flight, is_unique_violation};
use crate::store::dialect::{query, trunc, Query};
use crate::store::types::{Delivery, DeliveryKind, DeliveryState, Window};
use crate::store::{Claim, Result, Store};

/// A pending continuation not held by a live lease; `$1` is now.
const UNHELD: &str = "d.state = 'pending' AND d.kind = 'continuation' \
     AND (d.lease_owner IS NULL OR d.lease_expires_at <= $1)";
/// Its session's window is open at `$1`.
const WINDOW_OPEN: &str = "EXISTS (SELECT 1 FROM nomos_assent_windows w \
     WHERE w.session_id = d.session_id AND w.closed_at IS NULL \
       AND w.expires_at > $1)";

/// Ends delivery `$2` as `dropped` at `$1` with reason `$3` (unleased), if
/// `guard` holds of it (alias `d`); returns its row.
fn drop_where(guard: &str) -> String {
    format!(
        "UPDATE nomos_deliveries AS d SET state = 'dropped', last_error = $3, \
           lease_owner = NULL, lease_expires_at = NULL, updated_at = $1 \
         WHERE d.id = $2 AND {guard} RETURNING {}",
        delivery_cols!()
    )
}

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
    /// Its note was scrubbed past the delivery retention (see
    /// `Store::scrub_deliveries`): nothing is left to send.
    Purged,
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
            Self::Purged => format!(
                "delivery {id}'s note was purged past the delivery retention: nothing is left to send"
            ),
        }
    }
}

/// What [`Store::drop_delivery`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OperatorDrop {
    /// The delivery ended `dropped`: a continuation with its links settled
    /// `dropped` and one notice saying so; a notice with nothing more.
    Dropped(Box<Delivery>),
    /// No delivery has this id.
    NotFound,
    /// Only a pending delivery can be dropped.
    NotPending(DeliveryState),
    /// A call is in flight under a live lease: its outcome decides; drop
    /// again once it is recorded if it is still pending.
    InFlight,
}

impl OperatorDrop {
    /// The outcome in words, for the API and the command line alike.
    pub fn explain(&self, id: Uuid) -> String {
        match self {
            Self::Dropped(_) => format!("delivery {id} was dropped"),
            Self::NotFound => format!("no delivery {id}"),
            Self::NotPending(state) => format!(
                "delivery {id} is {}: only a pending delivery can be dropped",
                state.as_str()
            ),
            Self::InFlight => format!(
                "delivery {id} has a call in flight: its outcome is recorded first; drop it again if it is still pending then"
            ),
        }
    }
}

/// Why a link of a continuation the operator dropped was settled so.
pub const OPERATOR_DROP_REASON: &str = "dropped by the operator";

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
        let sql = format!(
            "SELECT {} FROM nomos_deliveries d WHERE {UNHELD} AND NOT {WINDOW_OPEN} \
             ORDER BY d.created_at LIMIT $2",
            delivery_cols!()
        );
        let rows = query(sql)
            .bind(trunc(now))
            .bind(limit)
            .fetch_all(self)
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let delivery = decode::delivery(row)?;
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
        let guard = format!("{UNHELD} AND NOT {WINDOW_OPEN}");
        let update = query(drop_where(&guard)).bind(now).bind(id).bind(reason);
        self.end_dropped(update, id, "w", reason, message, now)
            .await
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
        let update = query(drop_where("d.claim_token = $4 AND d.state = 'pending'"))
            .bind(now)
            .bind(claim.id)
            .bind(reason)
            .bind(claim.token);
        self.end_dropped(update, claim.id, "p", reason, message, now)
            .await
    }

    /// Runs `update` (which ends delivery `id` as `dropped` and returns its
    /// row, or nothing when its guard no longer holds); if it matched, settles
    /// the links `dropped` and writes the notice keyed by `prefix`, all in
    /// one transaction. Returns whether it matched.
    async fn end_dropped(
        &self,
        update: Query<'_>,
        id: Uuid,
        prefix: &str,
        reason: &str,
        message: &str,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        let mut tx = self.begin().await?;
        let Some(row) = update.fetch_optional(&mut tx).await? else {
            return Ok(false);
        };
        let delivery = decode::delivery(&row)?;
        settle_links(&mut tx, id, "dropped", reason, now).await?;
        let key = settled_notice_key(prefix, id);
        insert_notice(&mut tx, (&delivery).into(), &key, message, now).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// The operator's drop of a pending delivery that no live lease holds
    /// (waiting for its first call, or between retries): it ends
    /// `dropped` and is never sent. A continuation's links are settled
    /// `dropped` and one notice is written, in one transaction; a notice
    /// is only ended. A delivery whose call is in flight is refused rather
    /// than raced: the agent may be accepting it at this moment.
    pub async fn drop_delivery(&self, id: Uuid, now: DateTime<Utc>) -> Result<OperatorDrop> {
        let now = trunc(now);
        let Some(current) = self.delivery(id).await? else {
            return Ok(OperatorDrop::NotFound);
        };
        if current.state != DeliveryState::Pending {
            return Ok(OperatorDrop::NotPending(current.state));
        }
        let guard = "d.state = 'pending' AND (d.lease_owner IS NULL OR d.lease_expires_at <= $1)";
        let update = query(drop_where(guard))
            .bind(now)
            .bind(id)
            .bind(OPERATOR_DROP_REASON);
        let dropped = if current.kind == DeliveryKind::Continuation {
            let message = format!(
                "The operator dropped the continuation of {} execution(s) of session {}; \
                 the agent was not re-invoked with their results.",
                current.execution_ids.len(),
                current.session_id
            );
            self.end_dropped(update, id, "o", OPERATOR_DROP_REASON, &message, now)
                .await?
        } else {
            update.fetch_optional(self).await?.is_some()
        };
        Ok(match self.delivery(id).await? {
            Some(d) if dropped => OperatorDrop::Dropped(Box::new(d)),
            Some(d) if d.state == DeliveryState::Pending => OperatorDrop::InFlight,
            Some(d) => OperatorDrop::NotPending(d.state),
            None => OperatorDrop::NotFound,
        })
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
        if current.note.is_empty() {
            return Ok(RetryOutcome::Purged);
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
        if continuation && in_flight(self, current.session_id).await?.is_some() {
            return Ok(RetryOutcome::SessionBusy);
        }
        let mut tx = self.begin().await?;
        let sql = format!(
            "UPDATE nomos_deliveries \
             SET state = 'pending', attempts = 0, shortages = 0, claims = 0, \
                 first_failed_at = NULL, lease_owner = NULL, lease_expires_at = NULL, \
                 claim_token = NULL, claimed_at = NULL, next_attempt_at = $2, updated_at = $2 \
             WHERE id = $1 AND state IN ('failed', 'dropped') RETURNING {}",
            delivery_cols!()
        );
        let row = match query(sql).bind(id).bind(now).fetch_optional(&mut tx).await {
            Err(crate::store::StoreError::Database(e)) if is_unique_violation(&e, "in_flight") => {
                return Ok(RetryOutcome::SessionBusy)
            }
            other => other?,
        };
        if row.is_some() && continuation {
            query(
                "UPDATE nomos_plan_executions \
                 SET continued_at = NULL, outcome = NULL, reason = NULL \
                 WHERE delivery_id = $1 AND outcome <> 'continued'",
            )
            .bind(id)
            .execute(&mut tx)
            .await?;
        }
        tx.commit().await?;
        Ok(match row.as_ref().map(decode::delivery).transpose()? {
            Some(d) => RetryOutcome::Retried(Box::new(d)),
            // Changed under us (another retry won): report what it is now.
            None => match self.delivery(id).await? {
                Some(d) => RetryOutcome::NotEnded(d.state),
                None => RetryOutcome::NotFound,
            },
        })
    }
}
