-- no-transaction
-- 037_link_unparked_index: the worker's frequent poll (unsettled, unplanned,
-- not parked as running; see 036) in (created_at, execution_id) order,
-- covering, partial. Built CONCURRENTLY for the same reasons as 030, one
-- statement in this file.
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_nomos_plan_exec_unparked
    ON nomos_plan_executions (created_at, execution_id) INCLUDE (session_id)
    WHERE continued_at IS NULL AND delivery_id IS NULL AND parked IS NULL;
