-- no-transaction
-- 038_decisions_time_brin: the decision log's time, as a BRIN index, for
-- `policy replay --since`. Rows are appended in nearly the order of their
-- time, so a summary of each 128 pages' range of `decided_at` finds the
-- recent ones in a few pages; 037 dropped the B-tree on the time, which
-- cost an entry per decision. CONCURRENTLY, one statement per file (see
-- 019): the worker's log writes do not wait for the build.
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_nomos_policy_decisions_time_brin
    ON nomos_policy_decisions USING brin (decided_at);
