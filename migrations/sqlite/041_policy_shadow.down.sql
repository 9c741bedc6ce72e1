-- Reverses 041.
DROP TABLE IF EXISTS nomos_policy_disagreements;
DROP TABLE IF EXISTS nomos_policy_shadow;
