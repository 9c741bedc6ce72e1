//! Recording what a call did: accepted (delivered, the links continued)
//! or failed (a retry later, or the end with one notice).
//!
//! Every change is a compare-and-set on the claim's token, as for the
//! claim itself (see `claim`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::claim::{claim_set, in_id_order, settled_notice_key, split};
use crate::store::decode::{self, RowExt};
use crate::store::deliveries::delivery_cols;
use crate::store::deliveries::notice::{insert_notice, settle_links};
use crate::store::dialect::{query, trunc, Row};
use crate::store::types::{AttemptOutcome, Claim, Delivery, DeliveryKind, DeliveryState};
use crate::store::{Backend, Result, Store};

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

impl Store {
    /// Records calls the agent accepted: each delivery becomes `delivered`
    /// and a continuation's links are settled `continued`, atomically. Only
    /// rows still held under the given claim change; the answer lists
    /// those. An expired but not taken-over lease still counts as held: the
    /// call did succeed.
    ///
    /// On PostgreSQL one statement (the links' update a data-modifying CTE
    /// over the deliveries'), so a group of calls costs one round trip and
    /// one commit; the locks are still taken deliveries first, then links
    /// (the lock order in `store::deliveries`). SQLite, with no such CTEs,
    /// runs the two in one transaction.
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
        let backend = self.backend();
        let deliver = format!(
            "UPDATE nomos_deliveries AS d \
             SET state = 'delivered', delivered_at = $3, updated_at = $3, \
                 lease_owner = NULL, lease_expires_at = NULL \
             FROM {} \
             WHERE d.id = c.cid AND d.claim_token = c.ctoken AND d.state = 'pending'{} \
             RETURNING id, kind{}",
            claim_set(backend),
            in_id_order(backend),
            backend.pick(", execution_ids", ""),
        );
        let continue_links = |links: &str, now: &str| {
            format!(
                "UPDATE nomos_plan_executions SET continued_at = {now}, outcome = 'continued' \
                 WHERE {links} AND continued_at IS NULL"
            )
        };
        let done = match backend {
            // The links are found by their own keys, the executions each
            // continuation names, as arrays computed once (`ARRAY(…)` is
            // an init plan): the planner, knowing nothing of how many rows
            // `done` yields, cannot then choose to read the link table
            // whole to join it (issue 64). `delivery_id` still says which
            // continuation each link was folded into.
            Backend::Postgres => {
                let sql = format!(
                    "WITH done AS ({deliver}), continued AS ({}) SELECT id, kind FROM done",
                    continue_links(
                        "execution_id = ANY(ARRAY(SELECT unnest(execution_ids) FROM done \
                           WHERE kind = 'continuation')) \
                         AND delivery_id = ANY(ARRAY(SELECT id FROM done \
                           WHERE kind = 'continuation'))",
                        "$3"
                    )
                );
                let q = query(sql).bind(&ids).bind(&tokens).bind(now);
                q.fetch_all(self).await?
            }
            Backend::Sqlite => {
                let mut tx = self.begin().await?;
                let q = query(deliver).bind(&ids).bind(&tokens).bind(now);
                let done = q.fetch_all(&mut tx).await?;
                let continued = kind_ids(&done, DeliveryKind::Continuation)?;
                if !continued.is_empty() {
                    let sql =
                        continue_links(&format!("delivery_id {}", backend.in_ids("$1")), "$2");
                    let q = query(sql).bind(&continued).bind(now);
                    q.execute(&mut tx).await?;
                }
                tx.commit().await?;
                done
            }
        };
        done.iter().map(|row| row.uuid("id")).collect()
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
}

/// The ids of the `id, kind` rows of one kind.
fn kind_ids(rows: &[Row], kind: DeliveryKind) -> Result<Vec<Uuid>> {
    let mut ids = Vec::new();
    for row in rows {
        if row.parsed::<DeliveryKind>("kind")? == kind {
            ids.push(row.uuid("id")?);
        }
    }
    Ok(ids)
}

fn gave_up_continuation(d: &Delivery) -> bool {
    d.kind == DeliveryKind::Continuation && d.state == DeliveryState::Failed
}
