-- 021_executions: a standalone execution table for deployments that have none.
--
-- The worker reads (id, status, result, updated_at, finished_at) from a
-- relation named `executions`. An agent runtime that already has its own
-- execution table keeps it: this migration then does nothing, and the runtime
-- exposes a view named `executions` with these columns instead. The table is
-- created only where no relation of that name exists, and is marked with a
-- comment so that the down migration drops only a table it created.
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
