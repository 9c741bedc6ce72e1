-- 023_policies: continuation policy revisions and the active one.
--
-- A revision is identified by the SHA-256 (lowercase hex) of its WebAssembly
-- component, so the same bytes are stored once and every decision can record
-- the exact revision that made it. Every replica polls nomos_policy_active and
-- converges on the same policy. The single-row table (id = 1) makes "the
-- active policy" one atomic value; the FK makes activating an unknown
-- revision impossible.
CREATE TABLE nomos_policy_revisions (
    hash TEXT PRIMARY KEY CHECK (hash ~ '^[0-9a-f]{64}$'),
    wasm BYTEA NOT NULL,
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE nomos_policy_active (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    hash TEXT NOT NULL REFERENCES nomos_policy_revisions (hash),
    activated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
