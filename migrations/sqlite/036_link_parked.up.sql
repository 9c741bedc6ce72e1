-- 036_link_parked (SQLite mirror): the status an unsettled link's execution
-- had when the worker found it running; NULL = not parked. See the
-- PostgreSQL migration.
ALTER TABLE nomos_plan_executions ADD COLUMN parked TEXT;
