-- 038_decisions_time_brin (SQLite mirror): nothing to build. SQLite has no
-- BRIN index; its decision log keeps 018's B-tree on the time, which 037
-- left in place there, for `policy replay --since`.
SELECT 1;
