-- 035_notice_session_index (SQLite mirror): a session's notices in id order.
CREATE INDEX IF NOT EXISTS idx_nomos_notices_session
    ON nomos_notices (session_id, id);
