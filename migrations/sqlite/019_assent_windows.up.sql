-- 019_assent_windows (SQLite mirror): one assent window per chat session.
-- The 30-minute ceiling is enforced by Store::approve; see the PostgreSQL
-- migration for the semantics.
CREATE TABLE nomos_assent_windows (
    session_id TEXT PRIMARY KEY NOT NULL,
    opened_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    route TEXT NOT NULL CHECK (route IN ('button', 'chat', 'api')),
    continuations INTEGER NOT NULL DEFAULT 0 CHECK (continuations >= 0),
    closed_at INTEGER,
    updated_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER))
);
