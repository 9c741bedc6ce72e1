//! The ledger's types: a delivery row, the claim a worker holds on it, and
//! what planning and recording an attempt answer.

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::store::types::{DeliveryKind, DeliveryState};

/// One row of the ledger (`nomos_deliveries`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Delivery {
    /// Row id.
    pub id: Uuid,
    /// The session re-invoked or notified.
    pub session_id: Uuid,
    /// Continuation or notice.
    pub kind: DeliveryKind,
    /// Sent with every attempt so the runtime can de-duplicate redeliveries.
    pub idempotency_key: String,
    /// The executions this row is about.
    pub execution_ids: Vec<Uuid>,
    /// The note (continuation) or message (notice).
    pub note: String,
    /// The policy revision (hash) that decided.
    pub policy_revision: String,
    /// Pending, delivered or failed.
    pub state: DeliveryState,
    /// Failed attempts so far.
    pub attempts: i32,
    /// Not claimable before this.
    pub next_attempt_at: DateTime<Utc>,
    /// The worker holding the lease, if any.
    pub lease_owner: Option<String>,
    /// When that lease lapses and the row becomes claimable again.
    pub lease_expires_at: Option<DateTime<Utc>>,
    /// The last attempt's error.
    pub last_error: Option<String>,
    /// When planned.
    pub created_at: DateTime<Utc>,
    /// When delivered.
    pub delivered_at: Option<DateTime<Utc>>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Times claimed, including this claim: a worker that dies mid-call
    /// records no attempt, so this is what bounds redeliveries of a delivery
    /// that keeps crashing its worker.
    pub claims: i32,
    /// Set afresh by every claim; renewing, completing and failing are
    /// fenced by it (see [`Delivery::claim`]).
    pub claim_token: Option<Uuid>,
    /// When the current claim was taken (renewals leave it): the moment the
    /// window was checked for the call that followed.
    pub claimed_at: Option<DateTime<Utc>>,
    /// When the first failed call was recorded: the retry budget is wall
    /// time from here.
    pub first_failed_at: Option<DateTime<Utc>>,
    /// Failed calls that were a shortage on the agent's side (down, timed
    /// out, "come back later"); `attempts - shortages` is what the policy
    /// is shown as failed attempts.
    pub shortages: i32,
}

/// So a page of deliveries and a page of deliveries with more read beside
/// them share one keyset query (see `read::session::ledger_page`).
impl AsRef<Delivery> for Delivery {
    fn as_ref(&self) -> &Delivery {
        self
    }
}

impl Delivery {
    /// The claim this row is held under, if it is claimed.
    pub fn claim(&self) -> Option<Claim> {
        self.claim_token.map(|token| Claim { id: self.id, token })
    }
}

/// One claim of a delivery: its id and the token the claim set. Every
/// change a worker makes to a claimed row names its claim, so a worker
/// whose lease was taken over (it stalled, or its renewals failed) can no
/// longer change the row: its result is not recorded twice, and the new
/// holder's is not overwritten.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Claim {
    /// The delivery.
    pub id: Uuid,
    /// The claim's token.
    pub token: Uuid,
}

/// The arguments of [`crate::store::Store::plan_continuations`].
#[derive(Clone, Copy, Debug)]
pub struct ContinuationPlan<'a> {
    /// The session to re-invoke.
    pub session_id: Uuid,
    /// Its finished executions folded into this one note (not empty).
    pub execution_ids: &'a [Uuid],
    /// The note the policy formatted.
    pub note: &'a str,
    /// The active policy revision (hash).
    pub policy_revision: &'a str,
    /// Unique per continuation; a repeat returns [`PlanOutcome::AlreadyPlanned`].
    pub idempotency_key: &'a str,
    /// The host's hard cap on continuations per window, whatever the policy says.
    pub hard_cap: i32,
}

/// The result of [`crate::store::Store::plan_continuations`]. Every variant but
/// `Planned` means nothing was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanOutcome {
    /// The pending continuation was written, its links point at it, and the
    /// window's count went up by one.
    Planned(Delivery),
    /// A delivery with this idempotency key already exists (a retried plan).
    AlreadyPlanned(Delivery),
    /// The session has never been approved.
    NoWindow,
    /// The window is closed or expired at `now`.
    WindowClosed,
    /// The window already holds `continuations >= hard_cap`.
    CapReached {
        /// The count found.
        continuations: i32,
    },
    /// Another continuation of this session is still pending.
    SessionBusy {
        /// That delivery.
        in_flight: Uuid,
    },
    /// These links are not (or no longer) available: unknown, of another
    /// session, already planned or already settled.
    LinkTaken {
        /// The ids that could not be taken.
        unavailable: Vec<Uuid>,
    },
}

/// A notice to record with [`crate::store::Store::drop_links_seen`].
#[derive(Clone, Copy, Debug)]
pub struct Notice<'a> {
    /// Unique; a repeat is not recorded twice.
    pub idempotency_key: &'a str,
    /// What the operator or agent is told.
    pub message: &'a str,
    /// The policy revision that decided to drop.
    pub policy_revision: &'a str,
}

/// The result of [`crate::store::Store::drop_links_seen`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DropOutcome {
    /// Links settled as dropped by this call.
    pub dropped: Vec<Uuid>,
    /// The notice row written by this call, if any.
    pub notice: Option<Uuid>,
}

/// The result of [`crate::store::Store::fail_delivery_attempt`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// Recorded; the row is claimable again at `next_attempt_at`.
    Retry {
        /// Failed attempts so far.
        attempts: i32,
        /// When it may be claimed again.
        next_attempt_at: DateTime<Utc>,
    },
    /// The budget is spent: the row is `failed` and, for a continuation, its
    /// links are settled with outcome `failed`.
    GaveUp {
        /// Failed attempts in total.
        attempts: i32,
    },
    /// The caller no longer holds the lease; nothing changed.
    LeaseLost,
}
