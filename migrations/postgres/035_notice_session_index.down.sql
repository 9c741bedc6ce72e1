-- no-transaction
-- Reverses 035 without blocking writes to the notice table.
DROP INDEX CONCURRENTLY IF EXISTS idx_nomos_notices_session;
