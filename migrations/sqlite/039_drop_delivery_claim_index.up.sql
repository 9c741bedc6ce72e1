-- 039_drop_delivery_claim_index (SQLite mirror): 038's index replaces 020's.
DROP INDEX IF EXISTS idx_nomos_deliveries_claim;
