-- 026_delivery_promises: what the deliver step needs to keep its promises.
--
-- claim_token: a fresh value at every claim. Renewing a lease, recording an
-- accepted call and recording a failed one are compare-and-sets on it, so a
-- worker whose lease was taken over can never settle the row, and two
-- processes that were (wrongly) given the same worker id cannot settle each
-- other's claims.
--
-- claimed_at: when the current claim was taken (renewals leave it): what
-- the window was checked against, for an operator asking why a call went out.
--
-- first_failed_at: when the first failed call of this delivery was recorded.
-- The retry budget is wall time measured from it (a runtime that restarts for
-- a few minutes delays delivery; it does not fail it).
--
-- shortages: failed calls that were a shortage on the agent's side (it was
-- down, timed out, or asked us to come back later). They count towards the
-- wall-time budget but not towards the attempts the policy is shown, so a
-- policy's "give up after N failures" rule is about answers, not outages.
--
-- state 'dropped': a continuation whose assent window closed (deny or expiry)
-- while it was waiting or between retries. It is never sent; one notice says
-- so.
ALTER TABLE nomos_deliveries
    ADD COLUMN claim_token UUID,
    ADD COLUMN claimed_at TIMESTAMPTZ,
    ADD COLUMN first_failed_at TIMESTAMPTZ,
    ADD COLUMN shortages INTEGER NOT NULL DEFAULT 0 CHECK (shortages >= 0);

ALTER TABLE nomos_deliveries DROP CONSTRAINT nomos_deliveries_state_check;
ALTER TABLE nomos_deliveries ADD CONSTRAINT nomos_deliveries_state_check
    CHECK (state IN ('pending', 'delivered', 'failed', 'dropped'));
