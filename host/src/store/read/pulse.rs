//! The operator's first screen: what is in flight, what is stuck behind
//! it, what failed or was dropped lately, the notices that reached no one,
//! and how fast finished work is picked up, for the console's overview
//! strip and `GET /v1/overview`.
//!
//! # Why from the database, and why these windows
//!
//! Every replica answers the same numbers because they are read from the
//! ledger, not from a process's counters, and every time in them is the
//! ledger's own (a link's `created_at`, an execution's `finished_at`, a
//! delivery's `delivered_at`/`updated_at`), compared with the caller's
//! `now`. Failures and drops are counted over the last [`RECENT`] (an
//! ended row stays ended forever, so an all-time count only grows); the
//! pickup times over the last [`PICKUP_WINDOW`]. Each read is a range of a
//! partial index (migration 026's on ended deliveries, 027's on ended
//! links), so its cost is the window's rows, not the history.
//!
//! # Percentiles on both backends
//!
//! SQLite has no percentile function, so both backends take the same
//! nearest-rank percentile: count the pickups, then read the `k`-th of them
//! in order (`ORDER BY … LIMIT 1 OFFSET k`, `k = ceil(p·n) − 1`).

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::store::decode::RowExt;
use crate::store::dialect::{query, trunc};
use crate::store::{Backend, Result, Store};

/// How far back failures, drops and the continuation chart look.
pub const RECENT: Duration = Duration::hours(24);

/// How far back the pickup percentiles look.
pub const PICKUP_WINDOW: Duration = Duration::hours(1);

/// Hourly buckets in the continuation chart ([`RECENT`] / one hour).
pub const CHART_HOURS: usize = 24;

/// The overview strip's numbers at one instant.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Pulse {
    /// The instant they were read at.
    pub at: DateTime<Utc>,
    /// Linked executions not finished yet (no terminal report).
    pub in_flight: i64,
    /// When the oldest of them was linked; `None` when there are none.
    pub oldest_in_flight_since: Option<DateTime<Utc>>,
    /// Deliveries (continuations and notices) waiting or being retried.
    pub pending_deliveries: i64,
    /// Deliveries that ended `failed` within [`RECENT`].
    pub failed_deliveries: i64,
    /// Executions settled `dropped` within [`RECENT`].
    pub dropped: i64,
    /// Notices that reached no one (ever): the agent's delivery ended
    /// `failed` or `dropped`, and the operator's channel has no row for it
    /// or ended `failed`, `expired` or `none`.
    pub undelivered_notices: i64,
    /// Continuations delivered in each of the last [`CHART_HOURS`] hours,
    /// the oldest hour first, the hour ending at `at` last.
    pub continuations_by_hour: Vec<i64>,
    /// Pickups measured within [`PICKUP_WINDOW`]: one per execution of a
    /// continuation delivered then, from its `finished_at` to the
    /// continuation's `delivered_at`.
    pub pickups: i64,
    /// Their median, in milliseconds; `None` without pickups.
    pub pickup_p50_ms: Option<i64>,
    /// Their 99th percentile, in milliseconds; `None` without pickups.
    pub pickup_p99_ms: Option<i64>,
}

impl Pulse {
    /// Continuations delivered in the last hour.
    pub fn continuations_last_hour(&self) -> i64 {
        self.continuations_by_hour.last().copied().unwrap_or(0)
    }
}

/// `$1` now − [`RECENT`]. Each count is its own index range; the
/// partial indexes' own conditions are repeated verbatim, because SQLite
/// uses a partial index only for a query that states its condition.
const COUNTS: &str = "SELECT \
    (SELECT COUNT(*) FROM nomos_deliveries WHERE state = 'pending') AS pending, \
    (SELECT COUNT(*) FROM nomos_deliveries WHERE state <> 'pending' AND state = 'failed' \
       AND kind IN ('continuation', 'notice') AND updated_at >= $1) AS failed, \
    (SELECT COUNT(*) FROM nomos_plan_executions WHERE outcome IN ('dropped', 'failed') \
       AND outcome = 'dropped' AND continued_at >= $1) AS dropped, \
    (SELECT COUNT(*) FROM nomos_deliveries d \
       LEFT JOIN nomos_operator_notices o ON o.notice_id = d.id \
       WHERE d.state <> 'pending' AND d.state IN ('failed', 'dropped') AND d.kind = 'notice' \
         AND (o.notice_id IS NULL OR o.state IN ('failed', 'expired', 'none'))) AS undelivered";

/// Served by the seed's partial index on unsettled links.
const IN_FLIGHT: &str = "SELECT COUNT(*) AS n, MIN(l.created_at) AS oldest \
     FROM nomos_plan_executions l LEFT JOIN executions e ON e.id = l.execution_id \
     WHERE l.continued_at IS NULL AND e.finished_at IS NULL";

/// The hours before `now` ($1) in which continuations were delivered since
/// `$2`. A delivered row's `updated_at` is its `delivered_at` (nothing
/// updates it after), so both the range and the hour are read from the
/// index of ended rows alone (an index-only scan: 15,000 deliveries a day
/// are not read from the table).
fn by_hour(backend: Backend) -> String {
    let age = backend.pick(
        "FLOOR(EXTRACT(EPOCH FROM ($1 - updated_at)) / 3600)",
        "(($1 - updated_at) / 3600000000)",
    );
    format!(
        "SELECT CAST({age} AS BIGINT) AS ago, COUNT(*) AS n FROM nomos_deliveries \
         WHERE state <> 'pending' AND state = 'delivered' AND kind = 'continuation' \
           AND updated_at >= $2 AND updated_at <= $1 \
         GROUP BY 1"
    )
}

/// Pickup times in microseconds of the continuations delivered in
/// (`$1`, `$2`], as a relation `p(micros)`.
fn pickups(backend: Backend) -> String {
    let from = backend.pick(
        "nomos_deliveries d JOIN executions e ON e.id = ANY(d.execution_ids)",
        "nomos_deliveries d, json_each(d.execution_ids) AS j \
         JOIN executions e ON e.id = j.value",
    );
    let micros = backend.pick(
        "CAST(EXTRACT(EPOCH FROM (d.delivered_at - e.finished_at)) * 1000000 AS BIGINT)",
        "(d.delivered_at - e.finished_at)",
    );
    format!(
        "(SELECT {micros} AS micros FROM {from} \
          WHERE d.state <> 'pending' AND d.state = 'delivered' AND d.kind = 'continuation' \
            AND d.updated_at > $1 \
            AND d.delivered_at > $1 AND d.delivered_at <= $2 \
            AND e.finished_at IS NOT NULL) AS p"
    )
}

/// The nearest-rank position of percentile `p` (in percent) among `n`
/// values: `ceil(p·n/100) − 1`.
pub(crate) fn rank(p: i64, n: i64) -> i64 {
    ((p * n + 99) / 100 - 1).max(0)
}

impl Store {
    /// The overview strip at `now` (see [`Pulse`]).
    pub async fn pulse(&self, now: DateTime<Utc>) -> Result<Pulse> {
        let now = trunc(now);
        let since = now - RECENT;
        let counts = query(COUNTS).bind(since).fetch_one(self).await?;
        let flight = query(IN_FLIGHT).fetch_one(self).await?;
        let mut chart = vec![0; CHART_HOURS];
        let hours = query(by_hour(self.backend()))
            .bind(now)
            .bind(since)
            .fetch_all(self)
            .await?;
        for row in &hours {
            let ago = row.bigint("ago")?;
            // A delivery exactly 24 hours old falls in the oldest hour.
            let ago = usize::try_from(ago).unwrap_or(0).min(CHART_HOURS - 1);
            chart[CHART_HOURS - 1 - ago] += row.bigint("n")?;
        }
        let (pickups, p50, p99) = self.pickups(now - PICKUP_WINDOW, now).await?;
        Ok(Pulse {
            at: now,
            in_flight: flight.bigint("n")?,
            oldest_in_flight_since: flight.opt_time("oldest")?,
            pending_deliveries: counts.bigint("pending")?,
            failed_deliveries: counts.bigint("failed")?,
            dropped: counts.bigint("dropped")?,
            undelivered_notices: counts.bigint("undelivered")?,
            continuations_by_hour: chart,
            pickups,
            pickup_p50_ms: p50,
            pickup_p99_ms: p99,
        })
    }

    /// How many pickups fall in (`from`, `to`], and their p50 and p99 in
    /// milliseconds.
    async fn pickups(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<(i64, Option<i64>, Option<i64>)> {
        let relation = pickups(self.backend());
        let n = query(format!("SELECT COUNT(*) AS n FROM {relation}"))
            .bind(from)
            .bind(to)
            .fetch_one(self)
            .await?
            .bigint("n")?;
        if n == 0 {
            return Ok((0, None, None));
        }
        let sql = format!("SELECT micros FROM {relation} ORDER BY micros LIMIT 1 OFFSET $3");
        let mut at = [None, None];
        for (slot, p) in at.iter_mut().zip([50, 99]) {
            let row = query(sql.as_str())
                .bind(from)
                .bind(to)
                .bind(rank(p, n))
                .fetch_optional(self)
                .await?;
            if let Some(row) = row {
                *slot = Some(row.bigint("micros")? / 1000);
            }
        }
        Ok((n, at[0], at[1]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_rank_is_the_ceiling_of_p_n() {
        assert_eq!(rank(50, 1), 0);
        assert_eq!(rank(50, 4), 1);
        assert_eq!(rank(50, 5), 2);
        assert_eq!(rank(99, 100), 98);
        assert_eq!(rank(99, 101), 99);
        assert_eq!(rank(99, 1), 0);
    }
}
