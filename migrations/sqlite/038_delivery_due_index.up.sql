-- 038_delivery_due_index (SQLite mirror): the claim's whole order, so a
-- claim reads due rows in order and stops after its LIMIT (see the
-- PostgreSQL 038).
CREATE INDEX IF NOT EXISTS idx_nomos_deliveries_due
    ON nomos_deliveries (next_attempt_at, created_at, id) WHERE state = 'pending';
