DROP TABLE IF EXISTS nomos_link_horizon;
