-- The operator's channel (`--notify-webhook`): every notice goes to the
-- agent (its row in nomos_deliveries) and to a person, apart from the agent,
-- so a notice about a dead agent endpoint still reaches someone. One row
-- per notice, written in the notice's own transaction; its own attempts,
-- lease and claim token, so neither channel's retries hold up the other's.
--
-- state: pending (due at next_attempt_at), delivered, failed (the channel's
-- budget ran out), expired (too old to be worth sending when a channel
-- first saw it), none (no operator channel was configured). A notice whose
-- agent delivery and operator delivery both ended without success reached
-- no one: the console shows it and /metrics counts it.
CREATE TABLE nomos_operator_notices (
    notice_id UUID PRIMARY KEY REFERENCES nomos_deliveries (id) ON DELETE CASCADE,
    session_id UUID NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'delivered', 'failed', 'expired', 'none')),
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at TIMESTAMPTZ NOT NULL,
    lease_owner TEXT,
    lease_expires_at TIMESTAMPTZ,
    claim_token UUID,
    last_error TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    delivered_at TIMESTAMPTZ,
    updated_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT nomos_operator_notices_lease_check
        CHECK ((lease_owner IS NULL) = (lease_expires_at IS NULL)),
    CONSTRAINT nomos_operator_notices_delivered_check
        CHECK ((state = 'delivered') = (delivered_at IS NOT NULL))
);

-- The notifier's claim: the oldest due rows first, pending only.
CREATE INDEX idx_nomos_operator_notices_due
    ON nomos_operator_notices (next_attempt_at, created_at) WHERE state = 'pending';

-- The rows a notice that reached no one can be among: the ended ones.
CREATE INDEX idx_nomos_operator_notices_ended
    ON nomos_operator_notices (state, created_at) WHERE state IN ('failed', 'expired', 'none');

-- Every notice is queued for the operator in the transaction that writes
-- it, whichever path wrote it: a trigger rather than the store's Rust, so no
-- caller can forget it and the two rows cannot part.
CREATE FUNCTION nomos_queue_operator_notice() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO nomos_operator_notices
        (notice_id, session_id, next_attempt_at, created_at, updated_at)
    VALUES (NEW.id, NEW.session_id, NEW.created_at, NEW.created_at, NEW.created_at);
    RETURN NULL;
END
$$;

CREATE TRIGGER nomos_deliveries_operator_notice
    AFTER INSERT ON nomos_deliveries
    FOR EACH ROW WHEN (NEW.kind = 'notice')
    EXECUTE FUNCTION nomos_queue_operator_notice();
