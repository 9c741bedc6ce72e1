-- no-transaction
-- 019_link_ready_index: the worker's poll index, built without blocking the
-- runtime's inserts into the seed's table.
--
-- The worker's poll (Store::pending_links_ready): unsettled, unplanned links
-- in (created_at, execution_id) order. The seed's index covers
-- continued_at IS NULL but not the order's tie-breaker nor delivery_id, so
-- with it the planner fetches and sorts every pending row before the LIMIT
-- (its statistics cannot see a few hundred NULLs among millions of rows, so
-- it believes there is one). This one is read in order, covers the columns
-- the poll needs (index-only scan), and stops after LIMIT rows. Partial, so
-- it holds only the links still waiting, however long the history (see
-- BENCHMARKS.md, "Claim query vs history size").
--
-- CONCURRENTLY takes SHARE UPDATE EXCLUSIVE, which does not conflict with
-- INSERT/UPDATE/DELETE, and cannot run in a transaction: hence the first line,
-- and one statement per file (PostgreSQL runs several statements sent
-- together as one implicit transaction). If the build is interrupted it
-- leaves an INVALID index of this name that IF NOT EXISTS would then accept:
-- `nomos-continue migrate` drops such a leftover before running the migration
-- again (see Store::migrate and docs/operations.md).
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_nomos_plan_exec_ready
    ON nomos_plan_executions (created_at, execution_id) INCLUDE (session_id)
    WHERE continued_at IS NULL AND delivery_id IS NULL;
