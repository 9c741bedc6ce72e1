-- 034_policy_activations: every activation of a policy revision, in order.
--
-- nomos_policy_active holds only what runs now; rolling back "to the
-- previous revision" needs to know what ran before it. One row per
-- activation (an upload, a changed policy file, a rollback), appended in the
-- same transaction that changes the active row. The activation already in
-- place is recorded first, so a rollback right after the upgrade has
-- something to return to once a new revision is activated.
CREATE TABLE nomos_policy_activations (
    id BIGSERIAL PRIMARY KEY,
    hash TEXT NOT NULL REFERENCES nomos_policy_revisions (hash),
    activated_at TIMESTAMPTZ NOT NULL
);

INSERT INTO nomos_policy_activations (hash, activated_at)
SELECT hash, activated_at FROM nomos_policy_active;
