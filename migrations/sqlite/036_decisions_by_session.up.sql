-- 036_decisions_by_session (SQLite mirror): the decision log's rows by
-- session alone (see the PostgreSQL 036).
CREATE INDEX IF NOT EXISTS idx_nomos_policy_decisions_by_session
    ON nomos_policy_decisions (session_id);
