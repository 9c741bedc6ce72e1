-- Reverses 039 (SQLite mirror).
DROP TABLE IF EXISTS nomos_session_push;
