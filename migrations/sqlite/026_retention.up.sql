-- 026_retention: the indexes the retention pass reads (host/src/store/
-- retention.rs), so each bounded batch finds its oldest rows without
-- scanning the history. The ledger's index holds only the rows still to
-- scrub: a scrubbed row (empty note, no error) leaves it, so its cost is
-- what is left to do, not the ledger's size.
CREATE INDEX IF NOT EXISTS idx_nomos_deliveries_scrub
    ON nomos_deliveries (updated_at)
    WHERE state <> 'pending' AND (note <> '' OR last_error IS NOT NULL);

CREATE INDEX IF NOT EXISTS idx_nomos_chat_turns_created ON nomos_chat_turns (created_at);

CREATE INDEX IF NOT EXISTS idx_nomos_notices_created ON nomos_notices (created_at);
