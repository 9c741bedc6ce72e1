-- Reverses 042.
DROP TABLE IF EXISTS nomos_policy_decisions;
