-- Reverses 036.
SET LOCAL lock_timeout = '500ms';
ALTER TABLE nomos_plan_executions DROP COLUMN IF EXISTS parked;
