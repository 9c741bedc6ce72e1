-- no-transaction
-- 036_decisions_by_session: the decision log's rows by session, as a hash
-- index (an entry is the key's 4-byte hash and the row's address, half a
-- B-tree entry on a UUID). What reads by session (the console's timeline,
-- `policy replay --session`) asks for equality only and sorts the few rows
-- it finds. It replaces the B-tree on (session_id, id), which 037 drops once
-- this one is built. CONCURRENTLY, one statement per file (see 019): the
-- worker's log writes do not wait for the build.
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_nomos_policy_decisions_by_session
    ON nomos_policy_decisions USING hash (session_id);
