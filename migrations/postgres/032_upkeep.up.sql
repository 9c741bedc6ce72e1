-- 032_upkeep: room on each page for heap-only (HOT) updates, and vacuum on
-- fixed thresholds, for the tables updated on every continuation.
--
-- A HOT update writes no index entry and its old version is pruned from the
-- page without a vacuum, but only when the page has room for the new
-- version and the update changes no indexed column (nor one an index's
-- predicate reads). Tables filled by inserts leave their pages full
-- (fillfactor 100), so every update moved its row to another page and wrote
-- an entry into every index. With these settings:
--
-- - nomos_deliveries: a claim and a lease renewal change only lease columns
--   (none indexed), so they can stay on the page; the completion changes
--   `state`, which the partial indexes read, and cannot.
-- - nomos_assent_windows: one row per session, its `continuations` counted
--   up at every plan; only the primary key indexes it.
-- - nomos_workers: one row per replica, its heartbeat written every few
--   seconds.
-- - executions, when nomos-continue created it (a runtime's own table or
--   view is left as it is): a status report updates a row indexed only by
--   its primary key.
--
-- fillfactor applies to pages filled from now on; the rows already written
-- gain the room as vacuum frees their pages. Each ALTER TABLE ... SET takes
-- SHARE UPDATE EXCLUSIVE, which reads and writes do not wait for, so the
-- timeout can be long: it must outlast deadlock_timeout (1 s), after which
-- PostgreSQL cancels an autovacuum that blocks the ALTER, and it bounds the
-- wait behind a manual VACUUM or an index build. Operators may override any
-- of these with their own ALTER TABLE ... SET.
SET LOCAL lock_timeout = '5s';

ALTER TABLE nomos_deliveries SET (fillfactor = 80);

ALTER TABLE nomos_assent_windows SET (
    fillfactor = 50,
    autovacuum_vacuum_scale_factor = 0.0,
    autovacuum_vacuum_threshold = 2000,
    autovacuum_analyze_scale_factor = 0.0,
    autovacuum_analyze_threshold = 2000
);

ALTER TABLE nomos_workers SET (fillfactor = 50);

DO $$
BEGIN
    IF obj_description(to_regclass('executions'), 'pg_class')
        LIKE 'nomos-continue: standalone executions table%' THEN
        ALTER TABLE executions SET (
            fillfactor = 80,
            autovacuum_vacuum_scale_factor = 0.0,
            autovacuum_vacuum_threshold = 5000,
            autovacuum_vacuum_insert_scale_factor = 0.0,
            autovacuum_vacuum_insert_threshold = 5000,
            autovacuum_analyze_scale_factor = 0.0,
            autovacuum_analyze_threshold = 5000
        );
    END IF;
END
$$;
