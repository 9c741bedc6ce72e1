-- 028_link_ended_index (SQLite mirror): links settled dropped or failed, by
-- the time they were settled (see the PostgreSQL 028).
CREATE INDEX IF NOT EXISTS idx_nomos_plan_exec_ended
    ON nomos_plan_executions (outcome, continued_at)
    WHERE outcome IN ('dropped', 'failed');
