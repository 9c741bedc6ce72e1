-- Reverses 038.
DROP INDEX IF EXISTS idx_nomos_deliveries_due;
