-- no-transaction
-- Reverses 027 without blocking writes to the link table.
DROP INDEX CONCURRENTLY IF EXISTS idx_nomos_plan_exec_ended;
