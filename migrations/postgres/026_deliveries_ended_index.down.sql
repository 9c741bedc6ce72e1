-- no-transaction
-- Reverses 026 without blocking writes to the ledger.
DROP INDEX CONCURRENTLY IF EXISTS idx_nomos_deliveries_ended;
