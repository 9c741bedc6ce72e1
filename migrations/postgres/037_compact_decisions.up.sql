-- 037_compact_decisions: the decision log kept compactly (issue 47: it cost
-- about 1.5 KB a decision, a copy of the whole input and answer per row).
--
-- A row written from here on keeps `input`, `output` and `revision` empty
-- and instead:
-- * every field of the input but the result text, in columns of their own
--   (`seen_now` only where the input's `now` differs from `decided_at`;
--   `in_window`, `attempts` only when not 0; `result_cut` the byte limit
--   the result was cut to, only when it was cut). The result text is read
--   back from the execution, where it already lives and, terminal being
--   final, does not change;
-- * `input_hash`: the first 16 bytes of the SHA-256 of the input's JSON as
--   the policy saw it. What rebuilds the input (replay, capture, the
--   console) checks it, so an input rebuilt from rows that changed or were
--   purged since is refused, never replayed as if recorded;
-- * `answer` (wait, continue, drop or error), only where `action` does not
--   imply it (a retry's re-decision), and `answer_hash`, the same hash of
--   the answer line. The note is what the recorded revision, a
--   deterministic policy, answers again on the same input;
-- * `revision_id`, a key into nomos_decision_revisions instead of the
--   64-character hash.
-- Rows written before keep their texts and are read as they are, until the
-- retention (`serve --decision-log-days`) purges them.
--
-- The B-trees on decided_at and (session_id, id) go: the purge walks the
-- primary key, oldest ids first (ids follow the time within seconds),
-- `replay --since` uses 038's BRIN index, and what reads by session uses
-- 036's B-tree on the session alone. Adding columns without defaults and
-- dropping indexes change the catalog only.
CREATE TABLE nomos_decision_revisions (
    id SERIAL PRIMARY KEY,
    hash TEXT NOT NULL UNIQUE CHECK (hash <> '')
);

ALTER TABLE nomos_policy_decisions
    ADD COLUMN finished_at TIMESTAMPTZ,
    ADD COLUMN window_opened_at TIMESTAMPTZ,
    ADD COLUMN window_expires_at TIMESTAMPTZ,
    ADD COLUMN seen_now TIMESTAMPTZ,
    ADD COLUMN revision_id INTEGER,
    ADD COLUMN in_window INTEGER,
    ADD COLUMN attempts INTEGER,
    ADD COLUMN result_cut INTEGER,
    ADD COLUMN status TEXT,
    ADD COLUMN window_route TEXT,
    ADD COLUMN task_source TEXT,
    ADD COLUMN task_id TEXT,
    ADD COLUMN still_running BYTEA,
    ADD COLUMN input_hash BYTEA,
    ADD COLUMN answer TEXT,
    ADD COLUMN answer_hash BYTEA;

DROP INDEX IF EXISTS idx_nomos_policy_decisions_time;
DROP INDEX IF EXISTS idx_nomos_policy_decisions_session;
