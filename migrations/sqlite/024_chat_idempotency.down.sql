-- Reverses 024 (DROP COLUMN needs SQLite 3.35; the index on it goes first).
DROP TABLE IF EXISTS nomos_notices;
DROP INDEX IF EXISTS idx_nomos_chat_turns_key;
ALTER TABLE nomos_chat_turns DROP COLUMN idempotency_key;
