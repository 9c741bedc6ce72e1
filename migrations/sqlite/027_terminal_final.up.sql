-- 027_terminal_final (SQLite mirror): reports that arrive after an
-- execution has finished, kept for the record and never applied (see the
-- PostgreSQL migration for why).
CREATE TABLE nomos_late_reports (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    execution_id TEXT NOT NULL,
    status TEXT NOT NULL,
    result TEXT NOT NULL,
    reported_at INTEGER NOT NULL
);

CREATE INDEX idx_nomos_late_reports_execution ON nomos_late_reports (execution_id, id);
