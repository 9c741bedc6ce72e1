-- Reverses 043 (SQLite mirror).
DROP TRIGGER IF EXISTS nomos_sessions_from_links;
DROP TRIGGER IF EXISTS nomos_sessions_from_windows;
DROP TABLE IF EXISTS nomos_sessions;
