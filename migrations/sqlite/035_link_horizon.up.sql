-- 035_link_horizon (SQLite mirror): the link horizon, one row (see the
-- PostgreSQL 035). Times are microseconds since the Unix epoch.
CREATE TABLE nomos_link_horizon (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    before_at INTEGER NOT NULL
);
