-- Reverses 017: the link table and its partial index.
DROP INDEX IF EXISTS idx_nomos_plan_exec_pending;
DROP TABLE IF EXISTS nomos_plan_executions;
