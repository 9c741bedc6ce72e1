-- Reverses 027.
DROP TABLE IF EXISTS nomos_late_reports;
