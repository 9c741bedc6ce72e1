-- 041_policy_shadow: a candidate policy revision run in shadow, and what it
-- decided differently from the active revision.
--
-- The shadow is shared by every replica like the active revision: each one
-- polls nomos_policy_shadow and converges on it. A table of its own, not a
-- column of nomos_policy_active, because a shadow may be set while no
-- revision was ever activated in the database (the built-in policy runs).
-- Its bytes live in nomos_policy_revisions like any revision.
CREATE TABLE nomos_policy_shadow (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    hash TEXT NOT NULL REFERENCES nomos_policy_revisions (hash),
    set_at TIMESTAMPTZ NOT NULL
);

-- One row per decision the shadow took differently from the active
-- revision on the same input. Inputs and outputs are the golden-file JSON,
-- so a row can be read, replayed or turned into a golden case as it is.
-- No foreign keys: a disagreement outlives the shadow it came from (it is
-- the evidence for or against promoting it).
CREATE TABLE nomos_policy_disagreements (
    id BIGSERIAL PRIMARY KEY,
    at TIMESTAMPTZ NOT NULL,
    session_id UUID NOT NULL,
    execution_id UUID NOT NULL,
    active_revision TEXT NOT NULL,
    shadow_revision TEXT NOT NULL,
    input TEXT NOT NULL,
    active_output TEXT NOT NULL,
    shadow_output TEXT NOT NULL
);

-- GET /v1/policy counts the current shadow's disagreements.
CREATE INDEX nomos_policy_disagreements_shadow
    ON nomos_policy_disagreements (shadow_revision);
