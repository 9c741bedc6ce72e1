-- 039_session_push: a session's A2A push configurations, minted before the
-- runtime sends its message (A2A 1.0 `taskPushNotificationConfig`, 0.3
-- `pushNotificationConfig`, inline in the message's configuration), so
-- every task the agent then creates reports to the session.
-- - token_sha256: the token's SHA-256 (hex); the token itself is never kept.
-- - links_until: a push links a task nobody linked only before this (the
--   window, or the runtime's TTL, at most 7 days); a task it linked keeps
--   reporting after.
-- - tasks_linked: how many tasks this configuration's first pushes linked;
--   their sum bounds the session's (see `Store::link_pushed_task`).
-- A new table of nomos-continue's own: no lock on anything that exists.
CREATE TABLE nomos_session_push (
    token_sha256 TEXT PRIMARY KEY CHECK (token_sha256 ~ '^[0-9a-f]{64}$'),
    session_id UUID NOT NULL,
    links_until TIMESTAMPTZ NOT NULL,
    tasks_linked INTEGER NOT NULL DEFAULT 0 CHECK (tasks_linked >= 0),
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX idx_nomos_session_push_session ON nomos_session_push (session_id);
