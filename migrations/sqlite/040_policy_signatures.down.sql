-- Reverses 040.
ALTER TABLE nomos_policy_revisions DROP COLUMN signature;
ALTER TABLE nomos_policy_revisions DROP COLUMN key_id;
