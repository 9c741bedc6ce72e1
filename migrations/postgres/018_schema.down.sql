-- Reverses 018: drops every nomos-owned table (the executions table only if
-- 018 created it) and gives the seed's table back as 017 left it. Its indexes
-- are 019-022's, dropped by their own down scripts. The link trigger goes
-- first, so that no insert into the seed's table meanwhile fires it against a
-- dropped table; the locks this takes on the seed's table are held for the
-- few milliseconds the script takes.
SET LOCAL lock_timeout = '500ms';
DROP TRIGGER IF EXISTS nomos_sessions_from_links ON nomos_plan_executions;
DROP TRIGGER IF EXISTS nomos_sessions_from_windows ON nomos_assent_windows;
DROP FUNCTION IF EXISTS nomos_sessions_from_links();
DROP FUNCTION IF EXISTS nomos_sessions_from_windows();
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
DO $$
BEGIN
    IF to_regclass('executions') IS NOT NULL
       AND obj_description(to_regclass('executions'), 'pg_class')
           = 'nomos-continue: standalone executions table (migration 021)' THEN
        DROP TABLE executions;
    END IF;
END
$$;
DROP TABLE IF EXISTS nomos_deliveries;
DROP TABLE IF EXISTS nomos_assent_windows;
ALTER TABLE nomos_plan_executions RESET (
    autovacuum_vacuum_scale_factor,
    autovacuum_vacuum_threshold,
    autovacuum_vacuum_insert_scale_factor,
    autovacuum_vacuum_insert_threshold,
    autovacuum_analyze_scale_factor,
    autovacuum_analyze_threshold
);
ALTER TABLE nomos_plan_executions
    DROP CONSTRAINT IF EXISTS nomos_plan_exec_settled_check,
    DROP CONSTRAINT IF EXISTS nomos_plan_exec_outcome_check,
    DROP COLUMN IF EXISTS parked,
    DROP COLUMN IF EXISTS reason,
    DROP COLUMN IF EXISTS outcome,
    DROP COLUMN IF EXISTS delivery_id;
