//! The plan's writes for the plans that passed its checks: each window's
//! count up by one, the continuations inserted (the first few claimed for
//! the planner), the links pointed at them, three statements in the plan's
//! transaction. Which plans were written comes back with their rows (a
//! window not bumped, because it closed or expired under the lock, writes
//! nothing for its plan).
//!
//! Three statements on PostgreSQL too, not one with data-modifying CTEs:
//! the one statement saved two round trips but cost more than it saved (a
//! plan of one session: 1.4 ms against 0.9–1.0 ms for the three; a pass of 512:
//! about 130 ms against 100 ms, `BENCHMARKS.md`), the planner knowing
//! nothing of how many rows each CTE yields.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Decided, FreshClaim};
use crate::store::decode::{self, RowExt};
use crate::store::deliveries::delivery_cols;
use crate::store::dialect::{query, trunc, Query, Row, Tx};
use crate::store::types::{ContinuationPlan, Delivery, DeliveryKind, PlanOutcome};
use crate::store::{Backend, Result, StoreError};

/// Bumps a window of `{sessions}` still open at `{now}`: the guard holds
/// again under the lock, and a window not bumped is answered as closed.
fn bump(sessions: &str, now: &str) -> String {
    format!(
        "UPDATE nomos_assent_windows \
         SET continuations = continuations + 1, updated_at = {now} \
         WHERE session_id {sessions} AND closed_at IS NULL AND expires_at > {now} \
         RETURNING session_id, opened_at"
    )
}

/// Points each link of `{pairs}` (`x.eid`) at its continuation (`x.did`).
fn point(pairs: &str) -> String {
    format!(
        "UPDATE nomos_plan_executions AS l SET delivery_id = x.did FROM {pairs} \
         WHERE l.execution_id = x.eid AND l.delivery_id IS NULL AND l.continued_at IS NULL"
    )
}

/// The plans that passed, as the columns the statements bind.
#[derive(Default)]
struct Rows {
    delivery_ids: Vec<Uuid>,
    session_ids: Vec<Uuid>,
    keys: Vec<String>,
    lists: Vec<String>,
    notes: Vec<String>,
    revisions: Vec<String>,
    link_ids: Vec<Uuid>,
    link_deliveries: Vec<Uuid>,
}

impl Rows {
    fn of(plans: &[ContinuationPlan<'_>], ids: &[Vec<Uuid>], insert: &[(usize, Uuid)]) -> Self {
        let mut rows = Self::default();
        for &(i, id) in insert {
            let plan = &plans[i];
            rows.delivery_ids.push(id);
            rows.session_ids.push(plan.session_id);
            rows.keys.push(plan.idempotency_key.to_string());
            rows.lists.push(json_list(&ids[i]));
            rows.notes.push(plan.note.to_string());
            rows.revisions.push(plan.policy_revision.to_string());
            rows.link_ids.extend(ids[i].iter().copied());
            rows.link_deliveries
                .extend(std::iter::repeat_n(id, ids[i].len()));
        }
        rows
    }

    /// The insert's arguments, `$1` to `$12` (see [`insert`]): the
    /// continuations, their kind and time, the claim.
    fn bind<'a>(
        &'a self,
        q: Query<'a>,
        now: DateTime<Utc>,
        claim: Option<FreshClaim<'a>>,
        claimed: &'a [Uuid],
    ) -> Query<'a> {
        let until = trunc(now + claim.map_or(chrono::Duration::zero(), |c| c.lease));
        q.bind(&self.delivery_ids)
            .bind(&self.session_ids)
            .bind(&self.keys[..])
            .bind(&self.lists[..])
            .bind(&self.notes[..])
            .bind(&self.revisions[..])
            .bind(DeliveryKind::Continuation.as_str())
            .bind(now)
            .bind(claimed)
            .bind(claim.map_or("", |c| c.worker_id))
            .bind(until)
            .bind(Uuid::new_v4())
    }
}

/// The three writes for the plans in `decided.insert`; each plan's outcome
/// is set to its row, or to closed when its window was not bumped.
pub(super) async fn write(
    tx: &mut Tx<'_>,
    plans: &[ContinuationPlan<'_>],
    ids: &[Vec<Uuid>],
    decided: &mut Decided,
    now: DateTime<Utc>,
    claim: Option<FreshClaim<'_>>,
) -> Result<()> {
    let (inserted, pointed) = write_in_turn(tx, plans, ids, decided, now, claim).await?;
    let mut inserted: HashMap<Uuid, Delivery> = inserted
        .iter()
        .map(|r| decode::delivery(r).map(|d| (d.id, d)))
        .collect::<Result<_>>()?;
    let mut expected = 0u64;
    for &(i, id) in &decided.insert {
        decided.outcomes[i] = Some(match inserted.remove(&id) {
            Some(d) => {
                expected += d.execution_ids.len() as u64;
                PlanOutcome::Planned(d)
            }
            None => PlanOutcome::WindowClosed,
        });
    }
    if pointed != expected {
        // The links and windows are locked by this transaction, so this
        // means the schema or a hand-made row broke an assumption: write
        // nothing rather than a continuation missing some of its links.
        return Err(StoreError::Corrupt {
            column: "nomos_plan_executions.delivery_id",
            value: format!("{pointed} of {expected} links planned"),
        });
    }
    Ok(())
}

/// The three writes in turn, in the plan's transaction; the plans whose
/// window was not bumped are left out of the other two.
async fn write_in_turn(
    tx: &mut Tx<'_>,
    plans: &[ContinuationPlan<'_>],
    ids: &[Vec<Uuid>],
    decided: &Decided,
    now: DateTime<Utc>,
    claim: Option<FreshClaim<'_>>,
) -> Result<(Vec<Row>, u64)> {
    let backend = tx.backend();
    let sessions: Vec<Uuid> = (decided.insert.iter())
        .map(|&(i, _)| plans[i].session_id)
        .collect();
    let q = query(bump(&backend.in_ids("$1"), "$2"))
        .bind(&sessions)
        .bind(now);
    let bumped_rows = q.fetch_all(&mut *tx).await?;
    // Each bumped session, and whether its window had opened by `now`: a
    // window re-approved after this pass read the clock is still bumped (it
    // is open), but its delivery is left for the next claim, whose `now`
    // is later, rather than claimed at an instant before the window opened.
    let bumped: HashMap<Uuid, bool> = (bumped_rows.iter())
        .map(|r| Ok((r.uuid("session_id")?, r.time("opened_at")? <= now)))
        .collect::<Result<_>>()?;
    let kept: Vec<(usize, Uuid)> = (decided.insert.iter().copied())
        .filter(|&(i, _)| bumped.contains_key(&plans[i].session_id))
        .collect();
    if kept.is_empty() {
        return Ok((Vec::new(), 0));
    }
    let claimed: Vec<Uuid> = match claim {
        Some(c) => (kept.iter())
            .filter(|&&(i, _)| bumped.get(&plans[i].session_id) == Some(&true))
            .map(|&(_, id)| id)
            .take(c.limit)
            .collect(),
        None => Vec::new(),
    };
    let rows = Rows::of(plans, ids, &kept);
    let sql = format!(
        "{} RETURNING {}",
        insert(
            backend,
            &zipped(backend),
            &format!("z.id {}", backend.in_ids("$9"))
        ),
        delivery_cols!()
    );
    let inserted = rows
        .bind(query(sql), now, claim, &claimed)
        .fetch_all(&mut *tx)
        .await?;
    // Only the links' two columns: the continuations' notes are not sent
    // a second time.
    let sql = point(&backend.zip("x", &[("$1", "eid", "uuid"), ("$2", "did", "uuid")]));
    let pointed = query(sql)
        .bind(&rows.link_ids)
        .bind(&rows.link_deliveries)
        .execute(&mut *tx)
        .await?;
    Ok((inserted, pointed))
}

/// The continuations as a relation `z` of `(id, session_id, k, ids, note,
/// rev)` from `$1`–`$6`.
fn zipped(backend: Backend) -> String {
    backend.zip(
        "z",
        &[
            ("$1", "id", "uuid"),
            ("$2", "session_id", "uuid"),
            ("$3", "k", "text"),
            ("$4", "ids", "text"),
            ("$5", "note", "text"),
            ("$6", "rev", "text"),
        ],
    )
}

/// The `INSERT … SELECT` of the continuations from `from` (a relation `z`
/// as [`zipped`]'s), the rows for which `mine` holds claimed as
/// `claim_deliveries` would claim them (worker `$10`, lease until `$11`,
/// token `$12`), the others unclaimed.
fn insert(backend: Backend, from: &str, mine: &str) -> String {
    format!(
        "INSERT INTO nomos_deliveries (id, session_id, kind, idempotency_key, execution_ids, \
           note, policy_revision, state, attempts, next_attempt_at, created_at, updated_at, \
           lease_owner, lease_expires_at, claims, claim_token, claimed_at) \
         SELECT z.id, z.session_id, $7, z.k, {ids}, z.note, z.rev, 'pending', 0, $8, $8, $8, \
           CASE WHEN {mine} THEN $10 END, CASE WHEN {mine} THEN $11 END, \
           CASE WHEN {mine} THEN 1 ELSE 0 END, CASE WHEN {mine} THEN $12 END, \
           CASE WHEN {mine} THEN $8 END \
         FROM {from}",
        ids = backend.ids_from_json("z.ids"),
    )
}

/// Ids as a JSON array of strings: the one per-row form of a UUID list that
/// both backends can take from a zipped text parameter.
fn json_list(ids: &[Uuid]) -> String {
    serde_json::Value::from(ids.iter().map(Uuid::to_string).collect::<Vec<_>>()).to_string()
}
