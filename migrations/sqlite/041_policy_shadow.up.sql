-- 041_policy_shadow (SQLite mirror): the shadow revision and its disagreements.
CREATE TABLE nomos_policy_shadow (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    hash TEXT NOT NULL REFERENCES nomos_policy_revisions (hash),
    set_at INTEGER NOT NULL
);

CREATE TABLE nomos_policy_disagreements (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    active_revision TEXT NOT NULL,
    shadow_revision TEXT NOT NULL,
    input TEXT NOT NULL,
    active_output TEXT NOT NULL,
    shadow_output TEXT NOT NULL
);

CREATE INDEX nomos_policy_disagreements_shadow
    ON nomos_policy_disagreements (shadow_revision);
