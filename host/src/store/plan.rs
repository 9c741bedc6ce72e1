//! Planning a continuation: the one transaction that enforces the hard
//! invariants (open window, cap, one in flight per session, a link is folded
//! into at most one continuation).

use chrono::{DateTime, Utc};
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;
use sqlx::{PgConnection, SqliteConnection};
use uuid::Uuid;

use super::decode::{self, WINDOW_COLS};
use super::deliveries::delivery_cols;
use super::types::{ContinuationPlan, DeliveryKind, PlanOutcome};
use super::{dedup, json_ids, micros, trunc, Db, Result, Store, StoreError, SQLITE_BEGIN};

impl Store {
    /// Plans one continuation of a session for its finished executions, in
    /// ONE transaction, whatever the policy said:
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
    /// Any refusal rolls the whole transaction back: no count, no row, no
    /// link changes. An empty `execution_ids` is [`StoreError::InvalidValue`].
    pub async fn plan_continuation(
        &self,
        plan: &ContinuationPlan<'_>,
        now: DateTime<Utc>,
    ) -> Result<PlanOutcome> {
        let ids = dedup(plan.execution_ids);
        if ids.is_empty() {
            return Err(StoreError::InvalidValue {
                field: "execution_ids",
                reason: "a continuation needs at least one execution".into(),
            });
        }
        let now = trunc(now);
        let outcome = match &self.db {
            Db::Pg(pool) => {
                let mut tx = pool.begin().await?;
                let outcome = plan_pg(&mut tx, plan, &ids, now).await;
                match outcome {
                    Ok(o @ PlanOutcome::Planned(_)) => {
                        tx.commit().await?;
                        Ok(o)
                    }
                    other => other, // dropping tx rolls back
                }
            }
            Db::Lite(pool) => {
                let mut tx = pool.begin_with(SQLITE_BEGIN).await?;
                let outcome = plan_lite(&mut tx, plan, &ids, now).await;
                match outcome {
                    Ok(o @ PlanOutcome::Planned(_)) => {
                        tx.commit().await?;
                        Ok(o)
                    }
                    other => other,
                }
            }
        };
        match outcome {
            // Two planners with the same key raced past step 1: the loser's
            // insert hit the unique key; report the winner's row.
            Err(StoreError::Database(e)) if is_unique_violation(&e, "idempotency_key") => {
                match self.delivery_by_key(plan.idempotency_key).await? {
                    Some(d) => Ok(PlanOutcome::AlreadyPlanned(d)),
                    None => Err(StoreError::Database(e)),
                }
            }
            Err(StoreError::Database(e)) if is_unique_violation(&e, "in_flight") => {
                match self.in_flight(plan.session_id).await? {
                    Some(in_flight) => Ok(PlanOutcome::SessionBusy { in_flight }),
                    None => Err(StoreError::Database(e)),
                }
            }
            other => other,
        }
    }

    /// The ledger row with this idempotency key, if any.
    pub(super) async fn delivery_by_key(
        &self,
        key: &str,
    ) -> Result<Option<super::types::Delivery>> {
        let row = match &self.db {
            Db::Pg(pool) => sqlx::query(concat!(
                "SELECT ",
                delivery_cols!(),
                " FROM nomos_deliveries WHERE idempotency_key = $1"
            ))
            .bind(key)
            .fetch_optional(pool)
            .await?
            .map(|r| decode::delivery(&r)),
            Db::Lite(pool) => sqlx::query(concat!(
                "SELECT ",
                delivery_cols!(),
                " FROM nomos_deliveries WHERE idempotency_key = ?1"
            ))
            .bind(key)
            .fetch_optional(pool)
            .await?
            .map(|r| decode::delivery(&r)),
        };
        row.transpose()
    }

    /// The session's pending continuation, if any.
    pub(super) async fn in_flight(&self, session_id: Uuid) -> Result<Option<Uuid>> {
        Ok(match &self.db {
            Db::Pg(pool) => {
                sqlx::query_scalar(IN_FLIGHT_PG)
                    .bind(session_id)
                    .fetch_optional(pool)
                    .await?
            }
            Db::Lite(pool) => {
                let id: Option<String> = sqlx::query_scalar(IN_FLIGHT_LITE)
                    .bind(session_id.to_string())
                    .fetch_optional(pool)
                    .await?;
                id.and_then(|s| Uuid::parse_str(&s).ok())
            }
        })
    }
}

const IN_FLIGHT_PG: &str = "SELECT id FROM nomos_deliveries \
     WHERE session_id = $1 AND state = 'pending' AND kind = 'continuation'";
const IN_FLIGHT_LITE: &str = "SELECT id FROM nomos_deliveries \
     WHERE session_id = ?1 AND state = 'pending' AND kind = 'continuation'";

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

/// Why the window CAS matched nothing.
fn window_refusal(
    window: Option<super::types::Window>,
    now: DateTime<Utc>,
    hard_cap: i32,
) -> PlanOutcome {
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

pub(super) async fn plan_pg(
    tx: &mut PgConnection,
    plan: &ContinuationPlan<'_>,
    ids: &[Uuid],
    now: DateTime<Utc>,
) -> Result<PlanOutcome> {
    let existing: Option<PgRow> = sqlx::query(concat!(
        "SELECT ",
        delivery_cols!(),
        " FROM nomos_deliveries WHERE idempotency_key = $1"
    ))
    .bind(plan.idempotency_key)
    .fetch_optional(&mut *tx)
    .await?;
    if let Some(row) = existing {
        return Ok(PlanOutcome::AlreadyPlanned(decode::delivery(&row)?));
    }
    let bumped = sqlx::query(
        "UPDATE nomos_assent_windows \
         SET continuations = continuations + 1, updated_at = $2 \
         WHERE session_id = $1 AND closed_at IS NULL AND opened_at <= $2 AND expires_at > $2 \
           AND continuations < $3",
    )
    .bind(plan.session_id)
    .bind(now)
    .bind(plan.hard_cap)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if bumped != 1 {
        let sql = format!("SELECT {WINDOW_COLS} FROM nomos_assent_windows WHERE session_id = $1");
        let row = sqlx::query(&sql)
            .bind(plan.session_id)
            .fetch_optional(&mut *tx)
            .await?;
        let window = row.as_ref().map(decode::window).transpose()?;
        return Ok(window_refusal(window, now, plan.hard_cap));
    }
    let busy: Option<Uuid> = sqlx::query_scalar(IN_FLIGHT_PG)
        .bind(plan.session_id)
        .fetch_optional(&mut *tx)
        .await?;
    if let Some(in_flight) = busy {
        return Ok(PlanOutcome::SessionBusy { in_flight });
    }
    let locked: Vec<Uuid> = sqlx::query_scalar(
        "SELECT execution_id FROM nomos_plan_executions \
         WHERE execution_id = ANY($1) AND session_id = $2 \
           AND delivery_id IS NULL AND continued_at IS NULL \
         FOR UPDATE SKIP LOCKED",
    )
    .bind(ids)
    .bind(plan.session_id)
    .fetch_all(&mut *tx)
    .await?;
    let unavailable = missing(ids, &locked);
    if !unavailable.is_empty() {
        return Ok(PlanOutcome::LinkTaken { unavailable });
    }
    let id = Uuid::new_v4();
    let row: PgRow = sqlx::query(concat!(
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
    let updated: Vec<Uuid> = sqlx::query_scalar(
        "UPDATE nomos_plan_executions SET delivery_id = $1 \
         WHERE execution_id = ANY($2) AND session_id = $3 \
           AND delivery_id IS NULL AND continued_at IS NULL \
         RETURNING execution_id",
    )
    .bind(id)
    .bind(ids)
    .bind(plan.session_id)
    .fetch_all(&mut *tx)
    .await?;
    let unavailable = missing(ids, &updated);
    if !unavailable.is_empty() {
        return Ok(PlanOutcome::LinkTaken { unavailable });
    }
    Ok(PlanOutcome::Planned(decode::delivery(&row)?))
}

pub(super) async fn plan_lite(
    tx: &mut SqliteConnection,
    plan: &ContinuationPlan<'_>,
    ids: &[Uuid],
    now: DateTime<Utc>,
) -> Result<PlanOutcome> {
    let session = plan.session_id.to_string();
    let ids_json = json_ids(ids);
    let existing: Option<SqliteRow> = sqlx::query(concat!(
        "SELECT ",
        delivery_cols!(),
        " FROM nomos_deliveries WHERE idempotency_key = ?1"
    ))
    .bind(plan.idempotency_key)
    .fetch_optional(&mut *tx)
    .await?;
    if let Some(row) = existing {
        return Ok(PlanOutcome::AlreadyPlanned(decode::delivery(&row)?));
    }
    let bumped = sqlx::query(
        "UPDATE nomos_assent_windows \
         SET continuations = continuations + 1, updated_at = ?2 \
         WHERE session_id = ?1 AND closed_at IS NULL AND opened_at <= ?2 AND expires_at > ?2 \
           AND continuations < ?3",
    )
    .bind(&session)
    .bind(micros(now))
    .bind(plan.hard_cap)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if bumped != 1 {
        let sql = format!("SELECT {WINDOW_COLS} FROM nomos_assent_windows WHERE session_id = ?1");
        let row = sqlx::query(&sql)
            .bind(&session)
            .fetch_optional(&mut *tx)
            .await?;
        let window = row.as_ref().map(decode::window).transpose()?;
        return Ok(window_refusal(window, now, plan.hard_cap));
    }
    let busy: Option<String> = sqlx::query_scalar(IN_FLIGHT_LITE)
        .bind(&session)
        .fetch_optional(&mut *tx)
        .await?;
    if let Some(in_flight) = busy {
        let in_flight = Uuid::parse_str(&in_flight).map_err(|_| StoreError::Corrupt {
            column: "id",
            value: in_flight,
        })?;
        return Ok(PlanOutcome::SessionBusy { in_flight });
    }
    let id = Uuid::new_v4();
    let row: SqliteRow = sqlx::query(concat!(
        "INSERT INTO nomos_deliveries (id, session_id, kind, idempotency_key, execution_ids, \
           note, policy_revision, state, attempts, next_attempt_at, created_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending', 0, ?8, ?8, ?8) RETURNING ",
        delivery_cols!()
    ))
    .bind(id.to_string())
    .bind(&session)
    .bind(DeliveryKind::Continuation.as_str())
    .bind(plan.idempotency_key)
    .bind(&ids_json)
    .bind(plan.note)
    .bind(plan.policy_revision)
    .bind(micros(now))
    .fetch_one(&mut *tx)
    .await?;
    let updated: Vec<String> = sqlx::query_scalar(
        "UPDATE nomos_plan_executions SET delivery_id = ?1 \
         WHERE execution_id IN (SELECT value FROM json_each(?2)) AND session_id = ?3 \
           AND delivery_id IS NULL AND continued_at IS NULL \
         RETURNING execution_id",
    )
    .bind(id.to_string())
    .bind(&ids_json)
    .bind(&session)
    .fetch_all(&mut *tx)
    .await?;
    let updated: Vec<Uuid> = updated
        .iter()
        .filter_map(|s| Uuid::parse_str(s).ok())
        .collect();
    let unavailable = missing(ids, &updated);
    if !unavailable.is_empty() {
        return Ok(PlanOutcome::LinkTaken { unavailable });
    }
    Ok(PlanOutcome::Planned(decode::delivery(&row)?))
}
