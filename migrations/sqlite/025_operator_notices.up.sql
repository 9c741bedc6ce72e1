-- The operator's channel (`--notify-webhook`): see the PostgreSQL script of
-- the same number. Times are microseconds since the epoch, as elsewhere.
CREATE TABLE nomos_operator_notices (
    notice_id TEXT PRIMARY KEY NOT NULL REFERENCES nomos_deliveries (id) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'delivered', 'failed', 'expired', 'none')),
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at INTEGER NOT NULL,
    lease_owner TEXT,
    lease_expires_at INTEGER,
    claim_token TEXT,
    last_error TEXT,
    created_at INTEGER NOT NULL,
    delivered_at INTEGER,
    updated_at INTEGER NOT NULL,
    CHECK ((lease_owner IS NULL) = (lease_expires_at IS NULL)),
    CHECK ((state = 'delivered') = (delivered_at IS NOT NULL))
);

CREATE INDEX idx_nomos_operator_notices_due
    ON nomos_operator_notices (next_attempt_at, created_at) WHERE state = 'pending';

CREATE INDEX idx_nomos_operator_notices_ended
    ON nomos_operator_notices (state, created_at) WHERE state IN ('failed', 'expired', 'none');

-- Every notice is queued for the operator in the transaction that writes it.
CREATE TRIGGER nomos_deliveries_operator_notice
    AFTER INSERT ON nomos_deliveries
    WHEN NEW.kind = 'notice'
BEGIN
    INSERT INTO nomos_operator_notices
        (notice_id, session_id, next_attempt_at, created_at, updated_at)
    VALUES (NEW.id, NEW.session_id, NEW.created_at, NEW.created_at, NEW.created_at);
END;
