-- 039_session_push (SQLite mirror): a session's A2A push configurations
-- (see the PostgreSQL 039).
CREATE TABLE nomos_session_push (
    token_sha256 TEXT PRIMARY KEY NOT NULL
        CHECK (length(token_sha256) = 64 AND token_sha256 NOT GLOB '*[^0-9a-f]*'),
    session_id TEXT NOT NULL,
    links_until INTEGER NOT NULL,
    tasks_linked INTEGER NOT NULL DEFAULT 0 CHECK (tasks_linked >= 0),
    created_at INTEGER NOT NULL
);
CREATE INDEX idx_nomos_session_push_session ON nomos_session_push (session_id);
