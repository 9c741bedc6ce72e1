DROP INDEX IF EXISTS idx_nomos_deliveries_ended;
