//! Set-at-a-time versions of the worker's two commits, so one pass costs a
//! couple of transactions (and WAL flushes) instead of one or two per
//! session: planning many sessions in one transaction with a savepoint per
//! session.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::plan::{is_unique_violation, plan_lite, plan_pg};
use super::types::{ContinuationPlan, PlanOutcome};
use super::{dedup, trunc, Db, Result, Store, StoreError, SQLITE_BEGIN};

/// Runs each plan in `order` inside its own savepoint of `tx`, with the
/// backend's plan function; the same code for both backends, whose
/// connection types differ.
macro_rules! plan_each {
    ($tx:ident, $plan_one:ident, $plans:ident, $order:ident, $now:ident, $outcomes:ident, $raced:ident) => {
        for &i in &$order {
            let ids = checked_ids(&$plans[i])?;
            let mut savepoint = sqlx::Acquire::begin(&mut *$tx).await?;
            match $plan_one(&mut savepoint, &$plans[i], &ids, $now).await {
                Ok(o @ PlanOutcome::Planned(_)) => {
                    savepoint.commit().await?;
                    $outcomes[i] = Some(o);
                }
                Ok(other) => {
                    savepoint.rollback().await?;
                    $outcomes[i] = Some(other);
                }
                Err(StoreError::Database(e)) if is_race(&e) => {
                    savepoint.rollback().await?;
                    $raced.push(i);
                }
                Err(e) => return Err(e),
            }
        }
    };
}

impl Store {
    /// [`Store::plan_continuation`] for many sessions in ONE transaction.
    ///
    /// Each plan runs inside its own savepoint with exactly the checks and
    /// outcomes of the single version: a refused plan (window closed, cap,
    /// session busy, link taken, a racing planner's unique key) rolls back to
    /// its savepoint and leaves the others intact. Plans are applied in
    /// session order, so two replicas planning overlapping sessions lock
    /// window rows in the same order and cannot deadlock. Outcomes are
    /// returned in the caller's order. A database error aborts the whole
    /// batch: nothing is written and the worker retries on its next pass.
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
        match &self.db {
            Db::Pg(pool) => {
                let mut tx = pool.begin().await?;
                plan_each!(tx, plan_pg, plans, order, now, outcomes, raced);
                tx.commit().await?;
            }
            Db::Lite(pool) => {
                let mut tx = pool.begin_with(SQLITE_BEGIN).await?;
                plan_each!(tx, plan_lite, plans, order, now, outcomes, raced);
                tx.commit().await?;
            }
        }
        // A unique violation means another planner committed first: report
        // its row, as the single version does.
        for i in raced {
            let plan = &plans[i];
            outcomes[i] = Some(match self.delivery_by_key(plan.idempotency_key).await? {
                Some(d) => PlanOutcome::AlreadyPlanned(d),
                None => match self.in_flight(plan.session_id).await? {
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

fn is_race(e: &sqlx::Error) -> bool {
    is_unique_violation(e, "idempotency_key") || is_unique_violation(e, "in_flight")
}
