DROP INDEX IF EXISTS idx_nomos_plan_exec_settled;
