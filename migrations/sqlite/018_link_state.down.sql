-- Reverses 018.
DROP INDEX IF EXISTS idx_nomos_plan_exec_delivery;
DROP INDEX IF EXISTS idx_nomos_plan_exec_ready;
DROP INDEX IF EXISTS idx_nomos_plan_exec_session;
ALTER TABLE nomos_plan_executions DROP COLUMN reason;
ALTER TABLE nomos_plan_executions DROP COLUMN outcome;
ALTER TABLE nomos_plan_executions DROP COLUMN delivery_id;
