-- Reverses 043 (and so 044's rows).
SET LOCAL lock_timeout = '500ms';
DROP TRIGGER IF EXISTS nomos_sessions_from_links ON nomos_plan_executions;
DROP TRIGGER IF EXISTS nomos_sessions_from_windows ON nomos_assent_windows;
DROP FUNCTION IF EXISTS nomos_sessions_from_links();
DROP FUNCTION IF EXISTS nomos_sessions_from_windows();
DROP TABLE IF EXISTS nomos_sessions;
