-- 042_decision_log (SQLite mirror): every decision the host took through
-- the policy; see the PostgreSQL migration for the columns.
CREATE TABLE nomos_policy_decisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    decided_at INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    revision TEXT NOT NULL,
    input TEXT NOT NULL,
    output TEXT NOT NULL,
    action TEXT NOT NULL,
    idempotency_key TEXT,
    detail TEXT
);

CREATE INDEX idx_nomos_policy_decisions_time ON nomos_policy_decisions (decided_at);
CREATE INDEX idx_nomos_policy_decisions_session ON nomos_policy_decisions (session_id, id);
