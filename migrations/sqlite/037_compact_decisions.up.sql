-- 037_compact_decisions (SQLite mirror): the decision log kept compactly
-- (see the PostgreSQL 037). Times are microseconds, as everywhere here.
-- The B-tree on the time stays (SQLite has no BRIN: see 038).
CREATE TABLE nomos_decision_revisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    hash TEXT NOT NULL UNIQUE CHECK (hash <> '')
);

ALTER TABLE nomos_policy_decisions ADD COLUMN finished_at INTEGER;
ALTER TABLE nomos_policy_decisions ADD COLUMN window_opened_at INTEGER;
ALTER TABLE nomos_policy_decisions ADD COLUMN window_expires_at INTEGER;
ALTER TABLE nomos_policy_decisions ADD COLUMN seen_now INTEGER;
ALTER TABLE nomos_policy_decisions ADD COLUMN revision_id INTEGER;
ALTER TABLE nomos_policy_decisions ADD COLUMN in_window INTEGER;
ALTER TABLE nomos_policy_decisions ADD COLUMN attempts INTEGER;
ALTER TABLE nomos_policy_decisions ADD COLUMN result_cut INTEGER;
ALTER TABLE nomos_policy_decisions ADD COLUMN status TEXT;
ALTER TABLE nomos_policy_decisions ADD COLUMN window_route TEXT;
ALTER TABLE nomos_policy_decisions ADD COLUMN task_source TEXT;
ALTER TABLE nomos_policy_decisions ADD COLUMN task_id TEXT;
ALTER TABLE nomos_policy_decisions ADD COLUMN still_running BLOB;
ALTER TABLE nomos_policy_decisions ADD COLUMN input_hash BLOB;
ALTER TABLE nomos_policy_decisions ADD COLUMN answer TEXT;
ALTER TABLE nomos_policy_decisions ADD COLUMN answer_hash BLOB;

DROP INDEX IF EXISTS idx_nomos_policy_decisions_session;
