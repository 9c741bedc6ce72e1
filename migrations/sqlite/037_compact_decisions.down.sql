-- Reverses 037 (see the PostgreSQL 037's down).
CREATE INDEX IF NOT EXISTS idx_nomos_policy_decisions_time
    ON nomos_policy_decisions (decided_at);
CREATE INDEX IF NOT EXISTS idx_nomos_policy_decisions_session
    ON nomos_policy_decisions (session_id, id);
DELETE FROM nomos_policy_decisions WHERE input_hash IS NOT NULL;
ALTER TABLE nomos_policy_decisions DROP COLUMN finished_at;
ALTER TABLE nomos_policy_decisions DROP COLUMN window_opened_at;
ALTER TABLE nomos_policy_decisions DROP COLUMN window_expires_at;
ALTER TABLE nomos_policy_decisions DROP COLUMN seen_now;
ALTER TABLE nomos_policy_decisions DROP COLUMN revision_id;
ALTER TABLE nomos_policy_decisions DROP COLUMN in_window;
ALTER TABLE nomos_policy_decisions DROP COLUMN attempts;
ALTER TABLE nomos_policy_decisions DROP COLUMN result_cut;
ALTER TABLE nomos_policy_decisions DROP COLUMN status;
ALTER TABLE nomos_policy_decisions DROP COLUMN window_route;
ALTER TABLE nomos_policy_decisions DROP COLUMN task_source;
ALTER TABLE nomos_policy_decisions DROP COLUMN task_id;
ALTER TABLE nomos_policy_decisions DROP COLUMN still_running;
ALTER TABLE nomos_policy_decisions DROP COLUMN input_hash;
ALTER TABLE nomos_policy_decisions DROP COLUMN answer;
ALTER TABLE nomos_policy_decisions DROP COLUMN answer_hash;
DROP TABLE IF EXISTS nomos_decision_revisions;
