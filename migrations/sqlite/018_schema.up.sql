-- 018_schema (SQLite mirror): every table nomos-continue owns, in its final
-- form, and the seed's link table's new columns. The pre-release migrations
-- 018-044 are squashed into this one and the six after it, with the same
-- version numbers as PostgreSQL so both backends are at the same schema step
-- at every version; see the PostgreSQL 018 for the rationale of each table
-- and column, and docs/operations.md ("Migrations") for the rules.
--
-- SQLite representation, as in 017: UUIDs are TEXT in lowercase hyphenated
-- form, times INTEGER microseconds since the Unix epoch (UTC). One process
-- owns the file, so the live-table rules of PostgreSQL do not apply; the
-- indexes on the seed's table still come in 019-022 as they do there.

CREATE TABLE nomos_assent_windows (
    session_id TEXT PRIMARY KEY NOT NULL,
    opened_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    route TEXT NOT NULL CHECK (route IN ('button', 'chat', 'api')),
    continuations INTEGER NOT NULL DEFAULT 0 CHECK (continuations >= 0),
    closed_at INTEGER,
    updated_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER))
);

-- execution_ids is a JSON array of UUID strings (SQLite has no arrays).
CREATE TABLE nomos_deliveries (
    id TEXT PRIMARY KEY NOT NULL,
    session_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('continuation', 'notice')),
    idempotency_key TEXT NOT NULL,
    execution_ids TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(execution_ids)),
    note TEXT NOT NULL,
    policy_revision TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'delivered', 'failed', 'dropped')),
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at INTEGER NOT NULL,
    lease_owner TEXT,
    lease_expires_at INTEGER,
    last_error TEXT,
    created_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)),
    delivered_at INTEGER,
    updated_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)),
    claims INTEGER NOT NULL DEFAULT 0,
    claim_token TEXT,
    claimed_at INTEGER,
    first_failed_at INTEGER,
    shortages INTEGER NOT NULL DEFAULT 0 CHECK (shortages >= 0),
    CONSTRAINT nomos_deliveries_idempotency_key UNIQUE (idempotency_key),
    CONSTRAINT nomos_deliveries_lease_check CHECK ((lease_owner IS NULL) = (lease_expires_at IS NULL)),
    CONSTRAINT nomos_deliveries_delivered_check CHECK ((state = 'delivered') = (delivered_at IS NOT NULL))
);

CREATE UNIQUE INDEX nomos_deliveries_one_in_flight
    ON nomos_deliveries (session_id)
    WHERE state = 'pending' AND kind = 'continuation';

CREATE INDEX idx_nomos_deliveries_session
    ON nomos_deliveries (session_id, created_at);

-- The claim's whole order, so a claim reads due rows in order and stops
-- after its LIMIT (one ordered read over both kinds, hence no kind column).
CREATE INDEX idx_nomos_deliveries_due
    ON nomos_deliveries (next_attempt_at, created_at, id) WHERE state = 'pending';

-- Created only if no table of that name exists; a runtime with its own table
-- can expose a view named `executions` with these columns instead.
CREATE TABLE IF NOT EXISTS executions (
    id TEXT PRIMARY KEY NOT NULL,
    status TEXT NOT NULL,
    result TEXT NOT NULL DEFAULT '',
    updated_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)),
    finished_at INTEGER
);

CREATE TABLE nomos_chat_turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
    content TEXT NOT NULL,
    created_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)),
    idempotency_key TEXT
);

CREATE INDEX idx_nomos_chat_turns_session ON nomos_chat_turns (session_id, id);

CREATE UNIQUE INDEX idx_nomos_chat_turns_key
    ON nomos_chat_turns (session_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

CREATE TABLE nomos_notices (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    message TEXT NOT NULL,
    created_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)),
    UNIQUE (session_id, idempotency_key)
);

CREATE INDEX idx_nomos_notices_session ON nomos_notices (session_id, id);

-- The answers of the API's writes sent with an `Idempotency-Key` (chat
-- turns, delivery retries): a retry with the same key and request answers the
-- first answer (only successes are kept: a failed request leaves no row, so
-- its retry runs again); the same key with another request (another hash) is
-- refused. A row with no response is a request still being handled (or one
-- whose process died: taken over once it is older than a minute). Kept for
-- at least 24 hours; the retention pass removes older rows.
CREATE TABLE nomos_idempotency_keys (
    scope TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    response TEXT,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (scope, idempotency_key)
);

CREATE INDEX idx_nomos_idempotency_keys_created ON nomos_idempotency_keys (created_at);

CREATE TABLE nomos_policy_revisions (
    hash TEXT PRIMARY KEY NOT NULL
        CHECK (length(hash) = 64 AND hash NOT GLOB '*[^0-9a-f]*'),
    wasm BLOB NOT NULL,
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    created_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)),
    key_id TEXT,
    signature TEXT
);

CREATE TABLE nomos_policy_active (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    hash TEXT NOT NULL REFERENCES nomos_policy_revisions (hash),
    activated_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER))
);

CREATE TABLE nomos_policy_activations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    hash TEXT NOT NULL REFERENCES nomos_policy_revisions (hash),
    activated_at INTEGER NOT NULL
);

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

CREATE TABLE nomos_policy_decisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    decided_at INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    revision TEXT NOT NULL,
    input TEXT NOT NULL,
    output TEXT NOT NULL,
    action TEXT NOT NULL,
    idempotency_key TEXT,
    detail TEXT
);

CREATE INDEX idx_nomos_policy_decisions_time ON nomos_policy_decisions (decided_at);
CREATE INDEX idx_nomos_policy_decisions_session ON nomos_policy_decisions (session_id, id);

CREATE TABLE nomos_late_reports (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    execution_id TEXT NOT NULL,
    status TEXT NOT NULL,
    result TEXT NOT NULL,
    reported_at INTEGER NOT NULL
);

CREATE INDEX idx_nomos_late_reports_execution ON nomos_late_reports (execution_id, id);

CREATE TABLE nomos_workers (
    worker_id TEXT PRIMARY KEY NOT NULL,
    instance TEXT NOT NULL,
    heartbeat_at INTEGER NOT NULL,
    started_at INTEGER NOT NULL
);

-- terminal is 0 or 1.
CREATE TABLE nomos_status_classes (
    revision TEXT NOT NULL,
    status TEXT NOT NULL,
    terminal INTEGER NOT NULL CHECK (terminal IN (0, 1)),
    outcome TEXT NULL CHECK (outcome IN ('completed', 'failed', 'cancelled')),
    classified_at INTEGER NOT NULL,
    PRIMARY KEY (revision, status),
    CHECK (terminal = (outcome IS NOT NULL))
);

-- Per-link data beside the seed's table (see the PostgreSQL script): the
-- W3C trace context a continuation carries back, and later a protocol's own
-- task source and id.
CREATE TABLE nomos_link_data (
    execution_id TEXT PRIMARY KEY NOT NULL,
    traceparent TEXT,
    tracestate TEXT,
    trace_source TEXT CHECK (trace_source IN ('tool_result', 'status_report')),
    updated_at INTEGER NOT NULL,
    CHECK ((traceparent IS NULL) = (trace_source IS NULL)),
    CHECK (tracestate IS NULL OR traceparent IS NOT NULL)
);

-- One row per session, kept by triggers. Row triggers: SQLite has no
-- statement triggers; INSERT OR IGNORE leaves a listed session alone.
CREATE TABLE nomos_sessions (
    session_id TEXT PRIMARY KEY,
    first_seen_at INTEGER NOT NULL
);

CREATE INDEX idx_nomos_sessions_newest
    ON nomos_sessions (first_seen_at, session_id);

CREATE TRIGGER nomos_sessions_from_windows
AFTER INSERT ON nomos_assent_windows
BEGIN
    INSERT OR IGNORE INTO nomos_sessions (session_id, first_seen_at)
    VALUES (NEW.session_id, NEW.opened_at);
END;

-- The seed's table: how each link was settled ('continued', 'dropped',
-- 'failed') and why, the continuation it was folded into (NULL = not yet
-- planned), and the status it was parked at (NULL = not parked). Rows
-- settled before this migration keep outcome NULL and read as 'continued' by
-- rule (no backfill). SQLite checks outcome's column constraint as it adds
-- it, and cannot add the table-level settled check without rebuilding the
-- table; the store writes continued_at and outcome together on both backends.
ALTER TABLE nomos_plan_executions ADD COLUMN delivery_id TEXT;
ALTER TABLE nomos_plan_executions ADD COLUMN outcome TEXT
    CHECK (outcome IS NULL OR outcome IN ('continued', 'dropped', 'failed'));
ALTER TABLE nomos_plan_executions ADD COLUMN reason TEXT;
ALTER TABLE nomos_plan_executions ADD COLUMN parked TEXT;

CREATE TRIGGER nomos_sessions_from_links
AFTER INSERT ON nomos_plan_executions
BEGIN
    INSERT OR IGNORE INTO nomos_sessions (session_id, first_seen_at)
    VALUES (NEW.session_id, NEW.created_at);
END;
