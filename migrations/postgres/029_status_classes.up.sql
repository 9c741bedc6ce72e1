-- 029_status_classes: how each policy revision classified each status.
--
-- A status was classified by the policy on every report, every plan pass and
-- every delivery. A revision is a pure function of its bytes, so its answer
-- for a status never changes: it is stored once, keyed by the revision's hash,
-- and read back. A swap to another revision reads under the new hash, so the
-- old revision's answers are never used for it. Only answers are stored: a
-- policy failure or a shortage is asked again. The worker (and later a
-- set-based plan in SQL) joins on this table to tell what is still running.
CREATE TABLE nomos_status_classes (
    revision TEXT NOT NULL,
    status TEXT NOT NULL,
    terminal BOOLEAN NOT NULL,
    outcome TEXT NULL CHECK (outcome IN ('completed', 'failed', 'cancelled')),
    classified_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (revision, status),
    CHECK (terminal = (outcome IS NOT NULL))
);
