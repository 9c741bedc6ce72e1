-- 023_policies (SQLite mirror): policy revisions and the active one.
CREATE TABLE nomos_policy_revisions (
    hash TEXT PRIMARY KEY NOT NULL
        CHECK (length(hash) = 64 AND hash NOT GLOB '*[^0-9a-f]*'),
    wasm BLOB NOT NULL,
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    created_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER))
);

CREATE TABLE nomos_policy_active (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    hash TEXT NOT NULL REFERENCES nomos_policy_revisions (hash),
    activated_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER))
);
