-- 020_deliveries: the ledger of re-invocations (kind 'continuation') and of
-- notices about dropped results (kind 'notice').
--
-- A row is written 'pending' in the same transaction that plans it, claimed by
-- a worker with a lease (lease_owner, lease_expires_at), and moved to
-- 'delivered' or, after the retry budget, 'failed' by a compare-and-set on the
-- lease holder. idempotency_key is sent with every attempt, so a redelivery
-- after a crash is recognisable by the agent runtime.
CREATE TABLE nomos_deliveries (
    id UUID PRIMARY KEY,
    session_id UUID NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('continuation', 'notice')),
    idempotency_key TEXT NOT NULL,
    execution_ids UUID[] NOT NULL DEFAULT '{}',
    note TEXT NOT NULL,
    policy_revision TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at TIMESTAMPTZ NOT NULL,
    lease_owner TEXT,
    lease_expires_at TIMESTAMPTZ,
    last_error TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    delivered_at TIMESTAMPTZ,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT nomos_deliveries_idempotency_key UNIQUE (idempotency_key),
    CONSTRAINT nomos_deliveries_lease_check CHECK ((lease_owner IS NULL) = (lease_expires_at IS NULL)),
    CONSTRAINT nomos_deliveries_delivered_check CHECK ((state = 'delivered') = (delivered_at IS NOT NULL))
);

-- At most one continuation in flight per session: several executions finishing
-- together fold into one note instead of racing each other into the agent.
CREATE UNIQUE INDEX nomos_deliveries_one_in_flight
    ON nomos_deliveries (session_id)
    WHERE state = 'pending' AND kind = 'continuation';

-- Claim query: only pending rows, by due time.
CREATE INDEX idx_nomos_deliveries_claim
    ON nomos_deliveries (next_attempt_at)
    WHERE state = 'pending';

-- Ledger per session, newest first.
CREATE INDEX idx_nomos_deliveries_session
    ON nomos_deliveries (session_id, created_at);

-- Every row is updated several times (claim, complete/fail); vacuum it on a
-- fixed threshold for the same reason as the link table (see 018).
ALTER TABLE nomos_deliveries SET (
    autovacuum_vacuum_scale_factor = 0.0,
    autovacuum_vacuum_threshold = 5000,
    autovacuum_analyze_scale_factor = 0.0,
    autovacuum_analyze_threshold = 5000
);
