//! The ledger, `nomos_deliveries`: every continuation and notice the
//! worker sends, each one row from planned to settled. This module reads a
//! row and releases expired leases; the rest of its life is written in
//! one file per step:
//!
//! - `row`: the row's types, the claim a worker holds on it;
//! - `plan`: writing continuations (the hard checks, in one transaction);
//! - `claim`: taking due rows under a lease, renewing and giving it back;
//! - `record`: what a call did (delivered, or a failed attempt);
//! - `settle`: ending a continuation that will not be sent, and retries;
//! - `notice`: notices, and settling a delivery's links;
//! - `operator`: a notice's copy for the operator's channel.
//!
//! # Lock order
//!
//! On PostgreSQL, every transaction that locks rows of the assent windows,
//! this ledger and the links takes them in this order, so that two
//! workers' transactions never wait for each other in a cycle (PostgreSQL
//! would abort one with `deadlock detected`):
//!
//! 1. **windows**, several in session order: the plan's `FOR NO KEY
//!    UPDATE` (`plan`), a deny's `FOR UPDATE` and an approval's upsert,
//!    one row each (`store::windows`);
//! 2. **ledger rows**: several in id order (`claim::in_id_order`; the
//!    rescuer's release of expired leases too, skipping rows held, so it
//!    never waits); a new row (a continuation, a notice) waits only for
//!    another insert of its key, which takes the same order;
//! 3. **links**: the plan's `FOR UPDATE SKIP LOCKED` (it never waits for
//!    one), a delivery's links when it is recorded, dropped or retried.
//!
//! The claim (`claim`) must find its ledger rows before their windows. It
//! cannot close a cycle: it takes the rows `SKIP LOCKED`, so it never
//! waits for one, and their windows only `FOR KEY SHARE`, which conflicts
//! with a deny's `FOR UPDATE` and with nothing the plan or an approval
//! takes; a deny holds nothing else while it waits (one statement, one
//! row). The claim's `FOR SHARE` on the windows conflicted with the plan's
//! lock: a claim holding the window of the session due first and waiting
//! for the next one, and a plan holding that next one (a lower session id)
//! and waiting for the first, deadlocked (issue 28;
//! `tests/tests/storage/lock_order.rs`).

pub(crate) mod claim;
pub(crate) mod notice;
pub(crate) mod operator;
pub(crate) mod plan;
pub(crate) mod record;
pub(crate) mod row;
pub(crate) mod settle;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::store::decode;
use crate::store::dialect::{query, trunc, Arg, On};
use crate::store::types::Delivery;
use crate::store::{Result, Store};

/// Every ledger column, in the order [`decode::delivery`] reads them.
macro_rules! delivery_cols {
    () => {
        "id, session_id, kind, idempotency_key, execution_ids, note, policy_revision, state, \
         attempts, next_attempt_at, lease_owner, lease_expires_at, last_error, created_at, \
         delivered_at, updated_at, claims, claim_token, claimed_at, first_failed_at, shortages"
    };
}
pub(crate) use delivery_cols;

/// The ledger row whose `column` (`id` or `idempotency_key`, both unique)
/// is `value`, if any, read on `on` (the pool, or a transaction that must
/// see its own writes).
async fn delivery_by<'c>(
    on: impl Into<On<'c>>,
    column: &str,
    value: Arg<'_>,
) -> Result<Option<Delivery>> {
    let sql = format!(
        "SELECT {} FROM nomos_deliveries WHERE {column} = $1",
        delivery_cols!()
    );
    let row = query(sql).bind(value).fetch_optional(on).await?;
    row.as_ref().map(decode::delivery).transpose()
}

impl Store {
    /// Clears leases that have expired at `now` and returns how many, for a
    /// rescuer loop whose metric shows crashed or stuck workers. Not needed
    /// for correctness ([`Store::claim_deliveries`] takes expired leases over
    /// by itself) and it does not count an attempt: a crash is not the
    /// agent's failure.
    ///
    /// On PostgreSQL it locks the rows in id order and skips any row
    /// another transaction holds (a renewal, a record, a claim), so it never
    /// waits for one and cannot close a lock cycle (the lock order above);
    /// a row skipped is released by the next round, or claimed meanwhile.
    pub async fn release_expired_leases(&self, now: DateTime<Utc>) -> Result<u64> {
        let sql = format!(
            "UPDATE nomos_deliveries \
             SET lease_owner = NULL, lease_expires_at = NULL, updated_at = $1 \
             WHERE id IN (SELECT id FROM nomos_deliveries \
                 WHERE state = 'pending' AND lease_owner IS NOT NULL AND lease_expires_at <= $1 \
                 ORDER BY id{}) \
             AND state = 'pending' AND lease_owner IS NOT NULL AND lease_expires_at <= $1",
            self.backend().lock(" FOR UPDATE SKIP LOCKED")
        );
        query(sql).bind(trunc(now)).execute(self).await
    }

    /// One ledger row by id; `None` if unknown.
    pub async fn delivery(&self, id: Uuid) -> Result<Option<Delivery>> {
        delivery_by(self, "id", id.into()).await
    }
}
