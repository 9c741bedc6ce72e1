-- no-transaction
-- 039_drop_delivery_claim_index: 038's index serves every query 020's did
-- (same predicate, same leading column), so 020's only costs writes.
DROP INDEX CONCURRENTLY IF EXISTS idx_nomos_deliveries_claim;
