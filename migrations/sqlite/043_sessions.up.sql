-- 043_sessions (SQLite mirror): one row per session, kept by triggers (see
-- the PostgreSQL text for why). Row triggers: SQLite has no statement
-- triggers; INSERT OR IGNORE leaves a listed session alone.
CREATE TABLE IF NOT EXISTS nomos_sessions (
    session_id TEXT PRIMARY KEY,
    first_seen_at INTEGER NOT NULL
);

CREATE INDEX IF NOT EXISTS idx_nomos_sessions_newest
    ON nomos_sessions (first_seen_at, session_id);

CREATE TRIGGER IF NOT EXISTS nomos_sessions_from_links
AFTER INSERT ON nomos_plan_executions
BEGIN
    INSERT OR IGNORE INTO nomos_sessions (session_id, first_seen_at)
    VALUES (NEW.session_id, NEW.created_at);
END;

CREATE TRIGGER IF NOT EXISTS nomos_sessions_from_windows
AFTER INSERT ON nomos_assent_windows
BEGIN
    INSERT OR IGNORE INTO nomos_sessions (session_id, first_seen_at)
    VALUES (NEW.session_id, NEW.opened_at);
END;
