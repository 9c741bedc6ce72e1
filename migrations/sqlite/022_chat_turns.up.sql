-- 022_chat_turns (SQLite mirror): the history the built-in chatWith replays.
CREATE TABLE nomos_chat_turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
    content TEXT NOT NULL,
    created_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER))
);

CREATE INDEX idx_nomos_chat_turns_session ON nomos_chat_turns (session_id, id);
