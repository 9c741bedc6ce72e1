-- 033_windows_ended_index (SQLite mirror): assent windows by the time they
-- end, for the retention of settled history (see the PostgreSQL 033).
CREATE INDEX IF NOT EXISTS idx_nomos_assent_windows_expires
    ON nomos_assent_windows (expires_at);
