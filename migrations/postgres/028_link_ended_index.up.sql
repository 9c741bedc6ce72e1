-- no-transaction
-- 028_link_ended_index: the links settled without a continuation (dropped
-- or failed), by the time they were settled: the overview counts the drops
-- of the last 24 hours on it. Partial, so it holds only those links (a few
-- among the continued history); built CONCURRENTLY, one statement per file,
-- for the reasons in 019.
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_nomos_plan_exec_ended
    ON nomos_plan_executions (outcome, continued_at)
    WHERE outcome IN ('dropped', 'failed');
