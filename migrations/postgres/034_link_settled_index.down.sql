-- no-transaction
-- Reverses 034 without blocking the runtime's writes to its link table.
DROP INDEX CONCURRENTLY IF EXISTS idx_nomos_plan_exec_settled;
