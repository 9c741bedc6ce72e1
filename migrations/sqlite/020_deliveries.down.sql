-- Reverses 020.
DROP TABLE IF EXISTS nomos_deliveries;
