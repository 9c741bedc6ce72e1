-- Reverses 036.
ALTER TABLE nomos_plan_executions DROP COLUMN parked;
