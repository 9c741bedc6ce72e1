-- no-transaction
-- 024_sessions_history: lists the sessions that existed before 018's
-- triggers, each at its earliest link or window.
--
-- One DO block, outside a transaction, so it can commit every thousand
-- sessions: a link inserted meanwhile for a session this migration has just
-- listed waits (ON CONFLICT on an uncommitted row) only until that batch
-- commits, never for the whole history. It reads the link table through
-- its session index (020) and takes no lock that blocks writes. A session
-- the trigger listed first keeps its row unless the history is older (only
-- then is the row written, and locked). Interrupted, the migration is not
-- recorded and runs again from the start; rows already right are read,
-- not written.
DO $$
DECLARE
    last_id UUID := '00000000-0000-0000-0000-000000000000';
    batch UUID[];
BEGIN
    LOOP
        SELECT array_agg(session_id ORDER BY session_id) INTO batch FROM (
            SELECT DISTINCT session_id FROM nomos_plan_executions
            WHERE session_id > last_id ORDER BY session_id LIMIT 1000) AS next;
        EXIT WHEN batch IS NULL;
        INSERT INTO nomos_sessions AS s (session_id, first_seen_at)
        SELECT session_id, MIN(created_at) FROM nomos_plan_executions
        WHERE session_id = ANY (batch) GROUP BY session_id ORDER BY session_id
        ON CONFLICT (session_id) DO UPDATE
            SET first_seen_at = EXCLUDED.first_seen_at
            WHERE EXCLUDED.first_seen_at < s.first_seen_at;
        last_id := batch[array_length(batch, 1)];
        COMMIT;
    END LOOP;
    last_id := '00000000-0000-0000-0000-000000000000';
    LOOP
        SELECT array_agg(session_id ORDER BY session_id) INTO batch FROM (
            SELECT session_id FROM nomos_assent_windows
            WHERE session_id > last_id ORDER BY session_id LIMIT 1000) AS next;
        EXIT WHEN batch IS NULL;
        INSERT INTO nomos_sessions AS s (session_id, first_seen_at)
        SELECT session_id, opened_at FROM nomos_assent_windows
        WHERE session_id = ANY (batch) ORDER BY session_id
        ON CONFLICT (session_id) DO UPDATE
            SET first_seen_at = EXCLUDED.first_seen_at
            WHERE EXCLUDED.first_seen_at < s.first_seen_at;
        last_id := batch[array_length(batch, 1)];
        COMMIT;
    END LOOP;
END
$$;
