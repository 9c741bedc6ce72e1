-- 034_link_settled_index (SQLite mirror): settled links by the time they
-- were settled, for `--link-retention` (see the PostgreSQL 034).
CREATE INDEX IF NOT EXISTS idx_nomos_plan_exec_settled
    ON nomos_plan_executions (continued_at) WHERE continued_at IS NOT NULL;
