-- 034_policy_activations (SQLite mirror): every activation, in order.
CREATE TABLE nomos_policy_activations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    hash TEXT NOT NULL REFERENCES nomos_policy_revisions (hash),
    activated_at INTEGER NOT NULL
);

INSERT INTO nomos_policy_activations (hash, activated_at)
SELECT hash, activated_at FROM nomos_policy_active;
