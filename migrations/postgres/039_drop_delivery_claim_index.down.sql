-- no-transaction
-- Reverses 039: 020's index, rebuilt without blocking writes.
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_nomos_deliveries_claim
    ON nomos_deliveries (next_attempt_at) WHERE state = 'pending';
