-- 019_link_ready_index (SQLite mirror): the worker's poll, unsettled and
-- unplanned links in (created_at, execution_id) order, read in order so the
-- LIMIT stops early (see the PostgreSQL 019; session_id is a trailing key
-- column because SQLite has no INCLUDE). SQLite has no CONCURRENTLY: one
-- process owns the file, and the build holds its write lock.
CREATE INDEX IF NOT EXISTS idx_nomos_plan_exec_ready
    ON nomos_plan_executions (created_at, execution_id, session_id)
    WHERE continued_at IS NULL AND delivery_id IS NULL;
