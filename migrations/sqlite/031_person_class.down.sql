-- Reverses 031 (SQLite mirror).
DELETE FROM nomos_status_classes WHERE person IS NOT NULL;
ALTER TABLE nomos_status_classes DROP COLUMN person;
