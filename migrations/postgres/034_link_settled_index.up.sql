-- no-transaction
-- 034_link_settled_index: the settled links by the time they were settled,
-- so `--link-retention` (host/src/store/retention.rs, `purge_links`) finds
-- the oldest in bounded batches without reading the history. Partial: the
-- links still in flight are the poll's indexes' (019, 022). Nothing reads
-- it while link retention is off; it costs an entry per settled link, and
-- bounds itself once the retention is on. An index on the seed's table is
-- a catalog change the runtime's writes do not wait for when built
-- CONCURRENTLY, one statement per file (see 019).
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_nomos_plan_exec_settled
    ON nomos_plan_executions (continued_at) WHERE continued_at IS NOT NULL;
