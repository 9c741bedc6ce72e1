-- Reverses 029: the links keep their execution ids; the task ids they stood
-- for are forgotten.
ALTER TABLE nomos_link_data
    DROP CONSTRAINT IF EXISTS nomos_link_data_task_check,
    DROP COLUMN IF EXISTS task_id,
    DROP COLUMN IF EXISTS task_source;
