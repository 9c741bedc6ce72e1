-- Reverses 022.
DROP TABLE IF EXISTS nomos_chat_turns;
