-- Reverses 034.
DROP TABLE IF EXISTS nomos_policy_activations;
