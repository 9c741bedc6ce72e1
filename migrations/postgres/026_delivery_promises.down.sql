-- A dropped continuation was never sent; before 026 the nearest state is failed.
UPDATE nomos_deliveries SET state = 'failed' WHERE state = 'dropped';
ALTER TABLE nomos_deliveries DROP CONSTRAINT nomos_deliveries_state_check;
ALTER TABLE nomos_deliveries ADD CONSTRAINT nomos_deliveries_state_check
    CHECK (state IN ('pending', 'delivered', 'failed'));
ALTER TABLE nomos_deliveries
    DROP COLUMN shortages,
    DROP COLUMN first_failed_at,
    DROP COLUMN claimed_at,
    DROP COLUMN claim_token;
