-- no-transaction
-- Reverses 028 without blocking writes to the link table.
DROP INDEX CONCURRENTLY IF EXISTS idx_nomos_plan_exec_ended;
