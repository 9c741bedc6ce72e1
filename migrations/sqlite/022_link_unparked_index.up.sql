-- 022_link_unparked_index (SQLite mirror): the worker's frequent poll,
-- unsettled, unplanned and unparked links in poll order (see the PostgreSQL
-- 022 and 019).
CREATE INDEX IF NOT EXISTS idx_nomos_plan_exec_unparked
    ON nomos_plan_executions (created_at, execution_id, session_id)
    WHERE continued_at IS NULL AND delivery_id IS NULL AND parked IS NULL;
