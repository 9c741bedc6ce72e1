-- no-transaction
-- 039_drop_delivery_claim_index: every query that read 020's index filters
-- on the kind too and is served by 038's, so 020's only costs writes.
DROP INDEX CONCURRENTLY IF EXISTS idx_nomos_deliveries_claim;
