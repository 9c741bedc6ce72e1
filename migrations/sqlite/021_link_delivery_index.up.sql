-- 021_link_delivery_index (SQLite mirror): a delivery's in-flight links.
CREATE INDEX IF NOT EXISTS idx_nomos_plan_exec_delivery
    ON nomos_plan_executions (delivery_id)
    WHERE delivery_id IS NOT NULL AND continued_at IS NULL;
