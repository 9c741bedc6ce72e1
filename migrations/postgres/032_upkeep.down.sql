-- Reverses 032: the storage parameters back to the server's defaults (the
-- tables' rows are left where they are).
SET LOCAL lock_timeout = '5s';

ALTER TABLE nomos_deliveries RESET (fillfactor);

ALTER TABLE nomos_assent_windows RESET (
    fillfactor,
    autovacuum_vacuum_scale_factor,
    autovacuum_vacuum_threshold,
    autovacuum_analyze_scale_factor,
    autovacuum_analyze_threshold
);

ALTER TABLE nomos_workers RESET (fillfactor);

DO $$
BEGIN
    IF obj_description(to_regclass('executions'), 'pg_class')
        LIKE 'nomos-continue: standalone executions table%' THEN
        ALTER TABLE executions RESET (
            fillfactor,
            autovacuum_vacuum_scale_factor,
            autovacuum_vacuum_threshold,
            autovacuum_vacuum_insert_scale_factor,
            autovacuum_vacuum_insert_threshold,
            autovacuum_analyze_scale_factor,
            autovacuum_analyze_threshold
        );
    END IF;
END
$$;
