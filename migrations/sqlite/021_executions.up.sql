-- 021_executions (SQLite mirror): the standalone execution table.
-- Created only if no table of that name exists; a runtime with its own table
-- can expose a view named `executions` with these columns instead.
CREATE TABLE IF NOT EXISTS executions (
    id TEXT PRIMARY KEY NOT NULL,
    status TEXT NOT NULL,
    result TEXT NOT NULL DEFAULT '',
    updated_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)),
    finished_at INTEGER
);
