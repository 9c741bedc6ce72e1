//! Everything about one session, for `GET /v1/sessions/{id}` and `status`.

use uuid::Uuid;

use super::decode;
use super::dialect::query;
use super::links::LINK_COLS;
use super::types::SessionSummary;
use super::{Result, Store};

impl Store {
    /// The session's window, all its links with their state (oldest first)
    /// and its ledger (newest first).
    ///
    /// An unknown session is not an error: the summary is empty
    /// ([`SessionSummary::is_empty`]) and the caller decides whether that is
    /// a 404. Several reads, not one snapshot: for display only.
    pub async fn session_summary(&self, session_id: Uuid) -> Result<SessionSummary> {
        let window = self.window(session_id).await?;
        let sql = format!(
            "SELECT {LINK_COLS} FROM nomos_plan_executions l \
             LEFT JOIN executions e ON e.id = l.execution_id \
             WHERE l.session_id = $1 ORDER BY l.created_at, l.execution_id"
        );
        let rows = query(sql).bind(session_id).fetch_all(self).await?;
        let links = rows.iter().map(decode::link).collect::<Result<Vec<_>>>()?;
        let deliveries = self.deliveries_for_session(session_id).await?;
        Ok(SessionSummary {
            session_id,
            window,
            links,
            deliveries,
        })
    }
}
