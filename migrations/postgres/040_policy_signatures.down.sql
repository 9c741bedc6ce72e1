-- Reverses 040.
SET LOCAL lock_timeout = '500ms';
ALTER TABLE nomos_policy_revisions DROP COLUMN IF EXISTS signature;
ALTER TABLE nomos_policy_revisions DROP COLUMN IF EXISTS key_id;
