-- no-transaction
-- 031_link_session_index: per-session listing (still-running executions,
-- GET /v1/sessions/{id}, paged in (created_at, execution_id) order). Built
-- CONCURRENTLY, one statement per file, for the reasons in 030.
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_nomos_plan_exec_session
    ON nomos_plan_executions (session_id, created_at, execution_id);
