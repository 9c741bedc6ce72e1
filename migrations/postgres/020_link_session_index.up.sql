-- no-transaction
-- 020_link_session_index: per-session listing (still-running executions,
-- GET /v1/sessions/{id}, paged in (created_at, execution_id) order), and
-- what 024 reads to list the history's sessions. Built CONCURRENTLY, one
-- statement per file, for the reasons in 019. It covers every row, so it is
-- the slowest of the four builds on a long history.
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_nomos_plan_exec_session
    ON nomos_plan_executions (session_id, created_at, execution_id);
