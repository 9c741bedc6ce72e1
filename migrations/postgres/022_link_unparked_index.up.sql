-- no-transaction
-- 022_link_unparked_index: the worker's frequent poll (unsettled, unplanned,
-- not parked as running; see parked in 018) in (created_at, execution_id)
-- order, covering, partial. Built CONCURRENTLY, one statement per file, for
-- the reasons in 019.
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_nomos_plan_exec_unparked
    ON nomos_plan_executions (created_at, execution_id) INCLUDE (session_id)
    WHERE continued_at IS NULL AND delivery_id IS NULL AND parked IS NULL;
