-- Reverses 039.
CREATE INDEX IF NOT EXISTS idx_nomos_deliveries_claim
    ON nomos_deliveries (next_attempt_at) WHERE state = 'pending';
