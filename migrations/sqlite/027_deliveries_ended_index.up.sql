-- 027_deliveries_ended_index (SQLite mirror): ended deliveries by state,
-- kind and the time they ended, for the overview (see the PostgreSQL 027).
CREATE INDEX IF NOT EXISTS idx_nomos_deliveries_ended
    ON nomos_deliveries (state, kind, updated_at) WHERE state <> 'pending';
