//! Set-at-a-time versions of the worker's two commits, so one pass costs a
//! couple of transactions (and WAL flushes) instead of one or two per
//! session: planning many sessions in one transaction with a savepoint per
//! session, and marking many deliveries delivered in one statement.

use time::OffsetDateTime;
use uuid::Uuid;

use super::plan::{is_unique_violation, plan_lite, plan_pg};
use super::types::{ContinuationPlan, PlanOutcome};
use super::{dedup, micros, trunc, Db, Result, Store, StoreError, SQLITE_BEGIN};

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
        now: OffsetDateTime,
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

    /// [`Store::complete_delivery`] for many deliveries of one worker, in one
    /// transaction (one statement on PostgreSQL). Returns the ids it marked
    /// delivered; an id missing from the answer lost its lease (or was not
    /// pending) and changed nothing.
    pub async fn complete_deliveries(
        &self,
        ids: &[Uuid],
        worker_id: &str,
        now: OffsetDateTime,
    ) -> Result<Vec<Uuid>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let now = trunc(now);
        match &self.db {
            Db::Pg(pool) => Ok(sqlx::query_scalar(
                "WITH done AS ( \
                     UPDATE nomos_deliveries \
                     SET state = 'delivered', delivered_at = $3, updated_at = $3, \
                         lease_owner = NULL, lease_expires_at = NULL \
                     WHERE id = ANY($1) AND lease_owner = $2 AND state = 'pending' \
                     RETURNING id, kind), \
                 settled AS ( \
                     UPDATE nomos_plan_executions \
                     SET continued_at = $3, outcome = 'continued' \
                     WHERE delivery_id IN (SELECT id FROM done WHERE kind = 'continuation') \
                       AND continued_at IS NULL) \
                 SELECT id FROM done",
            )
            .bind(ids)
            .bind(worker_id)
            .bind(now)
            .fetch_all(pool)
            .await?),
            Db::Lite(pool) => {
                let mut tx = pool.begin_with(SQLITE_BEGIN).await?;
                let mut done = Vec::with_capacity(ids.len());
                for id in ids {
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
                    let Some(kind) = kind else { continue };
                    if kind == "continuation" {
                        sqlx::query(
                            "UPDATE nomos_plan_executions SET continued_at = ?2, outcome = 'continued' \
                             WHERE delivery_id = ?1 AND continued_at IS NULL",
                        )
                        .bind(id.to_string())
                        .bind(micros(now))
                        .execute(&mut *tx)
                        .await?;
                    }
                    done.push(*id);
                }
                tx.commit().await?;
                Ok(done)
            }
        }
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
