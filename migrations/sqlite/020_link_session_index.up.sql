-- 020_link_session_index (SQLite mirror): per-session listing.
CREATE INDEX IF NOT EXISTS idx_nomos_plan_exec_session
    ON nomos_plan_executions (session_id, created_at, execution_id);
