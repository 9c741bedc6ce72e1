-- 024_chat_idempotency (SQLite mirror): the reply's idempotency key on turns
-- (unique per session where set) and a notices table the replay never reads.
ALTER TABLE nomos_chat_turns ADD COLUMN idempotency_key TEXT;

CREATE UNIQUE INDEX idx_nomos_chat_turns_key
    ON nomos_chat_turns (session_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

CREATE TABLE nomos_notices (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    message TEXT NOT NULL,
    created_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)),
    UNIQUE (session_id, idempotency_key)
);
