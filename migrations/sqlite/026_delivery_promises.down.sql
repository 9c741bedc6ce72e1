-- Rebuilds the ledger as 025 left it; a dropped continuation becomes failed.
CREATE TABLE nomos_deliveries_025 (
    id TEXT PRIMARY KEY NOT NULL,
    session_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('continuation', 'notice')),
    idempotency_key TEXT NOT NULL,
    execution_ids TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(execution_ids)),
    note TEXT NOT NULL,
    policy_revision TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at INTEGER NOT NULL,
    lease_owner TEXT,
    lease_expires_at INTEGER,
    last_error TEXT,
    created_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)),
    delivered_at INTEGER,
    updated_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)),
    claims INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT nomos_deliveries_idempotency_key UNIQUE (idempotency_key),
    CONSTRAINT nomos_deliveries_lease_check CHECK ((lease_owner IS NULL) = (lease_expires_at IS NULL)),
    CONSTRAINT nomos_deliveries_delivered_check CHECK ((state = 'delivered') = (delivered_at IS NOT NULL))
);

INSERT INTO nomos_deliveries_025 (id, session_id, kind, idempotency_key, execution_ids, note,
    policy_revision, state, attempts, next_attempt_at, lease_owner, lease_expires_at, last_error,
    created_at, delivered_at, updated_at, claims)
SELECT id, session_id, kind, idempotency_key, execution_ids, note,
    policy_revision, CASE WHEN state = 'dropped' THEN 'failed' ELSE state END, attempts,
    next_attempt_at, lease_owner, lease_expires_at, last_error,
    created_at, delivered_at, updated_at, claims
FROM nomos_deliveries;

DROP TABLE nomos_deliveries;
ALTER TABLE nomos_deliveries_025 RENAME TO nomos_deliveries;

CREATE UNIQUE INDEX nomos_deliveries_one_in_flight
    ON nomos_deliveries (session_id)
    WHERE state = 'pending' AND kind = 'continuation';

CREATE INDEX idx_nomos_deliveries_claim
    ON nomos_deliveries (next_attempt_at)
    WHERE state = 'pending';

CREATE INDEX idx_nomos_deliveries_session
    ON nomos_deliveries (session_id, created_at);
