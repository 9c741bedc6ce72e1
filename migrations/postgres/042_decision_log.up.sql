-- 042_decision_log: every decision the host took through the policy.
--
-- An operator swapping the policy wants to know what a candidate would have
-- decided on real traffic; `policy replay` decides these inputs again, and
-- `policy capture` turns one into a golden case. `input` is the decision
-- input exactly as the policy saw it (results already cut to the host's
-- limit), in the golden-file JSON; `output` the answer line, or
-- {"error": …} when the policy failed on it. `action` is what the host then
-- did: continued (under `idempotency_key`), dropped, refused (a host guard,
-- named in `detail`), waited, deferred or failed.
--
-- Rows are purged by age (`serve --decision-log-days`), oldest ids first,
-- so the time index also serves `replay --since`.
CREATE TABLE nomos_policy_decisions (
    id BIGSERIAL PRIMARY KEY,
    decided_at TIMESTAMPTZ NOT NULL,
    session_id UUID NOT NULL,
    execution_id UUID NOT NULL,
    revision TEXT NOT NULL,
    input TEXT NOT NULL,
    output TEXT NOT NULL,
    action TEXT NOT NULL,
    idempotency_key TEXT,
    detail TEXT
);

CREATE INDEX idx_nomos_policy_decisions_time ON nomos_policy_decisions (decided_at);
CREATE INDEX idx_nomos_policy_decisions_session ON nomos_policy_decisions (session_id, id);
