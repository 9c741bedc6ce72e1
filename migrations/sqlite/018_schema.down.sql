-- Reverses 018 (SQLite mirror). The SQLite file is the embedded default and
-- owned by nomos-continue alone, so `executions` is dropped unconditionally
-- (the PostgreSQL script checks that 018 created it). DROP COLUMN needs
-- SQLite 3.35; the indexes on those columns are 019-022's, gone first.
DROP TRIGGER IF EXISTS nomos_sessions_from_links;
DROP TRIGGER IF EXISTS nomos_sessions_from_windows;
DROP TABLE IF EXISTS nomos_sessions;
DROP TABLE IF EXISTS nomos_idempotency_keys;
DROP TABLE IF EXISTS nomos_link_data;
DROP TABLE IF EXISTS nomos_status_classes;
DROP TABLE IF EXISTS nomos_workers;
DROP TABLE IF EXISTS nomos_late_reports;
DROP TABLE IF EXISTS nomos_policy_decisions;
DROP TABLE IF EXISTS nomos_policy_disagreements;
DROP TABLE IF EXISTS nomos_policy_shadow;
DROP TABLE IF EXISTS nomos_policy_activations;
DROP TABLE IF EXISTS nomos_policy_active;
DROP TABLE IF EXISTS nomos_policy_revisions;
DROP TABLE IF EXISTS nomos_notices;
DROP TABLE IF EXISTS nomos_chat_turns;
DROP TABLE IF EXISTS executions;
DROP TABLE IF EXISTS nomos_deliveries;
DROP TABLE IF EXISTS nomos_assent_windows;
ALTER TABLE nomos_plan_executions DROP COLUMN parked;
ALTER TABLE nomos_plan_executions DROP COLUMN reason;
ALTER TABLE nomos_plan_executions DROP COLUMN outcome;
ALTER TABLE nomos_plan_executions DROP COLUMN delivery_id;
