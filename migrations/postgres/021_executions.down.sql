-- Reverses 021: drops `executions` only if migration 021 created it.
DO $$
BEGIN
    IF to_regclass('executions') IS NOT NULL
       AND obj_description(to_regclass('executions'), 'pg_class')
           = 'nomos-continue: standalone executions table (migration 021)' THEN
        DROP TABLE executions;
    END IF;
END
$$;
