DROP INDEX IF EXISTS idx_nomos_notices_created;
DROP INDEX IF EXISTS idx_nomos_chat_turns_created;
DROP INDEX IF EXISTS idx_nomos_deliveries_scrub;
