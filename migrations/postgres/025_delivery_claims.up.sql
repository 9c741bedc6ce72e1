-- 025_delivery_claims: how many times a delivery was claimed.
--
-- attempts counts agent calls that returned a failure. A worker that dies
-- during the call (a crash, an OOM kill, a poison input) records nothing, and
-- the rescue of its expired lease is not a failed attempt, so without this
-- count such a delivery would be redelivered forever. The worker gives up on
-- a delivery claimed too many times, with a visible failed state.
ALTER TABLE nomos_deliveries ADD COLUMN claims INTEGER NOT NULL DEFAULT 0;
