-- 018_schema: every table nomos-continue owns, in its final form, and what
-- the seed's link table (017, nomos_plan_executions) gains.
--
-- The pre-release migrations 018-044 are squashed into this one and the six
-- after it (019-024); a database that applied any of them is refused by
-- `nomos-continue migrate` and must be recreated (docs/operations.md,
-- "Migrations"). Until 0.1.0 is tagged, later work may fold its tables into
-- these files; from the tag on they are never edited, and changes come as new
-- migrations.
--
-- The seed's table is written by the runtime while this runs, so this
-- migration changes only its catalog (see docs/operations.md, "Deploying
-- onto a live database"): nullable columns without a default, CHECK
-- constraints NOT VALID (023 validates them), reloptions and a trigger. Its
-- indexes are built CONCURRENTLY by 019-022, its history's sessions listed
-- by 024. Data per link added later (trace context, a protocol's own task
-- id, ...) goes into a nomos-owned side table keyed by execution_id, never
-- into new columns of the seed's table.
--
-- The ALTER TABLE and CREATE TRIGGER on the seed's table take ACCESS
-- EXCLUSIVE and SHARE ROW EXCLUSIVE on it until this transaction commits, so
-- they come last, after the new (empty) tables. While this transaction
-- *waits* for those locks (behind a long transaction on the table), every
-- insert queues behind it; the timeout bounds that wait, and
-- `nomos-continue migrate` retries the migration a bounded number of times
-- (SQLSTATE 55P03).
SET LOCAL lock_timeout = '500ms';

-- One assent window per chat session. Approving a step by any route (button,
-- chat assent, API) opens the window, or extends it while it is still open;
-- denying closes it. The worker only re-invokes the agent while
-- opened_at <= now < expires_at and closed_at IS NULL. The 30-minute ceiling
-- is enforced by the store (Store::approve refuses a duration over 30
-- minutes): a CHECK (expires_at <= opened_at + 30 min) cannot express
-- "extended by a later approval". continuations counts the re-invocations
-- planned inside the current window (the loop guard); a new window starts it
-- again at 0.
CREATE TABLE nomos_assent_windows (
    session_id UUID PRIMARY KEY,
    opened_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    route TEXT NOT NULL CHECK (route IN ('button', 'chat', 'api')),
    continuations INTEGER NOT NULL DEFAULT 0 CHECK (continuations >= 0),
    closed_at TIMESTAMPTZ,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- The ledger of re-invocations (kind 'continuation') and of notices about
-- dropped results (kind 'notice').
--
-- A row is written 'pending' in the same transaction that plans it, claimed
-- by a worker with a lease (lease_owner, lease_expires_at), and moved to
-- 'delivered' or, after the retry budget, 'failed' by a compare-and-set on
-- the lease holder; 'dropped' is a continuation whose assent window closed
-- (deny or expiry) while it was waiting or between retries, never sent (one
-- notice says so). idempotency_key is sent with every attempt, so a
-- redelivery after a crash is recognisable by the agent runtime.
--
-- attempts counts agent calls that returned a failure. claims counts claims:
-- a worker that dies during the call (a crash, an OOM kill, a poison input)
-- records nothing, and the rescue of its expired lease is not a failed
-- attempt, so without it such a delivery would be redelivered forever; the
-- worker gives up on a delivery claimed too many times, with a visible
-- failed state.
--
-- claim_token: a fresh value at every claim. Renewing a lease, recording an
-- accepted call and recording a failed one are compare-and-sets on it, so a
-- worker whose lease was taken over can never settle the row, and two
-- processes that were (wrongly) given the same worker id cannot settle each
-- other's claims. claimed_at: when the current claim was taken (renewals
-- leave it), what the window was checked against. first_failed_at: when the
-- first failed call was recorded; the retry budget is wall time measured
-- from it (a runtime that restarts for a few minutes delays delivery, it
-- does not fail it). shortages: failed calls that were a shortage on the
-- agent's side (down, timed out, or asked to come back later); they count
-- towards the wall-time budget but not towards the attempts the policy is
-- shown, so a policy's "give up after N failures" is about answers, not
-- outages.
CREATE TABLE nomos_deliveries (
    id UUID PRIMARY KEY,
    session_id UUID NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('continuation', 'notice')),
    idempotency_key TEXT NOT NULL,
    execution_ids UUID[] NOT NULL DEFAULT '{}',
    note TEXT NOT NULL,
    policy_revision TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'delivered', 'failed', 'dropped')),
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at TIMESTAMPTZ NOT NULL,
    lease_owner TEXT,
    lease_expires_at TIMESTAMPTZ,
    last_error TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    delivered_at TIMESTAMPTZ,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    claims INTEGER NOT NULL DEFAULT 0,
    claim_token UUID,
    claimed_at TIMESTAMPTZ,
    first_failed_at TIMESTAMPTZ,
    shortages INTEGER NOT NULL DEFAULT 0 CHECK (shortages >= 0),
    CONSTRAINT nomos_deliveries_idempotency_key UNIQUE (idempotency_key),
    CONSTRAINT nomos_deliveries_lease_check CHECK ((lease_owner IS NULL) = (lease_expires_at IS NULL)),
    CONSTRAINT nomos_deliveries_delivered_check CHECK ((state = 'delivered') = (delivered_at IS NOT NULL))
);

-- At most one continuation in flight per session: several executions
-- finishing together fold into one note instead of racing each other into
-- the agent.
CREATE UNIQUE INDEX nomos_deliveries_one_in_flight
    ON nomos_deliveries (session_id)
    WHERE state = 'pending' AND kind = 'continuation';

-- Ledger per session, newest first.
CREATE INDEX idx_nomos_deliveries_session
    ON nomos_deliveries (session_id, created_at);

-- A claim (Store::claim_deliveries) takes the oldest due deliveries in
-- (next_attempt_at, created_at, id) order, notices and continuations in two
-- ordered reads (a notice needs no open window): led by the kind, each read
-- follows the claim's order and stops after LIMIT rows, and ten thousand
-- pending continuations cost the notices' read nothing. (SQLite's claim is
-- one ordered read over both kinds, so its index has no kind column.)
CREATE INDEX idx_nomos_deliveries_due
    ON nomos_deliveries (kind, next_attempt_at, created_at, id) WHERE state = 'pending';

-- Every row is updated several times (claim, complete/fail); vacuum it on a
-- fixed threshold for the same reason as the link table (below).
ALTER TABLE nomos_deliveries SET (
    autovacuum_vacuum_scale_factor = 0.0,
    autovacuum_vacuum_threshold = 5000,
    autovacuum_analyze_scale_factor = 0.0,
    autovacuum_analyze_threshold = 5000
);

-- A standalone execution table for deployments that have none. The worker
-- reads (id, status, result, updated_at, finished_at) from a relation named
-- `executions`. An agent runtime that already has its own execution table
-- keeps it: this block then does nothing, and the runtime exposes a view
-- named `executions` with these columns instead. The table is marked with a
-- comment so that the down migration drops only a table it created (the
-- marker's wording predates the squash and is kept, so that the schema is
-- the same as the pre-release migrations left it).
DO $$
BEGIN
    IF to_regclass('executions') IS NULL THEN
        CREATE TABLE executions (
            id UUID PRIMARY KEY,
            status TEXT NOT NULL,
            result TEXT NOT NULL DEFAULT '',
            updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            finished_at TIMESTAMPTZ
        );
        COMMENT ON TABLE executions IS 'nomos-continue: standalone executions table (migration 021)';
    END IF;
END
$$;

-- The history the built-in chatWith adapter replays. Only real turns are
-- stored: the operator's messages and the agent's replies. The continuation
-- note is injected after the replayed history and never stored as a user
-- turn. id orders the turns of a session.
--
-- A continuation can be delivered twice with the same idempotency key (a
-- crash between the model's reply and the worker's commit). The key is
-- stored with the assistant's reply, and the unique index makes a second
-- append with the same key a no-op, so the history never holds two replies
-- to one continuation. Turns the operator records have no key (NULL), which
-- the partial index leaves alone.
CREATE TABLE nomos_chat_turns (
    id BIGSERIAL PRIMARY KEY,
    session_id UUID NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
    content TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    idempotency_key TEXT
);

CREATE INDEX idx_nomos_chat_turns_session ON nomos_chat_turns (session_id, id);

CREATE UNIQUE INDEX idx_nomos_chat_turns_key
    ON nomos_chat_turns (session_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- Notices for the operator (results dropped because the window closed, the
-- loop cap) are kept apart from the turns: they are neither the operator's
-- words nor the agent's, and a table the replay never reads cannot leak them
-- into the model's context. Idempotent per (session, key) like the replies.
-- GET /v1/sessions/{id} pages a session's notices in id order.
CREATE TABLE nomos_notices (
    id BIGSERIAL PRIMARY KEY,
    session_id UUID NOT NULL,
    idempotency_key TEXT NOT NULL,
    message TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
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
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (scope, idempotency_key)
);

CREATE INDEX idx_nomos_idempotency_keys_created ON nomos_idempotency_keys (created_at);

-- Continuation policy revisions and the active one.
--
-- A revision is identified by the SHA-256 (lowercase hex) of its WebAssembly
-- component, so the same bytes are stored once and every decision can record
-- the exact revision that made it. Every replica polls nomos_policy_active
-- and converges on the same policy. The single-row table (id = 1) makes "the
-- active policy" one atomic value; the FK makes activating an unknown
-- revision impossible.
--
-- With `serve --policy-verify-key`, a revision runs only with a valid
-- Ed25519 signature (see host/src/signing.rs and docs/operations.md, "Signed
-- revisions"). The signature is kept with the revision because a revision
-- reaches a replica through this table too: the database watcher and a
-- rollback verify the row's signature before activating it. signature holds
-- the signature line exactly as uploaded (the `.sig` file's contents); key_id
-- the id of the key it names, for listings and audits. Both NULL for a
-- revision stored unsigned (the built-in policy, or one stored by a replica
-- without a verify key).
CREATE TABLE nomos_policy_revisions (
    hash TEXT PRIMARY KEY CHECK (hash ~ '^[0-9a-f]{64}$'),
    wasm BYTEA NOT NULL,
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    key_id TEXT,
    signature TEXT
);

CREATE TABLE nomos_policy_active (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    hash TEXT NOT NULL REFERENCES nomos_policy_revisions (hash),
    activated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Every activation of a policy revision, in order. nomos_policy_active holds
-- only what runs now; rolling back "to the previous revision" needs to know
-- what ran before it. One row per activation (an upload, a changed policy
-- file, a rollback), appended in the same transaction that changes the
-- active row.
CREATE TABLE nomos_policy_activations (
    id BIGSERIAL PRIMARY KEY,
    hash TEXT NOT NULL REFERENCES nomos_policy_revisions (hash),
    activated_at TIMESTAMPTZ NOT NULL
);

-- A candidate revision run in shadow. Shared by every replica like the
-- active revision: each one polls nomos_policy_shadow and converges on it. A
-- table of its own, not a column of nomos_policy_active, because a shadow
-- may be set while no revision was ever activated in the database (the
-- built-in policy runs). Its bytes live in nomos_policy_revisions like any
-- revision.
CREATE TABLE nomos_policy_shadow (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    hash TEXT NOT NULL REFERENCES nomos_policy_revisions (hash),
    set_at TIMESTAMPTZ NOT NULL
);

-- One row per decision the shadow took differently from the active revision
-- on the same input. Inputs and outputs are the golden-file JSON, so a row
-- can be read, replayed or turned into a golden case as it is. No foreign
-- keys: a disagreement outlives the shadow it came from (it is the evidence
-- for or against promoting it). GET /v1/policy counts the current shadow's
-- disagreements.
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

CREATE INDEX nomos_policy_disagreements_shadow
    ON nomos_policy_disagreements (shadow_revision);

-- Every decision the host took through the policy. `policy replay` decides
-- these inputs again, and `policy capture` turns one into a golden case.
-- `input` is the decision input exactly as the policy saw it (results
-- already cut to the host's limit), in the golden-file JSON; `output` the
-- answer line, or {"error": ...} when the policy failed on it. `action` is
-- what the host then did: continued (under `idempotency_key`), dropped,
-- refused (a host guard, named in `detail`), waited, deferred or failed.
-- Rows are purged by age (`serve --decision-log-days`), oldest ids first, so
-- the time index also serves `replay --since`.
CREATE TABLE nomos_policy_decisions (
    id BIGSERIAL PRIMARY KEY,
    decided_at TIMESTAMPTZ NOT NULL,
    session_id UUID NOT NULL,
    execution_id UUID NOT NULL,
    revision TEXT NOT NULL,
    input TEXT NOT NULL,
    output TEXT NOT NULL,
    action TEXT NOT NULL,
    idempotency_key TEXT,
    detail TEXT
);

CREATE INDEX idx_nomos_policy_decisions_time ON nomos_policy_decisions (decided_at);
CREATE INDEX idx_nomos_policy_decisions_session ON nomos_policy_decisions (session_id, id);

-- Reports that arrive after an execution has finished. Terminal is final:
-- the first report the policy classifies as terminal sets
-- executions.finished_at, and from then on a report for that execution,
-- terminal or not, is not applied (a late "running" would make it unfinished
-- again, and it would never be continued nor announced). Such a report is
-- kept here instead, for the operator and for the record of what the runtime
-- said, written in the same transaction that declined to apply it.
CREATE TABLE nomos_late_reports (
    id BIGSERIAL PRIMARY KEY,
    execution_id UUID NOT NULL,
    status TEXT NOT NULL,
    result TEXT NOT NULL,
    reported_at TIMESTAMPTZ NOT NULL
);

-- An execution's late reports, in arrival order.
CREATE INDEX idx_nomos_late_reports_execution ON nomos_late_reports (execution_id, id);

-- One live process per worker id. Leases name their holder by worker id, so
-- two processes started with the same --worker-id would renew, mark and
-- release each other's leases as their own. Each process registers its id
-- with a random instance id at start-up and keeps heartbeat_at fresh; a
-- second process that finds a live row of another instance refuses to
-- start. A row whose heartbeat is older than the staleness limit belongs to
-- a process that died without unregistering, and is taken over.
CREATE TABLE nomos_workers (
    worker_id TEXT PRIMARY KEY,
    instance UUID NOT NULL,
    heartbeat_at TIMESTAMPTZ NOT NULL,
    started_at TIMESTAMPTZ NOT NULL
);

-- How each policy revision classified each status. A revision is a pure
-- function of its bytes, so its answer for a status never changes: it is
-- stored once, keyed by the revision's hash, and read back. A swap to
-- another revision reads under the new hash, so the old revision's answers
-- are never used for it. Only answers are stored: a policy failure or a
-- shortage is asked again.
CREATE TABLE nomos_status_classes (
    revision TEXT NOT NULL,
    status TEXT NOT NULL,
    terminal BOOLEAN NOT NULL,
    outcome TEXT NULL CHECK (outcome IN ('completed', 'failed', 'cancelled')),
    classified_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (revision, status),
    CHECK (terminal = (outcome IS NOT NULL))
);

-- Data nomos-continue keeps per link, beside the seed's table rather than in
-- new columns of it (each column added there is another ACCESS EXCLUSIVE lock
-- on the runtime's live table). One row per execution id, written only when
-- there is something to keep; each concern owns its nullable columns and
-- writes only those, so a later one (a protocol's task source and id, for MCP
-- Tasks or A2A) is one more group of columns and its own upsert. No FK, like
-- 017: a runtime may report an execution before its tool result is linked.
--
-- traceparent/tracestate: the W3C Trace Context that the continuation carries
-- back to the runtime, so the agent's next turn joins the trace of the tool
-- call that started the work. trace_source says which write set it: a tool
-- result's (the context of its `link` span) is written over whatever was
-- there; a status report's only fills an empty one.
CREATE TABLE nomos_link_data (
    execution_id UUID PRIMARY KEY,
    traceparent TEXT,
    tracestate TEXT,
    trace_source TEXT CHECK (trace_source IN ('tool_result', 'status_report')),
    updated_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT nomos_link_data_trace_check CHECK (
        (traceparent IS NULL) = (trace_source IS NULL)
        AND (tracestate IS NULL OR traceparent IS NOT NULL))
);

-- One row per session, for the console's list of sessions, newest first. A
-- session has no row of its own elsewhere: it is a session id on links,
-- windows, deliveries and notices, and listing sessions a page at a time
-- from those (a DISTINCT over every link) would read the whole link table.
--
-- Triggers keep it, not the store's Rust: the runtime beside this process
-- may insert links into the seed's table itself, and a trigger sees those
-- inserts as well as the store's. The triggers run once per statement over its transition table (a
-- bulk insert of links costs one upsert per session, not per row), and copy
-- the time from the row, which the writer stamped (no database clock).
-- ON CONFLICT DO NOTHING takes no lock on a session already listed, so a
-- session's later links never wait on one another here. New sessions are
-- inserted in id order, so two statements that both bring several new
-- sessions cannot deadlock. The history's sessions are listed by 024.
CREATE TABLE nomos_sessions (
    session_id UUID PRIMARY KEY,
    first_seen_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX idx_nomos_sessions_newest
    ON nomos_sessions (first_seen_at, session_id);

CREATE FUNCTION nomos_sessions_from_links() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO nomos_sessions (session_id, first_seen_at)
    SELECT session_id, MIN(created_at) FROM nomos_new_links
    GROUP BY session_id ORDER BY session_id
    ON CONFLICT (session_id) DO NOTHING;
    RETURN NULL;
END
$$;

CREATE FUNCTION nomos_sessions_from_windows() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO nomos_sessions (session_id, first_seen_at)
    SELECT session_id, MIN(opened_at) FROM nomos_new_windows
    GROUP BY session_id ORDER BY session_id
    ON CONFLICT (session_id) DO NOTHING;
    RETURN NULL;
END
$$;

CREATE TRIGGER nomos_sessions_from_windows
    AFTER INSERT ON nomos_assent_windows
    REFERENCING NEW TABLE AS nomos_new_windows
    FOR EACH STATEMENT EXECUTE FUNCTION nomos_sessions_from_windows();

-- The seed's table, last (see the top of this file).
--
-- continued_at (from 017) is set when a link is *settled*: its result was
-- fed back to the agent ('continued'), it was dropped by the policy or the
-- host guards ('dropped', e.g. no open assent window, loop cap), or its
-- delivery gave up after the retry budget ('failed'). outcome says which;
-- reason says why for 'dropped' and 'failed'. Setting continued_at on every
-- settlement is what moves the row out of the seed's partial index, so the
-- pending query stays cheap however much history accumulates.
--
-- Rows settled before this migration (by the original worker) have
-- continued_at set and outcome NULL. They are not rewritten (an UPDATE of
-- millions of history rows would lock them and double the table's size in
-- dead tuples): they are 'continued' by rule, and every store query that
-- reads outcome says so (COALESCE(outcome, 'continued') on settled rows).
--
-- delivery_id is the continuation (nomos_deliveries.id) this link has been
-- folded into; NULL = not yet planned. A planned link is still unsettled
-- until its delivery completes or gives up. No FK, like 017: the link table
-- must accept rows regardless of what else exists.
--
-- parked holds the status an unsettled link's execution had when the worker
-- found it running (or unclassifiable) under the active policy revision;
-- NULL = not parked. The worker's frequent pass reads only unparked links
-- (022's index: exactly that predicate, in poll order), so executions that
-- stay running are not read on every pass, however many there are.
-- Recording a status (Store::upsert_execution_status) unparks its link in
-- the same transaction, and the worker's periodic sweep reads parked links
-- too, so a status written behind the store's back (a runtime's own
-- `executions` relation), a park that raced a report, or a policy swap that
-- changes which statuses are terminal is seen within one poll interval.
ALTER TABLE nomos_plan_executions
    ADD COLUMN IF NOT EXISTS delivery_id UUID,
    ADD COLUMN IF NOT EXISTS outcome TEXT,
    ADD COLUMN IF NOT EXISTS reason TEXT,
    ADD COLUMN IF NOT EXISTS parked TEXT;

-- NOT VALID: checked for every row written from now on, without scanning the
-- history under this lock; 023 validates the existing rows under a lock that
-- does not block writes. A settled row may lack an outcome (the legacy rule
-- above); an outcome always means settled.
ALTER TABLE nomos_plan_executions
    ADD CONSTRAINT nomos_plan_exec_outcome_check
        CHECK (outcome IS NULL OR outcome IN ('continued', 'dropped', 'failed')) NOT VALID,
    ADD CONSTRAINT nomos_plan_exec_settled_check
        CHECK (outcome IS NULL OR continued_at IS NOT NULL) NOT VALID;

-- Every link is inserted once and updated once or twice (planned, settled),
-- so dead tuples accumulate at the rate links are created. The default
-- autovacuum_vacuum_scale_factor (0.2) lets a 10M-row table collect 2M dead
-- tuples before a vacuum; the partial indexes then carry dead entries that
-- every poll has to step over. A fixed threshold keeps vacuum frequent and
-- cheap. See BENCHMARKS.md ("Claim query vs history size"). Operators may
-- override these with their own ALTER TABLE ... SET.
ALTER TABLE nomos_plan_executions SET (
    autovacuum_vacuum_scale_factor = 0.0,
    autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_insert_scale_factor = 0.0,
    autovacuum_vacuum_insert_threshold = 5000,
    autovacuum_analyze_scale_factor = 0.0,
    autovacuum_analyze_threshold = 5000
);

CREATE TRIGGER nomos_sessions_from_links
    AFTER INSERT ON nomos_plan_executions
    REFERENCING NEW TABLE AS nomos_new_links
    FOR EACH STATEMENT EXECUTE FUNCTION nomos_sessions_from_links();
