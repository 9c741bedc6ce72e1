-- Reverses 028.
DROP TABLE IF EXISTS nomos_workers;
