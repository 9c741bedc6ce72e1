-- Reverses 018 (the indexes are 030-032's, dropped by their own down scripts).
SET LOCAL lock_timeout = '500ms';
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
    DROP COLUMN IF EXISTS reason,
    DROP COLUMN IF EXISTS outcome,
    DROP COLUMN IF EXISTS delivery_id;
