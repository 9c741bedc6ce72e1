//! `GET /v1/overview`: the operator's first screen, the same on every
//! replica (read from the database).

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::store;

/// The pickup times of the last hour: from an execution's finish to the
/// delivery of the continuation that carried its result.
#[derive(Debug, Serialize, ToSchema)]
pub struct Pickup {
    /// The seconds looked back over (3600).
    pub window_seconds: i64,
    /// Executions whose continuation was delivered in the window.
    pub count: i64,
    /// Their median pickup time in milliseconds (nearest rank), or `null`
    /// without any.
    pub p50_ms: Option<i64>,
    /// Their 99th percentile in milliseconds (nearest rank), or `null`
    /// without any.
    pub p99_ms: Option<i64>,
}

/// What is in flight, failing or unheard now, over every session.
#[derive(Debug, Serialize, ToSchema)]
pub struct Overview {
    /// The instant the numbers were read at.
    pub at: DateTime<Utc>,
    /// The seconds `failed_deliveries`, `dropped` and
    /// `continuations_by_hour` look back over (86400: the last 24 hours).
    pub recent_seconds: i64,
    /// Linked executions that have not finished (no terminal report yet).
    pub in_flight: i64,
    /// When the oldest of them was linked, or `null` when none is in flight.
    pub oldest_in_flight_since: Option<DateTime<Utc>>,
    /// Its age in seconds at `at`, or `null`.
    pub oldest_in_flight_seconds: Option<i64>,
    /// Deliveries (continuations and notices) waiting to be sent or retried.
    pub pending_deliveries: i64,
    /// Deliveries that ended `failed` within the last `recent_seconds`.
    pub failed_deliveries: i64,
    /// Executions settled `dropped` (their result never fed back) within
    /// the last `recent_seconds`.
    pub dropped: i64,
    /// Notices that reached no one, ever: the agent's delivery ended
    /// `failed` or `dropped`, and the operator's channel never had it or
    /// ended `failed`, `expired` or `none`.
    pub undelivered_notices: i64,
    /// Continuations delivered in the last hour.
    pub continuations_last_hour: i64,
    /// Continuations delivered in each of the last 24 hours, the oldest
    /// hour first and the hour ending at `at` last.
    pub continuations_by_hour: Vec<i64>,
    /// Pickup times over the last hour.
    pub pickup: Pickup,
}

impl From<store::Pulse> for Overview {
    fn from(p: store::Pulse) -> Self {
        let continuations_last_hour = p.continuations_last_hour();
        Self {
            at: p.at,
            recent_seconds: store::RECENT.num_seconds(),
            in_flight: p.in_flight,
            oldest_in_flight_since: p.oldest_in_flight_since,
            oldest_in_flight_seconds: p
                .oldest_in_flight_since
                .map(|t| (p.at - t).num_seconds().max(0)),
            pending_deliveries: p.pending_deliveries,
            failed_deliveries: p.failed_deliveries,
            dropped: p.dropped,
            undelivered_notices: p.undelivered_notices,
            continuations_last_hour,
            continuations_by_hour: p.continuations_by_hour,
            pickup: Pickup {
                window_seconds: store::PICKUP_WINDOW.num_seconds(),
                count: p.pickups,
                p50_ms: p.pickup_p50_ms,
                p99_ms: p.pickup_p99_ms,
            },
        }
    }
}
