//! Whole-deployment counts for `nomos-continue status` and the demo's
//! summary, read from the tables rather than from in-memory counters, so
//! they hold across restarts and replicas.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::store::decode::{self, RowExt};
use crate::store::deliveries::delivery_cols;
use crate::store::dialect::query;
use crate::store::links::link_outcome;
use crate::store::types::Delivery;
use crate::store::{Result, Store};

/// Counts over every session.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Overview {
    /// Links not yet settled (running, or finished and not yet decided).
    pub pending_links: i64,
    /// Links settled by an agent call.
    pub continued_links: i64,
    /// Links settled without one (window closed, loop guard, policy error).
    pub dropped_links: i64,
    /// Links whose continuation failed for good.
    pub failed_links: i64,
    /// Continuations delivered to the agent.
    pub continuations_delivered: i64,
    /// Deliveries (continuations and notices) waiting or being retried.
    pub deliveries_pending: i64,
    /// Deliveries that failed for good.
    pub deliveries_failed: i64,
    /// Notices delivered.
    pub notices_delivered: i64,
}

/// The link counts read the outcome through `link_outcome!` (history
/// settled before migration 018 counts as continued).
const COUNTS: &str = concat!(
    "SELECT \
    (SELECT COUNT(*) FROM nomos_plan_executions WHERE continued_at IS NULL) AS pending_links, \
    (SELECT COUNT(*) FROM nomos_plan_executions l WHERE ",
    link_outcome!(),
    " = 'continued') AS continued_links, \
    (SELECT COUNT(*) FROM nomos_plan_executions l WHERE ",
    link_outcome!(),
    " = 'dropped') AS dropped_links, \
    (SELECT COUNT(*) FROM nomos_plan_executions l WHERE ",
    link_outcome!(),
    " = 'failed') AS failed_links, \
    (SELECT COUNT(*) FROM nomos_deliveries WHERE kind = 'continuation' AND state = 'delivered') \
      AS continuations_delivered, \
    (SELECT COUNT(*) FROM nomos_deliveries WHERE state = 'pending') AS deliveries_pending, \
    (SELECT COUNT(*) FROM nomos_deliveries WHERE state = 'failed') AS deliveries_failed, \
    (SELECT COUNT(*) FROM nomos_deliveries WHERE kind = 'notice' AND state = 'delivered') \
      AS notices_delivered"
);

/// What an operator alerts on: finished executions whose links are not
/// settled yet (decided, planned or delivering), and how old the oldest is.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Backlog {
    /// Unsettled links whose execution has finished.
    pub finished: i64,
    /// When the oldest of them finished; `None` when there are none.
    pub oldest_finished_at: Option<DateTime<Utc>>,
}

/// Served by the seed's partial index on unsettled links: its cost is the
/// unsettled links, not the history.
const BACKLOG: &str = "SELECT COUNT(*) AS finished, MIN(e.finished_at) AS oldest \
     FROM nomos_plan_executions l JOIN executions e ON e.id = l.execution_id \
     WHERE l.continued_at IS NULL AND e.finished_at IS NOT NULL";

impl Store {
    /// The backlog of finished, unsettled executions (see [`Backlog`]).
    pub async fn backlog(&self) -> Result<Backlog> {
        let row = query(BACKLOG).fetch_one(self).await?;
        Ok(Backlog {
            finished: row.bigint("finished")?,
            oldest_finished_at: row.opt_time("oldest")?,
        })
    }

    /// Counts of links and deliveries by state, over every session.
    pub async fn overview(&self) -> Result<Overview> {
        let c = query(COUNTS).fetch_one(self).await?;
        Ok(Overview {
            pending_links: c.bigint("pending_links")?,
            continued_links: c.bigint("continued_links")?,
            dropped_links: c.bigint("dropped_links")?,
            failed_links: c.bigint("failed_links")?,
            continuations_delivered: c.bigint("continuations_delivered")?,
            deliveries_pending: c.bigint("deliveries_pending")?,
            deliveries_failed: c.bigint("deliveries_failed")?,
            notices_delivered: c.bigint("notices_delivered")?,
        })
    }

    /// The newest ledger rows over every session.
    pub async fn recent_deliveries(&self, limit: i64) -> Result<Vec<Delivery>> {
        let sql = concat!(
            "SELECT ",
            delivery_cols!(),
            " FROM nomos_deliveries ORDER BY created_at DESC, id LIMIT $1"
        );
        let rows = query(sql).bind(limit).fetch_all(self).await?;
        rows.iter().map(decode::delivery).collect()
    }
}
