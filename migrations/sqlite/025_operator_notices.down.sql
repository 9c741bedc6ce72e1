DROP TRIGGER IF EXISTS nomos_deliveries_operator_notice;
DROP TABLE IF EXISTS nomos_operator_notices;
