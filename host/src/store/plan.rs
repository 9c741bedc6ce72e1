//! Planning continuations: the transaction that enforces the hard
//! invariants (open window, cap, one in flight per session, a link is folded
//! into at most one continuation), for many sessions at a time, so one pass
//! of the worker costs one transaction (and one WAL flush) instead of one
//! per session.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::decode::{self, uuids, RowExt, WINDOW_COLS};
use super::deliveries::{delivery_by_key, delivery_cols};
use super::dialect::{query, trunc, On, Tx};
use super::types::{ContinuationPlan, DeliveryKind, PlanOutcome, Window};
use super::{dedup, Result, Store, StoreError};

impl Store {
    /// Plans one continuation per entry of `plans`, in ONE transaction,
    /// whatever the policy said. Each plan runs inside its own savepoint:
    ///
    /// 1. A delivery with the same idempotency key already exists →
    ///    [`PlanOutcome::AlreadyPlanned`] (a retried plan is not a second one).
    /// 2. Compare-and-set on the window: open at `now` and
    ///    `continuations < hard_cap`, incremented by one in the same statement
    ///    (this also locks the window row, serialising planners of a
    ///    session) → else [`PlanOutcome::NoWindow`], [`PlanOutcome::WindowClosed`]
    ///    or [`PlanOutcome::CapReached`].
    /// 3. No other continuation of the session pending → else
    ///    [`PlanOutcome::SessionBusy`] (the partial unique index
    ///    `nomos_deliveries_one_in_flight` is the backstop).
    /// 4. Every link belongs to the session and is neither planned nor
    ///    settled (locked `FOR UPDATE SKIP LOCKED` on PostgreSQL, so a link
    ///    another planner holds counts as taken) → else
    ///    [`PlanOutcome::LinkTaken`].
    /// 5. Insert the pending continuation and point the links at it
    ///    (`delivery_id`), checking that every link was updated.
    ///
    /// A refusal rolls back to its savepoint: no count, no row, no link
    /// changes, and the other plans stay intact. A racing planner's unique
    /// key (idempotency key, or one in flight per session) is answered with
    /// the row that won. Plans are applied in session order, so two replicas
    /// planning overlapping sessions lock window rows in the same order and
    /// cannot deadlock. Outcomes are returned in the caller's order. An empty
    /// `execution_ids` is [`StoreError::InvalidValue`]; a database error
    /// aborts the whole batch: nothing is written and the worker retries on
    /// its next pass.
    pub async fn plan_continuations(
        &self,
        plans: &[ContinuationPlan<'_>],
        now: DateTime<Utc>,
    ) -> Result<Vec<PlanOutcome>> {
        let now = trunc(now);
        let mut order: Vec<usize> = (0..plans.len()).collect();
        order.sort_by_key(|&i| plans[i].session_id);
        let mut outcomes: Vec<Option<PlanOutcome>> = vec![None; plans.len()];
        let mut raced: Vec<usize> = Vec::new();
        let mut tx = self.begin().await?;
        for &i in &order {
            let ids = checked_ids(&plans[i])?;
            let mut savepoint = tx.savepoint().await?;
            match plan_one(&mut savepoint, &plans[i], &ids, now).await {
                Ok(o @ PlanOutcome::Planned(_)) => {
                    savepoint.commit().await?;
                    outcomes[i] = Some(o);
                }
                Ok(other) => {
                    savepoint.rollback().await?;
                    outcomes[i] = Some(other);
                }
                Err(StoreError::Database(e)) if is_race(&e) => {
                    savepoint.rollback().await?;
                    raced.push(i);
                }
                Err(e) => return Err(e),
            }
        }
        tx.commit().await?;
        // A unique violation means another planner committed first: report
        // its row.
        for i in raced {
            let plan = &plans[i];
            outcomes[i] = Some(match delivery_by_key(self, plan.idempotency_key).await? {
                Some(d) => PlanOutcome::AlreadyPlanned(d),
                None => match in_flight(self, plan.session_id).await? {
                    Some(in_flight) => PlanOutcome::SessionBusy { in_flight },
                    None => PlanOutcome::LinkTaken {
                        unavailable: plan.execution_ids.to_vec(),
                    },
                },
            });
        }
        Ok(outcomes
            .into_iter()
            .map(|o| o.unwrap_or(PlanOutcome::WindowClosed))
            .collect())
    }
}

/// The session's pending continuation, if any.
pub(super) async fn in_flight<'c>(on: impl Into<On<'c>>, session_id: Uuid) -> Result<Option<Uuid>> {
    let row = query(
        "SELECT id FROM nomos_deliveries \
         WHERE session_id = $1 AND state = 'pending' AND kind = 'continuation'",
    )
    .bind(session_id)
    .fetch_optional(on)
    .await?;
    row.map(|r| r.uuid("id")).transpose()
}

/// True for a unique violation whose constraint/index name (PostgreSQL) or
/// message (SQLite names the columns) mentions `hint`.
pub(super) fn is_unique_violation(e: &sqlx::Error, hint: &str) -> bool {
    let Some(db) = e.as_database_error() else {
        return false;
    };
    if !db.is_unique_violation() {
        return false;
    }
    let in_constraint = db.constraint().is_some_and(|c| c.contains(hint));
    let in_message = db.message().contains(hint)
        || (hint == "in_flight" && db.message().contains("nomos_deliveries.session_id"));
    in_constraint || in_message
}

fn is_race(e: &sqlx::Error) -> bool {
    is_unique_violation(e, "idempotency_key") || is_unique_violation(e, "in_flight")
}

fn checked_ids(plan: &ContinuationPlan<'_>) -> Result<Vec<Uuid>> {
    let ids = dedup(plan.execution_ids);
    if ids.is_empty() {
        return Err(StoreError::InvalidValue {
            field: "execution_ids",
            reason: "a continuation needs at least one execution".into(),
        });
    }
    Ok(ids)
}

/// Why the window CAS matched nothing.
fn window_refusal(window: Option<Window>, now: DateTime<Utc>, hard_cap: i32) -> PlanOutcome {
    match window {
        None => PlanOutcome::NoWindow,
        Some(w) if !w.is_open_at(now) => PlanOutcome::WindowClosed,
        Some(w) if w.continuations >= hard_cap => PlanOutcome::CapReached {
            continuations: w.continuations,
        },
        // Raced with a concurrent change between the two statements; closed
        // is the conservative answer.
        Some(_) => PlanOutcome::WindowClosed,
    }
}

/// The links that could not be taken, in the caller's order.
fn missing(ids: &[Uuid], got: &[Uuid]) -> Vec<Uuid> {
    ids.iter().copied().filter(|id| !got.contains(id)).collect()
}

/// The steps of [`Store::plan_continuations`] for one plan, inside `tx`
/// (which the caller commits only for [`PlanOutcome::Planned`]).
async fn plan_one(
    tx: &mut Tx<'_>,
    plan: &ContinuationPlan<'_>,
    ids: &[Uuid],
    now: DateTime<Utc>,
) -> Result<PlanOutcome> {
    let backend = tx.backend();
    if let Some(d) = delivery_by_key(&mut *tx, plan.idempotency_key).await? {
        return Ok(PlanOutcome::AlreadyPlanned(d));
    }
    let bumped = query(
        "UPDATE nomos_assent_windows \
         SET continuations = continuations + 1, updated_at = $2 \
         WHERE session_id = $1 AND closed_at IS NULL AND expires_at > $2 \
           AND continuations < $3",
    )
    .bind(plan.session_id)
    .bind(now)
    .bind(plan.hard_cap)
    .execute(&mut *tx)
    .await?;
    if bumped != 1 {
        let sql = format!("SELECT {WINDOW_COLS} FROM nomos_assent_windows WHERE session_id = $1");
        let row = query(sql)
            .bind(plan.session_id)
            .fetch_optional(&mut *tx)
            .await?;
        let window = row.as_ref().map(decode::window).transpose()?;
        return Ok(window_refusal(window, now, plan.hard_cap));
    }
    if let Some(in_flight) = in_flight(&mut *tx, plan.session_id).await? {
        return Ok(PlanOutcome::SessionBusy { in_flight });
    }
    // Links (1) of the session (2), neither planned nor settled; locked on
    // PostgreSQL (SQLite's write lock already serialises planners).
    let available = format!(
        "WHERE execution_id {} AND session_id = $2 \
           AND delivery_id IS NULL AND continued_at IS NULL",
        backend.in_ids("$1")
    );
    let lock = backend.lock(" FOR UPDATE SKIP LOCKED");
    let locked = query(format!(
        "SELECT execution_id FROM nomos_plan_executions {available}{lock}"
    ))
    .bind(ids)
    .bind(plan.session_id)
    .fetch_all(&mut *tx)
    .await?;
    let locked = uuids(&locked, "execution_id")?;
    let unavailable = missing(ids, &locked);
    if !unavailable.is_empty() {
        return Ok(PlanOutcome::LinkTaken { unavailable });
    }
    let id = Uuid::new_v4();
    let row = query(concat!(
        "INSERT INTO nomos_deliveries (id, session_id, kind, idempotency_key, execution_ids, \
           note, policy_revision, state, attempts, next_attempt_at, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', 0, $8, $8, $8) RETURNING ",
        delivery_cols!()
    ))
    .bind(id)
    .bind(plan.session_id)
    .bind(DeliveryKind::Continuation.as_str())
    .bind(plan.idempotency_key)
    .bind(ids)
    .bind(plan.note)
    .bind(plan.policy_revision)
    .bind(now)
    .fetch_one(&mut *tx)
    .await?;
    let updated = query(format!(
        "UPDATE nomos_plan_executions SET delivery_id = $3 {available} RETURNING execution_id"
    ))
    .bind(ids)
    .bind(plan.session_id)
    .bind(id)
    .fetch_all(&mut *tx)
    .await?;
    let unavailable = missing(ids, &uuids(&updated, "execution_id")?);
    if !unavailable.is_empty() {
        return Ok(PlanOutcome::LinkTaken { unavailable });
    }
    Ok(PlanOutcome::Planned(decode::delivery(&row)?))
}
