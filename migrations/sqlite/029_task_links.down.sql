-- Reverses 029 (SQLite mirror).
ALTER TABLE nomos_link_data DROP COLUMN task_id;
ALTER TABLE nomos_link_data DROP COLUMN task_source;
