-- 043_sessions: one row per session, for the console's list of sessions.
--
-- A session has no row of its own elsewhere: it is a session id on links,
-- windows, deliveries and notices. Listing sessions a page at a time from
-- those (a DISTINCT over every link) would read the whole link table, so
-- the console reads this table instead, newest first.
--
-- Triggers keep it, not the store's Rust: the runtime beside this process
-- may insert links into the seed's table itself, and a replica of the
-- previous release, still running during a rolling deploy, knows nothing
-- of this table. Both are covered by a trigger. The triggers run once per
-- statement over its transition table (a bulk insert of links costs one
-- upsert per session, not per row), and copy the time from the row, which
-- the writer stamped (no database clock). ON CONFLICT DO NOTHING takes no
-- lock on a session already listed, so a session's later links never wait
-- on one another here. New sessions are inserted in id order, so two
-- statements that both bring several new sessions cannot deadlock.
--
-- CREATE TRIGGER takes SHARE ROW EXCLUSIVE on the link table for an
-- instant; while it waits, inserts queue behind it, so it waits at most
-- 500 ms and `migrate` retries (as 018). History is listed by 044, outside
-- this transaction.
SET LOCAL lock_timeout = '500ms';

CREATE TABLE IF NOT EXISTS nomos_sessions (
    session_id UUID PRIMARY KEY,
    first_seen_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX IF NOT EXISTS idx_nomos_sessions_newest
    ON nomos_sessions (first_seen_at, session_id);

CREATE OR REPLACE FUNCTION nomos_sessions_from_links() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO nomos_sessions (session_id, first_seen_at)
    SELECT session_id, MIN(created_at) FROM nomos_new_links
    GROUP BY session_id ORDER BY session_id
    ON CONFLICT (session_id) DO NOTHING;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION nomos_sessions_from_windows() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO nomos_sessions (session_id, first_seen_at)
    SELECT session_id, MIN(opened_at) FROM nomos_new_windows
    GROUP BY session_id ORDER BY session_id
    ON CONFLICT (session_id) DO NOTHING;
    RETURN NULL;
END
$$;

CREATE TRIGGER nomos_sessions_from_links
    AFTER INSERT ON nomos_plan_executions
    REFERENCING NEW TABLE AS nomos_new_links
    FOR EACH STATEMENT EXECUTE FUNCTION nomos_sessions_from_links();

CREATE TRIGGER nomos_sessions_from_windows
    AFTER INSERT ON nomos_assent_windows
    REFERENCING NEW TABLE AS nomos_new_windows
    FOR EACH STATEMENT EXECUTE FUNCTION nomos_sessions_from_windows();
