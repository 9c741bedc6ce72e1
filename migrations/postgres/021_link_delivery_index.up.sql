-- no-transaction
-- 021_link_delivery_index: settling a delivery touches its in-flight links
-- only; partial so that it holds just the handful of planned-but-unsettled
-- rows. Built CONCURRENTLY, one statement per file, for the reasons in 019.
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_nomos_plan_exec_delivery
    ON nomos_plan_executions (delivery_id)
    WHERE delivery_id IS NOT NULL AND continued_at IS NULL;
