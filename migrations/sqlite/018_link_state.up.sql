-- 018_link_state (SQLite mirror): what happened to each link.
--
-- continued_at is set when a link is settled; outcome says how ('continued',
-- 'dropped', 'failed'); reason says why. delivery_id is the continuation the
-- link has been folded into (NULL = not yet planned). See the PostgreSQL
-- migration for the full rationale, and for why it was rewritten before the
-- first release: as there, rows settled before this migration keep outcome
-- NULL and read as 'continued' by rule (no backfill), and the indexes moved
-- to 030-032 so that both backends have the same schema at every version.
ALTER TABLE nomos_plan_executions ADD COLUMN delivery_id TEXT;
ALTER TABLE nomos_plan_executions ADD COLUMN outcome TEXT
    CHECK (outcome IS NULL OR outcome IN ('continued', 'dropped', 'failed'));
ALTER TABLE nomos_plan_executions ADD COLUMN reason TEXT;
