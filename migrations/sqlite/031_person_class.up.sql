-- 031_person_class (SQLite mirror): what a paused status waits for from a
-- person (see the PostgreSQL 031). SQLite cannot add a table constraint to an
-- existing table, so the column's own check also refuses a person on a
-- terminal class (a column check may name other columns of the row).
ALTER TABLE nomos_status_classes ADD COLUMN person TEXT NULL
    CHECK (person IS NULL OR (person IN ('input', 'authorization') AND terminal = 0));
