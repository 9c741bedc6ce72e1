-- 035_link_horizon: the link horizon, one row. The retention of settled
-- links (`--link-retention`, host/src/store/retention.rs) deletes a link
-- only once its execution finished before the horizon recorded here, and
-- moves the horizon only forward; every link, by any replica whatever its
-- own flags, is refused for an execution that finished before it
-- (`Store::link`). So a link once purged is never made again, and the
-- execution never continued a second time. No row: no link was ever purged.
CREATE TABLE nomos_link_horizon (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    before_at TIMESTAMPTZ NOT NULL
);
