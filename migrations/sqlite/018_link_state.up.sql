-- 018_link_state (SQLite mirror): what happened to each link.
--
-- continued_at is set when a link is settled; outcome says how ('continued',
-- 'dropped', 'failed'); reason says why. delivery_id is the continuation the
-- link has been folded into (NULL = not yet planned). See the PostgreSQL
-- migration for the full rationale.
ALTER TABLE nomos_plan_executions ADD COLUMN delivery_id TEXT;
ALTER TABLE nomos_plan_executions ADD COLUMN outcome TEXT
    CHECK (outcome IS NULL OR outcome IN ('continued', 'dropped', 'failed'));
ALTER TABLE nomos_plan_executions ADD COLUMN reason TEXT;

UPDATE nomos_plan_executions
   SET outcome = 'continued'
 WHERE continued_at IS NOT NULL AND outcome IS NULL;

-- The worker's poll: unsettled, unplanned links in (created_at, execution_id)
-- order, read in order so the LIMIT stops early (see the PostgreSQL 018;
-- session_id is a trailing key column because SQLite has no INCLUDE).
CREATE INDEX IF NOT EXISTS idx_nomos_plan_exec_ready
    ON nomos_plan_executions (created_at, execution_id, session_id)
    WHERE continued_at IS NULL AND delivery_id IS NULL;

CREATE INDEX IF NOT EXISTS idx_nomos_plan_exec_session
    ON nomos_plan_executions (session_id, created_at);

CREATE INDEX IF NOT EXISTS idx_nomos_plan_exec_delivery
    ON nomos_plan_executions (delivery_id)
    WHERE delivery_id IS NOT NULL AND continued_at IS NULL;
