-- 029_status_classes (SQLite mirror): how each policy revision classified
-- each status. terminal is 0 or 1.
CREATE TABLE nomos_status_classes (
    revision TEXT NOT NULL,
    status TEXT NOT NULL,
    terminal INTEGER NOT NULL CHECK (terminal IN (0, 1)),
    outcome TEXT NULL CHECK (outcome IN ('completed', 'failed', 'cancelled')),
    classified_at INTEGER NOT NULL,
    PRIMARY KEY (revision, status),
    CHECK (terminal = (outcome IS NOT NULL))
);
