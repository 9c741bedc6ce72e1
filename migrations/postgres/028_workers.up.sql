-- 028_workers: one live process per worker id.
--
-- Leases name their holder by worker id, so two processes started with the
-- same --worker-id would renew, mark and release each other's leases as their
-- own. Each process registers its id with a random instance id at start-up
-- and keeps heartbeat_at fresh; a second process that finds a live row of
-- another instance refuses to start. A row whose heartbeat is older than the
-- staleness limit belongs to a process that died without unregistering, and
-- is taken over.
CREATE TABLE nomos_workers (
    worker_id TEXT PRIMARY KEY,
    instance UUID NOT NULL,
    heartbeat_at TIMESTAMPTZ NOT NULL,
    started_at TIMESTAMPTZ NOT NULL
);
