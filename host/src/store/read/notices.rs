//! A session's notices as one concept: each is a ledger row of kind
//! `notice` (what the agent is told) with its row in
//! `nomos_operator_notices` (what the operator's channel did with it,
//! migration 025), read a page at a time for `GET /v1/sessions/{id}/notices`
//! and the console.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::store::decode::{self, RowExt};
use crate::store::deliveries::delivery_cols;
use crate::store::dialect::query;
use crate::store::types::{Delivery, DeliveryKind};
use crate::store::{DeliveryCursor, Page, Result, Store};

/// What the operator's channel did with a notice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorDelivery {
    /// `pending`, `delivered`, `failed`, `expired` or `none` (no channel
    /// configured).
    pub state: String,
    /// Failed attempts.
    pub attempts: i32,
    /// The last failure, if any.
    pub last_error: Option<String>,
    /// When the channel accepted it.
    pub delivered_at: Option<DateTime<Utc>>,
    /// When its row last changed.
    pub updated_at: DateTime<Utc>,
}

/// A notice: its delivery to the agent, and its operator row (`None` for
/// a notice written before migration 025).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoticeRow {
    /// The ledger row (kind `notice`).
    pub delivery: Delivery,
    /// The operator channel's row.
    pub operator: Option<OperatorDelivery>,
}

impl NoticeRow {
    /// Whether it reached no one: the agent's delivery ended without
    /// success and the operator's channel never had it or gave up.
    pub fn undelivered(&self) -> bool {
        use crate::store::types::DeliveryState::{Dropped, Failed};
        matches!(self.delivery.state, Failed | Dropped)
            && self
                .operator
                .as_ref()
                .is_none_or(|o| matches!(o.state.as_str(), "failed" | "expired" | "none"))
    }
}

impl Store {
    /// One page of the session's notices, newest first (the ledger's order
    /// and cursor), each with its operator row.
    pub async fn session_notice_deliveries(
        &self,
        session_id: Uuid,
        after: Option<DeliveryCursor>,
        limit: u32,
    ) -> Result<Page<NoticeRow, DeliveryCursor>> {
        let page = self
            .ledger_page(
                session_id,
                Some(DeliveryKind::Notice),
                after,
                limit,
                delivery_cols!(),
                decode::delivery,
            )
            .await?;
        let ids: Vec<Uuid> = page.items.iter().map(|d| d.id).collect();
        let mut operator = self.operator_rows(&ids).await?;
        let items = page
            .items
            .into_iter()
            .map(|delivery| NoticeRow {
                operator: operator
                    .iter()
                    .position(|(id, _)| *id == delivery.id)
                    .map(|at| operator.swap_remove(at).1),
                delivery,
            })
            .collect();
        Ok(Page {
            items,
            next: page.next,
        })
    }

    /// The operator rows of these notices.
    async fn operator_rows(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, OperatorDelivery)>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT notice_id, state, attempts, last_error, delivered_at, updated_at \
             FROM nomos_operator_notices WHERE notice_id {}",
            self.backend().in_ids("$1")
        );
        let rows = query(sql).bind(ids).fetch_all(self).await?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.uuid("notice_id")?,
                    OperatorDelivery {
                        state: r.text("state")?,
                        attempts: r.int("attempts")?,
                        last_error: r.opt_text("last_error")?,
                        delivered_at: r.opt_time("delivered_at")?,
                        updated_at: r.time("updated_at")?,
                    },
                ))
            })
            .collect()
    }
}
