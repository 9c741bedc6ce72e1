-- Reverses 017.
DROP INDEX IF EXISTS idx_nomos_plan_exec_pending;
DROP TABLE IF EXISTS nomos_plan_executions;
