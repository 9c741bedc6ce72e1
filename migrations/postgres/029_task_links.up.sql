-- 029_task_links: the task a link stands for, when a tool result named a
-- protocol's task (MCP Tasks, A2A) rather than an execution id. Such a task
-- is linked under a name-based UUID over its source and id (minted by the
-- host), so the seed's table keeps its UUID column; the original id and its
-- source are kept here, in nomos-continue's side table, for the API, the
-- console and the protocol receivers. Both are set together or neither.
-- nomos_link_data is nomos-continue's own table: adding nullable columns to
-- it takes a brief lock on no table of the runtime's.
ALTER TABLE nomos_link_data
    ADD COLUMN task_source TEXT CHECK (task_source IN ('mcp', 'a2a')),
    ADD COLUMN task_id TEXT CHECK (length(task_id) BETWEEN 1 AND 1024),
    ADD CONSTRAINT nomos_link_data_task_check CHECK ((task_source IS NULL) = (task_id IS NULL));
