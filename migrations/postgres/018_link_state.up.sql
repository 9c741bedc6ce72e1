-- 018_link_state: what happened to each link.
--
-- Rewritten before the first release (nothing outside development ever
-- applied the earlier text): it backfilled every settled history row, added
-- two CHECK constraints that scanned the whole table and built three indexes,
-- all in one transaction holding ACCESS EXCLUSIVE on the seed's table, which
-- the runtime keeps inserting into (an insert waited 13 s at 1M rows). Now
-- this migration only changes the catalog; the indexes are built
-- CONCURRENTLY by 030-032 and the constraints validated by 033. From here
-- on an applied migration is never edited: changes come as new migrations.
--
-- continued_at (from 017) is set when a link is *settled*: its result was fed
-- back to the agent ('continued'), it was dropped by the policy or the host
-- guards ('dropped', e.g. no open assent window, loop cap), or its delivery
-- gave up after the retry budget ('failed'). outcome says which; reason says
-- why for 'dropped' and 'failed'. Setting continued_at on every settlement is
-- what moves the row out of the seed's partial index, so the pending query
-- stays cheap however much history accumulates.
--
-- Rows settled before this migration (by the original Go worker) have
-- continued_at set and outcome NULL. They are not rewritten (an UPDATE of
-- millions of history rows would lock them and double the table's size in
-- dead tuples): they are 'continued' by rule, and every store query that
-- reads outcome says so (COALESCE(outcome, 'continued') on settled rows).
--
-- delivery_id is the continuation (nomos_deliveries.id) this link has been
-- folded into; NULL = not yet planned. A planned link is still unsettled until
-- its delivery completes or gives up. No FK, like 017: the link table must
-- accept rows regardless of what else exists.

-- Every statement below takes ACCESS EXCLUSIVE on nomos_plan_executions, if
-- only for an instant (nullable columns without a default and NOT VALID
-- constraints are catalog changes). While this transaction *waits* for that
-- lock (behind a long transaction on the table), every insert queues behind
-- it; the timeout bounds that wait, and `nomos-continue migrate` retries the
-- migration a bounded number of times (SQLSTATE 55P03).
SET LOCAL lock_timeout = '500ms';

ALTER TABLE nomos_plan_executions
    ADD COLUMN IF NOT EXISTS delivery_id UUID,
    ADD COLUMN IF NOT EXISTS outcome TEXT,
    ADD COLUMN IF NOT EXISTS reason TEXT;

-- NOT VALID: checked for every row written from now on, without scanning the
-- history under this lock; 033 validates the existing rows under a lock that
-- does not block writes. A settled row may lack an outcome (the legacy rule
-- above); an outcome always means settled.
ALTER TABLE nomos_plan_executions
    ADD CONSTRAINT nomos_plan_exec_outcome_check
        CHECK (outcome IS NULL OR outcome IN ('continued', 'dropped', 'failed')) NOT VALID,
    ADD CONSTRAINT nomos_plan_exec_settled_check
        CHECK (outcome IS NULL OR continued_at IS NOT NULL) NOT VALID;

-- Every link is inserted once and updated once or twice (planned, settled), so
-- dead tuples accumulate at the rate links are created. The default
-- autovacuum_vacuum_scale_factor (0.2) lets a 10M-row table collect 2M dead
-- tuples before a vacuum; the partial index then carries dead entries that
-- every poll has to step over. A fixed threshold keeps vacuum frequent and
-- cheap. See BENCHMARKS.md ("Claim query vs history size"). Operators may
-- override these with their own ALTER TABLE ... SET.
ALTER TABLE nomos_plan_executions SET (
    autovacuum_vacuum_scale_factor = 0.0,
    autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_insert_scale_factor = 0.0,
    autovacuum_vacuum_insert_threshold = 5000,
    autovacuum_analyze_scale_factor = 0.0,
    autovacuum_analyze_threshold = 5000
);
