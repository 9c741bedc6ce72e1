-- Reverses 037. Rows written compactly keep empty texts: they cannot be
-- turned back into whole inputs here, so they are deleted.
CREATE INDEX IF NOT EXISTS idx_nomos_policy_decisions_time
    ON nomos_policy_decisions (decided_at);
CREATE INDEX IF NOT EXISTS idx_nomos_policy_decisions_session
    ON nomos_policy_decisions (session_id, id);
DELETE FROM nomos_policy_decisions WHERE input_hash IS NOT NULL;
ALTER TABLE nomos_policy_decisions
    DROP COLUMN finished_at,
    DROP COLUMN window_opened_at,
    DROP COLUMN window_expires_at,
    DROP COLUMN seen_now,
    DROP COLUMN revision_id,
    DROP COLUMN in_window,
    DROP COLUMN attempts,
    DROP COLUMN result_cut,
    DROP COLUMN status,
    DROP COLUMN window_route,
    DROP COLUMN task_source,
    DROP COLUMN task_id,
    DROP COLUMN still_running,
    DROP COLUMN input_hash,
    DROP COLUMN answer,
    DROP COLUMN answer_hash;
DROP TABLE IF EXISTS nomos_decision_revisions;
