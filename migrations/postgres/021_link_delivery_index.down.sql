-- no-transaction
-- Reverses 021 without blocking writes to the link table.
DROP INDEX CONCURRENTLY IF EXISTS idx_nomos_plan_exec_delivery;
