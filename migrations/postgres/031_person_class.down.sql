-- Reverses 031: the person's classes go with the column (a 0.1.0 host would
-- read them as running, which they are not).
DELETE FROM nomos_status_classes WHERE person IS NOT NULL;
ALTER TABLE nomos_status_classes
    DROP CONSTRAINT nomos_status_classes_person_not_terminal,
    DROP COLUMN person;
