//! Planning continuations: the transaction that enforces the hard
//! invariants (open window, cap, one in flight per session, a link is folded
//! into at most one continuation), set-based: a pass's plans cost a fixed
//! number of statements and one commit, whatever their number.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::store::decode::{self, RowExt, WINDOW_COLS};
use crate::store::deliveries::delivery_cols;
use crate::store::dialect::{query, trunc, Tx};
use crate::store::probe::Keys;
use crate::store::types::{ContinuationPlan, Delivery, PlanOutcome, Window};
use crate::store::{dedup, Result, Store, StoreError};
use write::write;

mod write;

/// How often a batch that lost a unique-key race (another planner committed
/// the same key or session first, between our reads) is run again; the rerun
/// sees the winner's rows and answers with them.
const RACE_RETRIES: usize = 3;

impl Store {
    #[cfg(feature = "test-support")]
    /// Plans one continuation per entry of `plans`, in ONE transaction,
    /// whatever the policy said. For each plan, in this order:
    ///
    /// 1. A delivery with the same idempotency key already exists →
    ///    [`PlanOutcome::AlreadyPlanned`] (a retried plan is not a second one).
    /// 2. The window is open at `now` and `continuations < hard_cap` → else
    ///    [`PlanOutcome::NoWindow`], [`PlanOutcome::WindowClosed`] or
    ///    [`PlanOutcome::CapReached`].
    /// 3. No other continuation of the session is pending (nor planned
    ///    earlier in this batch) → else [`PlanOutcome::SessionBusy`] (the
    ///    partial unique index `nomos_deliveries_one_in_flight` is the
    ///    backstop).
    /// 4. Every link belongs to the session and is neither planned nor
    ///    settled (locked `FOR UPDATE SKIP LOCKED` on PostgreSQL, so a link
    ///    another planner holds counts as taken) → else
    ///    [`PlanOutcome::LinkTaken`].
    /// 5. The window's count goes up by one, the pending continuation is
    ///    inserted and the links point at it (`delivery_id`).
    ///
    /// Set-based: the window rows are locked first (`FOR NO KEY UPDATE`), in
    /// session order (so two replicas planning overlapping sessions cannot
    /// deadlock, and a concurrent planner of a session waits here and then
    /// sees this one's rows; see the lock order in `store::deliveries`); then one read each for keys, in-flight continuations and links;
    /// the checks run on what was read under those locks; then one `UPDATE`
    /// of the windows, one `INSERT … SELECT` of the continuations and one
    /// `UPDATE … FROM` of the links, for all plans that passed. A refused
    /// plan writes nothing. Outcomes are returned in the caller's order. An
    /// empty `execution_ids` is [`StoreError::InvalidValue`]; a database
    /// error aborts the whole batch: nothing is written and the worker
    /// retries on its next pass.
    pub async fn plan_continuations(
        &self,
        plans: &[ContinuationPlan<'_>],
        now: DateTime<Utc>,
    ) -> Result<Vec<PlanOutcome>> {
        self.plan_and_claim(plans, now, None).await
    }

    /// [`Store::plan_continuations`], claiming the first `claim.limit`
    /// continuations it writes (in session order) for `claim.worker_id` in
    /// the same transaction, as [`Store::claim_deliveries`] would under one
    /// fresh token: their windows are open and locked here, so the claim's
    /// own checks hold. The worker that planned them calls them at once,
    /// and the commit a separate claim would cost is saved on the path from
    /// a status to the call.
    pub async fn plan_and_claim(
        &self,
        plans: &[ContinuationPlan<'_>],
        now: DateTime<Utc>,
        claim: Option<FreshClaim<'_>>,
    ) -> Result<Vec<PlanOutcome>> {
        let now = trunc(now);
        let ids = plans.iter().map(checked_ids).collect::<Result<Vec<_>>>()?;
        if plans.is_empty() {
            return Ok(Vec::new());
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.plan_set(plans, &ids, now, claim).await {
                Err(StoreError::Database(e)) if is_race(&e) && attempt < RACE_RETRIES => {}
                other => return other,
            }
        }
    }

    async fn plan_set(
        &self,
        plans: &[ContinuationPlan<'_>],
        ids: &[Vec<Uuid>],
        now: DateTime<Utc>,
        claim: Option<FreshClaim<'_>>,
    ) -> Result<Vec<PlanOutcome>> {
        let mut tx = self.begin().await?;
        let seen = Seen::read(&mut tx, plans, ids).await?;
        let mut decided = seen.decide(plans, ids, now);
        if !decided.insert.is_empty() {
            write(&mut tx, plans, ids, &mut decided, now, claim).await?;
        }
        tx.commit().await?;
        Ok(decided.outcomes())
    }
}

/// Who claims the continuations a plan writes, for how long, and how many
/// of them (see [`Store::plan_and_claim`]).
#[derive(Clone, Copy, Debug)]
pub struct FreshClaim<'a> {
    /// The worker that will call them.
    pub worker_id: &'a str,
    /// The lease, as in [`Store::claim_deliveries`].
    pub lease: chrono::Duration,
    /// At most this many are claimed.
    pub limit: usize,
}

/// What the checks need, read under the window locks.
struct Seen {
    windows: HashMap<Uuid, Window>,
    by_key: HashMap<String, Delivery>,
    in_flight: HashMap<Uuid, Uuid>,
    /// Available links: execution → its session.
    links: HashMap<Uuid, Uuid>,
}

impl Seen {
    async fn read(
        tx: &mut Tx<'_>,
        plans: &[ContinuationPlan<'_>],
        ids: &[Vec<Uuid>],
    ) -> Result<Self> {
        let backend = tx.backend();
        let mut sessions: Vec<Uuid> = plans.iter().map(|p| p.session_id).collect();
        sessions.sort();
        sessions.dedup();
        let rows = query(format!(
            "SELECT {WINDOW_COLS} FROM nomos_assent_windows WHERE session_id {} \
             ORDER BY session_id{}",
            backend.in_ids("$1"),
            // Not `FOR UPDATE`: a claim's key-share lock on a window must
            // not wait for a planner (the lock order in `store::deliveries`).
            backend.lock(" FOR NO KEY UPDATE")
        ))
        .bind(&sessions)
        .fetch_all(&mut *tx)
        .await?;
        let windows = rows
            .iter()
            .map(|r| decode::window(r).map(|w| (w.session_id, w)))
            .collect::<Result<_>>()?;

        let keys: Vec<String> = plans.iter().map(|p| p.idempotency_key.into()).collect();
        let all: Vec<Uuid> = ids.iter().flatten().copied().collect();
        let (by_key, in_flight, links) = read_in_turn(tx, &keys, &sessions, &all).await?;
        Ok(Self {
            windows,
            by_key,
            in_flight,
            links,
        })
    }

    /// Runs the checks in session order, so that of two plans of one
    /// session the first in that order wins, as it did plan by plan.
    fn decide(
        &self,
        plans: &[ContinuationPlan<'_>],
        ids: &[Vec<Uuid>],
        now: DateTime<Utc>,
    ) -> Decided {
        let mut order: Vec<usize> = (0..plans.len()).collect();
        order.sort_by_key(|&i| plans[i].session_id);
        let mut decided = Decided {
            outcomes: vec![None; plans.len()],
            insert: Vec::new(),
            same_key: Vec::new(),
        };
        let mut planned: HashMap<Uuid, Uuid> = HashMap::new();
        let mut keys: HashMap<&str, usize> = HashMap::new();
        let mut taken: HashSet<Uuid> = HashSet::new();
        for i in order {
            let plan = &plans[i];
            if let Some(d) = self.by_key.get(plan.idempotency_key) {
                decided.outcomes[i] = Some(PlanOutcome::AlreadyPlanned(d.clone()));
                continue;
            }
            if let Some(&first) = keys.get(plan.idempotency_key) {
                decided.same_key.push((i, first));
                continue;
            }
            let refusal = match self.windows.get(&plan.session_id) {
                None => Some(PlanOutcome::NoWindow),
                Some(w) if !w.is_open_at(now) => Some(PlanOutcome::WindowClosed),
                Some(w) if w.continuations >= plan.hard_cap => Some(PlanOutcome::CapReached {
                    continuations: w.continuations,
                }),
                Some(_) => None,
            };
            let busy = || {
                let in_flight = self
                    .in_flight
                    .get(&plan.session_id)
                    .or(planned.get(&plan.session_id));
                in_flight.map(|&in_flight| PlanOutcome::SessionBusy { in_flight })
            };
            let unavailable: Vec<Uuid> = ids[i]
                .iter()
                .copied()
                .filter(|id| self.links.get(id) != Some(&plan.session_id) || taken.contains(id))
                .collect();
            let outcome = refusal.or_else(busy).or_else(|| {
                (!unavailable.is_empty()).then_some(PlanOutcome::LinkTaken { unavailable })
            });
            if outcome.is_some() {
                decided.outcomes[i] = outcome;
                continue;
            }
            let id = Uuid::new_v4();
            planned.insert(plan.session_id, id);
            keys.insert(plan.idempotency_key, i);
            taken.extend(ids[i].iter().copied());
            decided.insert.push((i, id));
        }
        decided
    }
}

/// What [`Seen`] reads after the window locks: the deliveries holding the
/// plans' keys, each session's continuation in flight, and the available
/// links (execution → session), locked.
type AfterLocks = (
    HashMap<String, Delivery>,
    HashMap<Uuid, Uuid>,
    HashMap<Uuid, Uuid>,
);

/// The three reads in turn, in the transaction that holds the window
/// locks. Three statements on PostgreSQL too: one with CTEs saved two round
/// trips and cost more than it saved (0.67 ms against 0.45 ms for the
/// three, `BENCHMARKS.md`).
async fn read_in_turn(
    tx: &mut Tx<'_>,
    keys: &[String],
    sessions: &[Uuid],
    all: &[Uuid],
) -> Result<AfterLocks> {
    let backend = tx.backend();
    let rows = query(format!(
        concat!("SELECT ", delivery_cols!(), " FROM {}"),
        backend.rows_by_keys(
            Keys::new(
                "nomos_deliveries",
                "idempotency_key",
                "$1",
                "nomos_deliveries"
            )
            .of_type("text")
        )
    ))
    .bind(keys)
    .fetch_all(&mut *tx)
    .await?;
    let by_key = rows
        .iter()
        .map(|r| decode::delivery(r).map(|d| (d.idempotency_key.clone(), d)))
        .collect::<Result<_>>()?;

    let rows = query(format!(
        "SELECT session_id, id FROM nomos_deliveries \
         WHERE session_id {} AND state = 'pending' AND kind = 'continuation'",
        backend.in_ids("$1")
    ))
    .bind(sessions)
    .fetch_all(&mut *tx)
    .await?;
    let in_flight = pairs(&rows, "session_id", "id")?;

    // Each link probed by its key and locked as found: a pass's thousands
    // of ids never become a read of the whole link table.
    let rows = query(format!(
        "SELECT l.execution_id, l.session_id FROM {}",
        backend.rows_by_keys(
            Keys::new("nomos_plan_executions", "execution_id", "$1", "l")
                .filtered(" AND delivery_id IS NULL AND continued_at IS NULL")
                .locked(" FOR UPDATE SKIP LOCKED")
        )
    ))
    .bind(all)
    .fetch_all(&mut *tx)
    .await?;
    let links = pairs(&rows, "execution_id", "session_id")?;
    Ok((by_key, in_flight, links))
}

/// The outcome of each plan so far, and what is to be written.
struct Decided {
    outcomes: Vec<Option<PlanOutcome>>,
    /// Plans that passed every check, with their new delivery's id.
    insert: Vec<(usize, Uuid)>,
    /// A plan repeating the key of an earlier one in the same batch, and
    /// that earlier plan: answered with its row once written.
    same_key: Vec<(usize, usize)>,
}

impl Decided {
    fn outcomes(mut self) -> Vec<PlanOutcome> {
        for (i, first) in std::mem::take(&mut self.same_key) {
            self.outcomes[i] = Some(match &self.outcomes[first] {
                Some(PlanOutcome::Planned(d)) => PlanOutcome::AlreadyPlanned(d.clone()),
                other => other.clone().unwrap_or(PlanOutcome::WindowClosed),
            });
        }
        self.outcomes
            .into_iter()
            .map(|o| o.unwrap_or(PlanOutcome::WindowClosed))
            .collect()
    }
}

/// Two UUID columns of `rows` as a map.
fn pairs(
    rows: &[crate::store::dialect::Row],
    key: &'static str,
    value: &'static str,
) -> Result<HashMap<Uuid, Uuid>> {
    rows.iter()
        .map(|r| Ok((r.uuid(key)?, r.uuid(value)?)))
        .collect()
}

/// The session's pending continuation, if any.
pub(in crate::store) async fn in_flight<'c>(
    on: impl Into<crate::store::dialect::On<'c>>,
    session_id: Uuid,
) -> Result<Option<Uuid>> {
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
pub(in crate::store) fn is_unique_violation(e: &sqlx::Error, hint: &str) -> bool {
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
