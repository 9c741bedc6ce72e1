-- no-transaction
-- Reverses 027 without blocking writes to the ledger.
DROP INDEX CONCURRENTLY IF EXISTS idx_nomos_deliveries_ended;
