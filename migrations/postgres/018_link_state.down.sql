-- Reverses 018.
ALTER TABLE nomos_plan_executions RESET (
    autovacuum_vacuum_scale_factor,
    autovacuum_vacuum_threshold,
    autovacuum_vacuum_insert_scale_factor,
    autovacuum_vacuum_insert_threshold,
    autovacuum_analyze_scale_factor,
    autovacuum_analyze_threshold
);
DROP INDEX IF EXISTS idx_nomos_plan_exec_delivery;
DROP INDEX IF EXISTS idx_nomos_plan_exec_ready;
DROP INDEX IF EXISTS idx_nomos_plan_exec_session;
ALTER TABLE nomos_plan_executions
    DROP CONSTRAINT IF EXISTS nomos_plan_exec_settled_check,
    DROP CONSTRAINT IF EXISTS nomos_plan_exec_outcome_check,
    DROP COLUMN IF EXISTS reason,
    DROP COLUMN IF EXISTS outcome,
    DROP COLUMN IF EXISTS delivery_id;
