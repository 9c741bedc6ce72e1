-- no-transaction
-- 033_windows_ended_index: assent windows by the time they end, so the
-- retention of settled history (`--history-retention`, host/src/store/
-- retention.rs) deletes ended windows a bounded batch at a time without
-- reading the table: one window a session, so it grows with every session.
-- Built CONCURRENTLY, one statement per file, for the reasons in 019.
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_nomos_assent_windows_expires
    ON nomos_assent_windows (expires_at);
