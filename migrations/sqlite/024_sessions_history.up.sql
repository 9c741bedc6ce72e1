-- 024_sessions_history (SQLite mirror): lists the sessions that existed
-- before 018's triggers, each at its earliest link or window. One statement:
-- one process owns the file, so there is no one to keep waiting.
INSERT INTO nomos_sessions (session_id, first_seen_at)
SELECT session_id, MIN(at) FROM (
    SELECT session_id, created_at AS at FROM nomos_plan_executions
    UNION ALL
    SELECT session_id, opened_at AS at FROM nomos_assent_windows
) WHERE true GROUP BY session_id
ON CONFLICT (session_id) DO UPDATE
    SET first_seen_at = excluded.first_seen_at
    WHERE excluded.first_seen_at < first_seen_at;
