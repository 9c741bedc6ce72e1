ALTER TABLE nomos_deliveries DROP COLUMN claims;
