-- no-transaction
-- Reverses 020 without blocking writes to the link table.
DROP INDEX CONCURRENTLY IF EXISTS idx_nomos_plan_exec_session;
