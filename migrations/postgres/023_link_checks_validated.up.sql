-- 023_link_checks_validated: checks the history rows against the two
-- constraints 018 added NOT VALID (rows written since are checked already).
--
-- VALIDATE CONSTRAINT scans the table under SHARE UPDATE EXCLUSIVE, which
-- does not conflict with the runtime's inserts or the worker's updates; the
-- scans may take a while on a long history, nobody waits for them. Every
-- legacy row passes: outcome was added by 018 and is NULL on all of them.
ALTER TABLE nomos_plan_executions VALIDATE CONSTRAINT nomos_plan_exec_outcome_check;
ALTER TABLE nomos_plan_executions VALIDATE CONSTRAINT nomos_plan_exec_settled_check;
