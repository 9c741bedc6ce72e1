-- Reverses 024.
DROP TABLE IF EXISTS nomos_notices;
DROP INDEX IF EXISTS idx_nomos_chat_turns_key;
ALTER TABLE nomos_chat_turns DROP COLUMN IF EXISTS idempotency_key;
