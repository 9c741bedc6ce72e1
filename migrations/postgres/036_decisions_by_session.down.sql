-- Reverses 036.
DROP INDEX IF EXISTS idx_nomos_policy_decisions_by_session;
