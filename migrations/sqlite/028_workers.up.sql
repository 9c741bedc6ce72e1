-- 028_workers (SQLite mirror): one live process per worker id.
CREATE TABLE nomos_workers (
    worker_id TEXT PRIMARY KEY NOT NULL,
    instance TEXT NOT NULL,
    heartbeat_at INTEGER NOT NULL,
    started_at INTEGER NOT NULL
);
