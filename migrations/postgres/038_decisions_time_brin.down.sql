-- Reverses 038.
DROP INDEX IF EXISTS idx_nomos_policy_decisions_time_brin;
