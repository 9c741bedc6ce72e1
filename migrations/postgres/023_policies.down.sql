-- Reverses 023.
DROP TABLE IF EXISTS nomos_policy_active;
DROP TABLE IF EXISTS nomos_policy_revisions;
