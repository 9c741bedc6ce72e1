-- 022_chat_turns: the history the built-in chatWith adapter replays.
--
-- Only real turns are stored: the operator's messages and the agent's replies.
-- The continuation note is injected after the replayed history and never
-- stored as a user turn. id orders the turns of a session.
CREATE TABLE nomos_chat_turns (
    id BIGSERIAL PRIMARY KEY,
    session_id UUID NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
    content TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX idx_nomos_chat_turns_session ON nomos_chat_turns (session_id, id);
