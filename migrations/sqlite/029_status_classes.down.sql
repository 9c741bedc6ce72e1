-- Reverses 029.
DROP TABLE IF EXISTS nomos_status_classes;
