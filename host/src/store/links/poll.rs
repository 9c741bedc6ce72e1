//! The worker's poll of the ready links: unsettled, unplanned links whose
//! execution has reported, in link order, read from a partial index of
//! live links with each execution probed by its key.

use crate::store::decode;
use crate::store::dialect::query;
use crate::store::types::{PendingCursor, ReadyLink};
use crate::store::{Backend, Result, Store};

/// The worker's poll, `$1` being the limit, `$2` the active policy
/// revision, `$probe` how each link's execution is read (alias `e`, with
/// `status`, `result`, `updated_at` and `finished_at`), and `$after`
/// the condition that starts a later page after a cursor. A link whose
/// status that revision has classified as running (a row of
/// `nomos_status_classes`) is not read: running executions never fill a
/// page, so a finished one behind any number of them is read in the next
/// pass. A status not classified yet is read, classified in the pass, and
/// left out from then on. A person's state (`person` set) is read, so the
/// planner can tell the operator once and park it.
///
/// The links are read in order from a partial index of live links (019,
/// 022), and each one's execution is probed by its key: never a join the
/// planner may turn into a read of every execution ever reported.
macro_rules! pending_links {
    ($probe:expr, $parked:expr, $after:expr) => {
        concat!(
            "SELECT l.execution_id, l.session_id, l.created_at, e.status, \
               CAST(COALESCE(octet_length(e.result), 0) AS BIGINT) AS result_bytes, \
               COALESCE(e.updated_at, e.finished_at, l.created_at) AS updated_at, \
               e.finished_at \
             FROM nomos_plan_executions l ",
            $probe,
            " WHERE l.continued_at IS NULL AND l.delivery_id IS NULL ",
            $parked,
            " AND e.status IS NOT NULL \
               AND NOT EXISTS (SELECT 1 FROM nomos_status_classes c \
                   WHERE c.revision = $2 AND c.status = e.status AND NOT c.terminal \
                     AND c.person IS NULL) ",
            $after,
            " ORDER BY l.created_at, l.execution_id LIMIT $1"
        )
    };
}

/// Each link's execution, probed by its key (see [`pending_links`]), with
/// the fallbacks for a runtime's own `executions` relation (see
/// [`Store::poll_links`]). PostgreSQL: a `LATERAL` subquery the planner
/// cannot flatten (see [`link_joins`](super::link_joins)). SQLite: `CROSS JOIN`, which SQLite
/// never reorders, so the link table stays the outer loop.
macro_rules! probe_execution {
    (postgres) => {
        "CROSS JOIN LATERAL (SELECT x.status, x.result, x.updated_at, x.finished_at \
           FROM executions x WHERE x.id = l.execution_id OFFSET 0) e"
    };
    (sqlite) => {
        "CROSS JOIN executions e ON e.id = l.execution_id"
    };
}

/// The condition that starts a later page after the cursor `($3, $4)` =
/// (link time, execution id).
macro_rules! after_cursor {
    () => {
        "AND l.created_at >= $3 AND (l.created_at, l.execution_id) > ($3, $4)"
    };
}

/// Which links a poll reads: its first page and its later pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Poll {
    /// Every unsettled, unplanned link that has reported, parked or not:
    /// the worker's periodic sweep.
    Sweep,
    /// Only links not parked as running (the `parked` column), by the index on
    /// exactly that predicate: the worker's frequent pass, whose cost does
    /// not grow with the executions that stay running.
    Unparked,
}

/// The four reads of a poll in one dialect: (sweep, unparked) × (first
/// page, later page).
macro_rules! polls {
    ($dialect:tt) => {
        [
            pending_links!(probe_execution!($dialect), "", ""),
            pending_links!(probe_execution!($dialect), "", after_cursor!()),
            pending_links!(probe_execution!($dialect), "AND l.parked IS NULL", ""),
            pending_links!(
                probe_execution!($dialect),
                "AND l.parked IS NULL",
                after_cursor!()
            ),
        ]
    };
}

const PG_POLLS: [&str; 4] = polls!(postgres);
const LITE_POLLS: [&str; 4] = polls!(sqlite);

/// The first page of the worker's sweep on PostgreSQL, shared with the
/// benchmark's `EXPLAIN` so that what is measured is what runs.
#[cfg(feature = "test-support")]
pub(crate) const PENDING_LINKS: &str = PG_POLLS[0];

impl Poll {
    fn sql(self, after: bool, backend: Backend) -> &'static str {
        let i = match self {
            Self::Sweep => 0,
            Self::Unparked => 2,
        } + usize::from(after);
        backend.pick(PG_POLLS[i], LITE_POLLS[i])
    }
}

impl Store {
    /// [`Store::poll_links`] sweeping: every ready link, parked or not.
    #[cfg(feature = "test-support")]
    pub async fn pending_links_ready(
        &self,
        after: Option<PendingCursor>,
        limit: i64,
        revision: &str,
    ) -> Result<Vec<ReadyLink>> {
        self.poll_links(Poll::Sweep, after, limit, revision).await
    }

    /// The worker's poll of the links `poll` names (parked ones too on a
    /// sweep): links neither settled nor planned whose execution
    /// has reported (a row in `executions` with a status), joined with that
    /// row, in link order `(created_at, execution_id)`, at most `limit`.
    ///
    /// Served by the partial index `idx_nomos_plan_exec_ready` (migration
    /// 019: same predicate, read in order), so its cost depends on `limit`
    /// and on the links still running, not on history (see BENCHMARKS.md).
    /// Links whose status `revision` (the active policy revision) has
    /// classified as running are left out, so they can never starve a
    /// finished link behind them; other statuses are returned raw, and the
    /// policy decides what is terminal. Pass the [`ReadyLink::cursor`] of
    /// the last row as `after` to read the next page. Links whose execution
    /// has not reported yet are not returned (there is nothing to decide).
    ///
    /// The `executions` row may come from a runtime's own relation (see
    /// `executions.rs`): a NULL result reads as `""`, a NULL `updated_at` as
    /// `finished_at` or else the link's time, and a row that still does not
    /// decode is skipped with a warning. Skipping never shortens a page:
    /// the read goes on after the skipped rows until `limit` rows decoded or
    /// the links ran out, so a short page still means "no more" and the
    /// worker neither stops paging early nor reads the same rows again.
    pub async fn poll_links(
        &self,
        poll: Poll,
        after: Option<PendingCursor>,
        limit: i64,
        revision: &str,
    ) -> Result<Vec<ReadyLink>> {
        let mut out = Vec::new();
        let mut cursor = after;
        loop {
            let want = limit - out.len() as i64;
            let rows = match cursor {
                None => query(poll.sql(false, self.backend()))
                    .bind(want)
                    .bind(revision),
                Some(c) => query(poll.sql(true, self.backend()))
                    .bind(want)
                    .bind(revision)
                    .bind(c.linked_at)
                    .bind(c.execution_id),
            }
            .fetch_all(self)
            .await?;
            let fetched = rows.len();
            let last = decode::ready_page(&rows, &mut out)?;
            // A short read is the end; otherwise read on only if rows were
            // skipped. Each round starts after the last row fetched, so the
            // loop ends.
            let short = (fetched as i64) < want;
            match last {
                Some(c) if !short && (out.len() as i64) < limit => cursor = Some(c),
                _ => return Ok(out),
            }
        }
    }
}
