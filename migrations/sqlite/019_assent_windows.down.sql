-- Reverses 019.
DROP TABLE IF EXISTS nomos_assent_windows;
