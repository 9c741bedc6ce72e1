-- Reverses 018 (the indexes are 030-032's, dropped by their own down scripts).
ALTER TABLE nomos_plan_executions DROP COLUMN reason;
ALTER TABLE nomos_plan_executions DROP COLUMN outcome;
ALTER TABLE nomos_plan_executions DROP COLUMN delivery_id;
