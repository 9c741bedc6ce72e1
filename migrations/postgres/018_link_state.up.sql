-- 018_link_state: what happened to each link.
--
-- continued_at (from 017) is set when a link is *settled*: its result was fed
-- back to the agent ('continued'), it was dropped by the policy or the host
-- guards ('dropped', e.g. no open assent window, loop cap), or its delivery
-- gave up after the retry budget ('failed'). outcome says which; reason says
-- why for 'dropped' and 'failed'. Setting continued_at on every settlement is
-- what moves the row out of the seed's partial index, so the pending query
-- stays cheap however much history accumulates.
--
-- delivery_id is the continuation (nomos_deliveries.id) this link has been
-- folded into; NULL = not yet planned. A planned link is still unsettled until
-- its delivery completes or gives up. No FK, like 017: the link table must
-- accept rows regardless of what else exists.
ALTER TABLE nomos_plan_executions
    ADD COLUMN IF NOT EXISTS delivery_id UUID,
    ADD COLUMN IF NOT EXISTS outcome TEXT,
    ADD COLUMN IF NOT EXISTS reason TEXT;

-- Rows continued before this migration (e.g. by the original Go worker) were
-- continued: record that so the invariant below holds for old history too.
UPDATE nomos_plan_executions
   SET outcome = 'continued'
 WHERE continued_at IS NOT NULL AND outcome IS NULL;

ALTER TABLE nomos_plan_executions
    ADD CONSTRAINT nomos_plan_exec_outcome_check
        CHECK (outcome IS NULL OR outcome IN ('continued', 'dropped', 'failed')),
    ADD CONSTRAINT nomos_plan_exec_settled_check
        CHECK ((continued_at IS NULL) = (outcome IS NULL));

-- The worker's poll (Store::pending_links_ready): unsettled, unplanned links
-- in (created_at, execution_id) order. The seed's index covers
-- continued_at IS NULL but not the order's tie-breaker nor delivery_id, so
-- with it the planner fetches and sorts every pending row before the LIMIT
-- (its statistics cannot see a few hundred NULLs among millions of rows, so
-- it believes there is one). This one is read in order, covers the columns
-- the poll needs (index-only scan), and stops after LIMIT rows. Partial, so
-- it holds only the links still waiting, however long the history (see
-- BENCHMARKS.md, "Claim query vs history size").
CREATE INDEX IF NOT EXISTS idx_nomos_plan_exec_ready
    ON nomos_plan_executions (created_at, execution_id) INCLUDE (session_id)
    WHERE continued_at IS NULL AND delivery_id IS NULL;

-- Per-session listing (still-running executions, GET /v1/sessions/{id}).
CREATE INDEX IF NOT EXISTS idx_nomos_plan_exec_session
    ON nomos_plan_executions (session_id, created_at);

-- Settling a delivery touches its in-flight links only; partial so that it
-- holds just the handful of planned-but-unsettled rows.
CREATE INDEX IF NOT EXISTS idx_nomos_plan_exec_delivery
    ON nomos_plan_executions (delivery_id)
    WHERE delivery_id IS NOT NULL AND continued_at IS NULL;

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
