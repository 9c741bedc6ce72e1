-- 017_nomos_plan_executions.up.sql (SQLite mirror of the PostgreSQL migration)
-- Links a gated execution back to the chat session that initiated it, so the
-- auto-continuation worker can re-invoke the agent for that session when the
-- (asynchronous) execution finishes. No hard FK to the execution entity: the
-- link is recorded from tool-result text and must not race its creation.
--
-- SQLite representation, used by every SQLite migration and by the store:
-- UUIDs are TEXT in lowercase hyphenated form; times are INTEGER microseconds
-- since the Unix epoch (UTC), so they compare and sort as numbers (RFC 3339
-- text with varying fractional digits would not).
CREATE TABLE IF NOT EXISTS nomos_plan_executions (
    execution_id TEXT PRIMARY KEY NOT NULL,
    session_id TEXT NOT NULL,
    -- when the link was settled (NULL = not yet); see 018
    continued_at INTEGER,
    created_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER))
);

-- Worker query: links not yet settled. The partial index keeps the poll cheap
-- as history accumulates.
CREATE INDEX IF NOT EXISTS idx_nomos_plan_exec_pending
    ON nomos_plan_executions (created_at)
    WHERE continued_at IS NULL;
