-- no-transaction
-- 036_decisions_by_session: the decision log's rows by session alone. A
-- session has a handful of decisions, so B-tree deduplication keeps one
-- key and a list of row addresses per leaf page: about 10 bytes a
-- decision, against about 40 for the (session_id, id) B-tree, whose
-- unique ids deduplicate nothing (measured: BENCHMARKS.md, "A month in an
-- hour"; a hash index took 40). What reads by session (the console's
-- timeline, `policy replay --session`) sorts the few rows it finds. 037
-- drops the old index once this one is built. CONCURRENTLY, one statement
-- per file (see 019): the worker's log writes do not wait for the build.
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_nomos_policy_decisions_by_session
    ON nomos_policy_decisions (session_id);
