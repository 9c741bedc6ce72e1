-- Reverses 021. The SQLite file is the embedded default and owned by
-- nomos-continue alone, so the table is dropped unconditionally here (the
-- PostgreSQL down migration checks that it created the table).
DROP TABLE IF EXISTS executions;
