-- Reverses 030: push configurations, gathered artifacts and protocol states
-- are forgotten; the tasks (029) are kept.
ALTER TABLE nomos_link_data
    DROP CONSTRAINT IF EXISTS nomos_link_data_agent_check,
    DROP CONSTRAINT IF EXISTS nomos_link_data_push_check,
    DROP COLUMN IF EXISTS result_wait_message,
    DROP COLUMN IF EXISTS result_wait,
    DROP COLUMN IF EXISTS protocol_heard_at,
    DROP COLUMN IF EXISTS protocol_state,
    DROP COLUMN IF EXISTS artifacts,
    DROP COLUMN IF EXISTS agent_version,
    DROP COLUMN IF EXISTS agent_url,
    DROP COLUMN IF EXISTS push_expires_at,
    DROP COLUMN IF EXISTS push_token_sha256;
