-- 029_task_links (SQLite mirror): the protocol task a link stands for (see
-- the PostgreSQL 029). SQLite cannot add a table constraint to an existing
-- table, so the rule that both columns are set together is kept by the
-- store's one writer (`Store::keep_tasks`).
ALTER TABLE nomos_link_data ADD COLUMN task_source TEXT CHECK (task_source IN ('mcp', 'a2a'));
ALTER TABLE nomos_link_data ADD COLUMN task_id TEXT CHECK (length(task_id) BETWEEN 1 AND 1024);
