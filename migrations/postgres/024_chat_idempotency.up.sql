-- 024_chat_idempotency: what the built-in chatWith adapter needs to be
-- idempotent per delivery.
--
-- A continuation can be delivered twice with the same idempotency key (a
-- crash between the model's reply and the worker's commit). The key is stored
-- with the assistant's reply, and the unique index makes a second append with
-- the same key a no-op, so the history never holds two replies to one
-- continuation. Turns the operator records have no key (NULL), which the
-- partial index leaves alone.
ALTER TABLE nomos_chat_turns ADD COLUMN idempotency_key TEXT;

CREATE UNIQUE INDEX idx_nomos_chat_turns_key
    ON nomos_chat_turns (session_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- Notices for the operator (results dropped because the window closed, the
-- loop cap) are kept apart from the turns: they are neither the operator's
-- words nor the agent's, and a table the replay never reads cannot leak them
-- into the model's context. Idempotent per (session, key) like the replies.
CREATE TABLE nomos_notices (
    id BIGSERIAL PRIMARY KEY,
    session_id UUID NOT NULL,
    idempotency_key TEXT NOT NULL,
    message TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (session_id, idempotency_key)
);
