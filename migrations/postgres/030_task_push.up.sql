-- 030_task_push: what the protocols' receivers keep per task, beside the
-- task's source and id (029).
-- - push_token_sha256, push_expires_at: the A2A push configuration minted
--   for the task. Only the token's SHA-256 (hex) is kept: a read of this
--   table cannot report a task. Minting again replaces both.
-- - agent_url, agent_version: the remote A2A agent to ask for the task
--   when a push is overdue (GetTask; 0.3 tasks/get), if the runtime named it.
-- - artifacts: the artifacts gathered from the pushes so far (JSON text),
--   for the note's result when the terminal push carries none.
-- - protocol_state, protocol_heard_at: the last state a protocol body
--   carried and when one last arrived, to know a duplicate and an overdue task.
-- - result_wait, result_wait_message: an MCP status whose result has not
--   arrived yet (`completed`, `failed`) and its status message: recorded
--   with the result when it comes (a failed task's result may carry no
--   text, and then the message is the failure's only words).
-- nomos_link_data is nomos-continue's own table: adding nullable columns to
-- it takes a brief lock on no table of the runtime's.
ALTER TABLE nomos_link_data
    ADD COLUMN push_token_sha256 TEXT CHECK (push_token_sha256 ~ '^[0-9a-f]{64}$'),
    ADD COLUMN push_expires_at TIMESTAMPTZ,
    ADD COLUMN agent_url TEXT CHECK (length(agent_url) BETWEEN 1 AND 2048),
    ADD COLUMN agent_version TEXT CHECK (agent_version IN ('1.0', '0.3')),
    ADD COLUMN artifacts TEXT,
    ADD COLUMN protocol_state TEXT CHECK (length(protocol_state) BETWEEN 1 AND 1024),
    ADD COLUMN protocol_heard_at TIMESTAMPTZ,
    ADD COLUMN result_wait TEXT CHECK (length(result_wait) BETWEEN 1 AND 1024),
    ADD COLUMN result_wait_message TEXT,
    ADD CONSTRAINT nomos_link_data_push_check
        CHECK ((push_token_sha256 IS NULL) = (push_expires_at IS NULL)),
    ADD CONSTRAINT nomos_link_data_agent_check
        CHECK ((agent_url IS NULL) = (agent_version IS NULL));
