//! Whole-deployment counts for `nomos-continue status` and the demo's
//! summary, read from the tables rather than from in-memory counters, so
//! they hold across restarts and replicas.

use serde::Serialize;

use super::deliveries::delivery_cols;
use super::types::Delivery;
use super::{decode, Db, Result, Store};

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

const COUNTS: &str = "SELECT \
    (SELECT COUNT(*) FROM nomos_plan_executions WHERE continued_at IS NULL), \
    (SELECT COUNT(*) FROM nomos_plan_executions WHERE outcome = 'continued'), \
    (SELECT COUNT(*) FROM nomos_plan_executions WHERE outcome = 'dropped'), \
    (SELECT COUNT(*) FROM nomos_plan_executions WHERE outcome = 'failed'), \
    (SELECT COUNT(*) FROM nomos_deliveries WHERE kind = 'continuation' AND state = 'delivered'), \
    (SELECT COUNT(*) FROM nomos_deliveries WHERE state = 'pending'), \
    (SELECT COUNT(*) FROM nomos_deliveries WHERE state = 'failed'), \
    (SELECT COUNT(*) FROM nomos_deliveries WHERE kind = 'notice' AND state = 'delivered')";

type Counts = (i64, i64, i64, i64, i64, i64, i64, i64);

impl Store {
    /// Counts of links and deliveries by state, over every session.
    pub async fn overview(&self) -> Result<Overview> {
        let c: Counts = match &self.db {
            Db::Pg(pool) => sqlx::query_as(COUNTS).fetch_one(pool).await?,
            Db::Lite(pool) => sqlx::query_as(COUNTS).fetch_one(pool).await?,
        };
        Ok(Overview {
            pending_links: c.0,
            continued_links: c.1,
            dropped_links: c.2,
            failed_links: c.3,
            continuations_delivered: c.4,
            deliveries_pending: c.5,
            deliveries_failed: c.6,
            notices_delivered: c.7,
        })
    }

    /// The newest ledger rows over every session.
    pub async fn recent_deliveries(&self, limit: i64) -> Result<Vec<Delivery>> {
        let rows = match &self.db {
            Db::Pg(pool) => sqlx::query(concat!(
                "SELECT ",
                delivery_cols!(),
                " FROM nomos_deliveries ORDER BY created_at DESC, id LIMIT $1"
            ))
            .bind(limit)
            .fetch_all(pool)
            .await?
            .iter()
            .map(decode::delivery)
            .collect(),
            Db::Lite(pool) => sqlx::query(concat!(
                "SELECT ",
                delivery_cols!(),
                " FROM nomos_deliveries ORDER BY created_at DESC, id LIMIT ?1"
            ))
            .bind(limit)
            .fetch_all(pool)
            .await?
            .iter()
            .map(decode::delivery)
            .collect(),
        };
        rows
    }
}
